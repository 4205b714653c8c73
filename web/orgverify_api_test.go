package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"suanli/accounts"
	"suanli/dbtest"
	"suanli/handlers/orgverify"
	"suanli/identity"
	"suanli/models"
	"suanli/models/identitystore"
	"suanli/routenames"
)

// apiOrgVerification is the API's verification, as the tests read it.
type apiOrgVerification struct {
	OrgID         int64  `json:"org_id"`
	Status        string `json:"status"`
	CanSubmit     bool   `json:"can_submit"`
	NoticeVersion string `json:"notice_version"`
	Submission    *struct {
		ID               int64   `json:"id"`
		CreditCodeMasked string  `json:"credit_code_masked"`
		OrgName          string  `json:"org_name"`
		LegalRep         string  `json:"legal_rep"`
		LicenceType      string  `json:"licence_type"`
		ConsentVersion   string  `json:"consent_version"`
		ConsentedAt      *string `json:"consented_at"`
		SubmittedAt      string  `json:"submitted_at"`
		DecidedAt        *string `json:"decided_at"`
		Reason           string  `json:"reason"`
	} `json:"submission"`
}

// orgVerifyBody is a multipart body with the fields and, unless licence
// is nil, the licence file, under a fixed boundary (so that its size
// depends only on what it carries).
func orgVerifyBody(t *testing.T, fields map[string]string, licence []byte) (body []byte, contentType string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if err := w.SetBoundary("orgverify-api-test-boundary"); err != nil {
		t.Fatal(err)
	}
	for k, v := range fields {
		_ = w.WriteField(k, v)
	}
	if licence != nil {
		fw, err := w.CreateFormFile("licence", "licence.png")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(licence)
	}
	_ = w.Close()
	return b.Bytes(), w.FormDataContentType()
}

// apiOrgVerifySubmit posts the verification through the API with a
// bearer token, as a script would.
func apiOrgVerifySubmit(t *testing.T, a *app, token string, orgID int64, fields map[string]string, licence []byte) (int, string) {
	t.Helper()
	body, ctype := orgVerifyBody(t, fields, licence)
	req, err := http.NewRequest("POST", a.srv.URL+a.url(routenames.APIOrgVerifySubmit, idParam(orgID)), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", ctype)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw)
}

// apiFields are the API's submission: the page's fields without its
// consent box (sending it is the consent).
func apiFields() map[string]string {
	f := goodOrgFields()
	delete(f, "consent")
	return f
}

// orgVerifyToken makes an API token for the actor's user.
func orgVerifyToken(t *testing.T, db *models.DB, ac *actor) string {
	t.Helper()
	tok, _, err := (&accounts.Service{DB: db}).CreateAPIToken(context.Background(), ac.user, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Organisation verification through the API, as its page does it: the
// status for members (others: 404); a submission by an owner or admin
// only (members 403, others 404), refused field by field with 422 and
// nothing stored, accepted as consent to the current notice (201,
// pending); the code shown masked, the licence never; again while
// pending is 409; a rejection's reason and time are read back.
func TestOrgVerificationThroughTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		v := newOrgVerifyApp(t, db, true, "")
		owner, admin, member, other := orgVerifyToken(t, db, v.owner), orgVerifyToken(t, db, v.orgAdmin), orgVerifyToken(t, db, v.member), orgVerifyToken(t, db, v.other)
		path := v.url(routenames.APIOrgVerify, idParam(v.org.ID))
		read := func(token string) apiOrgVerification {
			t.Helper()
			raw := mustStatus(t, v.app, token, "GET", path, "", 200)
			var out apiOrgVerification
			must(t, json.Unmarshal([]byte(raw), &out) == nil, "%s", raw)
			must(t, !strings.Contains(raw, orgVerifyCode) && !strings.Contains(raw, orgVerifyMarker), "the answer shows the code or the licence: %s", raw)
			return out
		}
		stored := func() int64 { return orgVerifyCount(t, db, v.org.ID) }

		st := read(owner)
		must(t, st.OrgID == v.org.ID && st.Status == "unverified" && st.CanSubmit && st.Submission == nil && st.NoticeVersion == identity.OrgConsentVersion, "owner reads: %+v", st)
		st = read(member)
		must(t, st.Status == "unverified" && !st.CanSubmit, "member reads: %+v", st)
		mustStatus(t, v.app, other, "GET", path, "", 404)
		mustStatus(t, v.app, "", "GET", path, "", 401)

		// Who may submit: members are forbidden, others told it does not exist.
		code, raw := apiOrgVerifySubmit(t, v.app, member, v.org.ID, apiFields(), orgVerifyPNG)
		must(t, code == http.StatusForbidden, "member submits: %d %s", code, raw)
		code, raw = apiOrgVerifySubmit(t, v.app, other, v.org.ID, apiFields(), orgVerifyPNG)
		must(t, code == http.StatusNotFound, "another org's owner submits: %d %s", code, raw)

		// Bad fields: 422 naming each, nothing stored.
		with := func(k, val string) map[string]string {
			f := apiFields()
			f[k] = val
			return f
		}
		tooBig := append(append([]byte{}, orgVerifyPNG...), bytes.Repeat([]byte{7}, identity.MaxLicenceBytes)...)
		for _, c := range []struct {
			name    string
			fields  map[string]string
			licence []byte
			field   string
		}{
			{"a check character mistyped", with("credit_code", "91510100MA6CFC8W35"), orgVerifyPNG, "credit_code"},
			{"a short code", with("credit_code", "91510100"), orgVerifyPNG, "credit_code"},
			{"no licence", apiFields(), nil, "licence"},
			{"a GIF", apiFields(), []byte("GIF89a" + orgVerifyMarker), "licence"},
			{"a licence over 5 MiB", apiFields(), tooBig, "licence"},
		} {
			code, raw := apiOrgVerifySubmit(t, v.app, owner, v.org.ID, c.fields, c.licence)
			must(t, code == http.StatusUnprocessableEntity, "%s: %d, want 422: %s", c.name, code, snippet(raw))
			ec, param, _ := errorCode(t, raw)
			must(t, ec == "invalid" && param == c.field, "%s: code %s param %q, want invalid %q: %s", c.name, ec, param, c.field, raw)
		}
		// Everything missing: each field named, and no consent asked for.
		code, raw = apiOrgVerifySubmit(t, v.app, owner, v.org.ID, map[string]string{}, nil)
		must(t, code == http.StatusUnprocessableEntity, "empty: %d %s", code, raw)
		contains(t, raw, `"field":"credit_code"`, `"field":"org_name"`, `"field":"legal_rep"`, `"field":"licence"`)
		must(t, !strings.Contains(raw, `"field":"consent"`), "the API asks for a consent box: %s", raw)
		must(t, stored() == 0, "refused submissions stored: %d", stored())

		// The admin of the organisation submits: pending, the consent recorded.
		code, raw = apiOrgVerifySubmit(t, v.app, admin, v.org.ID, with("credit_code", strings.ToLower(orgVerifyCode)), orgVerifyPNG)
		must(t, code == http.StatusCreated, "submit: %d %s", code, raw)
		must(t, !strings.Contains(raw, orgVerifyCode) && !strings.Contains(raw, orgVerifyMarker), "the answer shows the code or the licence: %s", raw)
		var created apiOrgVerification
		must(t, json.Unmarshal([]byte(raw), &created) == nil && created.Status == "pending" && !created.CanSubmit && created.Submission != nil, "created: %s", raw)
		sub := created.Submission
		must(t, sub.CreditCodeMasked == "9151**********8W34" && sub.OrgName == "成都视觉科技有限公司" && sub.LegalRep == "王芳" && sub.LicenceType == "png" &&
			sub.ConsentVersion == identity.OrgConsentVersion && sub.ConsentedAt != nil && sub.DecidedAt == nil, "created: %s", raw)
		row := latestOrgVerification(t, db, v.org.ID)
		must(t, row.ID == sub.ID && row.CreditCode == orgVerifyCode && row.ConsentVersion == identity.OrgConsentVersion && row.ConsentAt != nil &&
			row.SubmittedBy != nil && *row.SubmittedBy == v.orgAdmin.user.ID, "stored: %+v", row)

		// Again while pending: 409, still one.
		code, raw = apiOrgVerifySubmit(t, v.app, owner, v.org.ID, apiFields(), orgVerifyPNG)
		must(t, code == http.StatusConflict, "again while pending: %d %s", code, raw)
		must(t, stored() == 1, "submissions: %d", stored())
		st = read(member)
		must(t, st.Status == "pending" && st.Submission != nil && st.Submission.ID == sub.ID, "member reads pending: %+v", st)

		// Rejected with a reason: the organisation reads it, and may submit again.
		must(t, (&identity.Orgs{DB: db}).Reject(context.Background(), v.root.user, sub.ID, "The licence photo is blurred.") == nil, "reject")
		st = read(owner)
		must(t, st.Status == "rejected" && st.CanSubmit && st.Submission.Reason == "The licence photo is blurred." && st.Submission.DecidedAt != nil, "rejected: %+v", st)
		code, raw = apiOrgVerifySubmit(t, v.app, owner, v.org.ID, apiFields(), orgVerifyPNG)
		must(t, code == http.StatusCreated, "again after a rejection: %d %s", code, raw)
	})
}

// Without a key to seal licences the API says the feature is unavailable
// (503) to whoever may submit, and still forbids a member (403).
func TestOrgVerificationAPIWithoutAKey(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		v := newOrgVerifyApp(t, db, false, "")
		code, raw := apiOrgVerifySubmit(t, v.app, orgVerifyToken(t, db, v.owner), v.org.ID, apiFields(), orgVerifyPNG)
		must(t, code == http.StatusServiceUnavailable, "no key: %d %s", code, raw)
		ec, _, _ := errorCode(t, raw)
		must(t, ec == "unavailable", "no key: %s", raw)
		code, raw = apiOrgVerifySubmit(t, v.app, orgVerifyToken(t, db, v.member), v.org.ID, apiFields(), orgVerifyPNG)
		must(t, code == http.StatusForbidden, "member, no key: %d %s", code, raw)
		mustStatus(t, v.app, orgVerifyToken(t, db, v.owner), "GET", v.url(routenames.APIOrgVerify, idParam(v.org.ID)), "", 200)
	})
}

// The API's body limit is the page's (orgverify.MaxSubmitBytes): a body
// of exactly the limit is read (its licence, too large, is a 422 naming
// it), one byte more is a 413, on both routes.
func TestOrgVerificationAPIBodyLimitIsThePages(t *testing.T) {
	t.Parallel()
	v := newOrgVerifyApp(t, dbtest.SQLite(t), true, "")
	token := orgVerifyToken(t, v.db, v.owner)
	// sized is a submission whose body is n bytes: its licence padded.
	sized := func(fields map[string]string, n int) ([]byte, string) {
		base, _ := orgVerifyBody(t, fields, orgVerifyPNG)
		pad := n - len(base)
		must(t, pad > 0, "the fields alone are %d bytes", len(base))
		return orgVerifyBody(t, fields, append(append([]byte{}, orgVerifyPNG...), bytes.Repeat([]byte{7}, pad)...))
	}
	send := func(c *http.Client, path string, body []byte, ctype string, headers ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", v.srv.URL+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("Accept-Language", "en")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(raw)
	}
	pageFields := goodOrgFields()
	pageFields["_csrf"] = v.owner.csrf()
	routes := []struct {
		name   string
		path   string
		fields map[string]string
		c      *http.Client
		auth   []string
	}{
		{"the API", v.url(routenames.APIOrgVerifySubmit, idParam(v.org.ID)), apiFields(), http.DefaultClient, []string{"Authorization", "Bearer " + token}},
		{"the page", v.url(routenames.OrgVerifySubmit, idParam(v.org.ID)), pageFields, v.owner.c, nil},
	}
	for _, r := range routes {
		body, ctype := sized(r.fields, orgverify.MaxSubmitBytes)
		code, raw := send(r.c, r.path, body, ctype, r.auth...)
		must(t, code == http.StatusUnprocessableEntity, "%s at its limit: %d, want 422: %s", r.name, code, snippet(raw))
		body, ctype = sized(r.fields, orgverify.MaxSubmitBytes+1)
		code, raw = send(r.c, r.path, body, ctype, r.auth...)
		must(t, code == http.StatusRequestEntityTooLarge, "%s a byte over its limit: %d, want 413: %s", r.name, code, snippet(raw))
	}
	must(t, orgVerifyCount(t, v.db, v.org.ID) == 0, "a refused submission was stored")
}

// orgVerifyCount counts the organisation's submissions.
func orgVerifyCount(t *testing.T, db *models.DB, orgID int64) int64 {
	t.Helper()
	var n int64
	if err := db.W.Model(&identitystore.OrgVerification{}).Where("org_id = ?", orgID).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}
