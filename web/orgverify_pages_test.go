package web_test

import (
	"bytes"
	"context"
	"html"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"suanli/accounts"
	"suanli/audit"
	"suanli/config"
	"suanli/dbtest"
	"suanli/handlers"
	"suanli/identity"
	"suanli/locales"
	"suanli/models"
	"suanli/models/identitystore"
	"suanli/routenames"
	"suanli/secrets"
)

// orgVerifyCode is a unified social credit code with a right check
// character (GB 32100).
const orgVerifyCode = "91510100MA6CFC8W34"

// orgVerifyMarker is text inside the test licence.
const orgVerifyMarker = "ORG-LICENCE-MARKER-51d0"

// orgVerifyPNG is a licence file that starts as a PNG does.
var orgVerifyPNG = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), []byte(strings.Repeat(orgVerifyMarker, 10))...)

// orgVerifyApp is the real router with a PII key ring, a team with its
// owner, an admin and a member, another organisation's owner, and a
// platform admin, each logged in.
type orgVerifyApp struct {
	*app
	org                                        *models.Org
	owner, orgAdmin, member, other, anon, root *actor
}

// newOrgVerifyApp serves the app with a PII key ring (withKey) or none,
// and with any further changes to the handler's dependencies.
func newOrgVerifyApp(t *testing.T, db *models.DB, withKey bool, mode string, change ...func(*handlers.Handler)) *orgVerifyApp {
	t.Helper()
	var ring *secrets.Ring
	if withKey {
		k, err := secrets.ParseKey(secrets.GenerateKey())
		if err != nil {
			t.Fatal(err)
		}
		ring = secrets.NewRing(config.PIIPurpose, k)
	}
	a := newAppWith(t, db, func(h *handlers.Handler) {
		h.Identity = &identity.Service{DB: db, Ring: ring, Mode: mode}
		h.Payouts.RealName = mode
		for _, c := range change {
			c(h)
		}
	})
	ctx := context.Background()
	ownerU := mustUser(t, db, "owner@vision.example", "Olga Owner", false)
	org, err := (&accounts.Service{DB: db}).CreateOrg(ctx, ownerU, models.OrgTeam, "Chengdu Vision")
	if err != nil {
		t.Fatal(err)
	}
	adminU := mustUser(t, db, "admin@vision.example", "Ada Admin", false)
	memberU := mustUser(t, db, "member@vision.example", "Mo Member", false)
	mustMember(t, db, org.ID, adminU, models.RoleAdmin)
	mustMember(t, db, org.ID, memberU, models.RoleMember)
	return &orgVerifyApp{app: a, org: org,
		owner: loggedIn(a, "owner", ownerU), orgAdmin: loggedIn(a, "org admin", adminU), member: loggedIn(a, "member", memberU),
		other: loggedIn(a, "other org's owner", mustUser(t, db, "bob@beta.example", "Bob Beta", false)),
		anon:  newActor(a, "anonymous"),
		root:  loggedIn(a, "platform admin", mustUser(t, db, "root@suanli.example", "Pat Platform", true))}
}

// submitOrgVerification posts the verification form as a browser does:
// a multipart form with the CSRF token, the fields and the licence file
// (none when licence is nil).
func submitOrgVerification(ac *actor, orgID int64, fields map[string]string, licence []byte) (*http.Response, string) {
	ac.a.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	_ = w.WriteField("_csrf", ac.csrf())
	for k, v := range fields {
		_ = w.WriteField(k, v)
	}
	if licence != nil {
		fw, err := w.CreateFormFile("licence", "licence.png")
		if err != nil {
			ac.a.t.Fatal(err)
		}
		_, _ = fw.Write(licence)
	}
	_ = w.Close()
	req, err := http.NewRequest("POST", ac.a.srv.URL+ac.a.url(routenames.OrgVerifySubmit, idParam(orgID)), &body)
	if err != nil {
		ac.a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Accept-Language", "en")
	res, err := ac.c.Do(req)
	if err != nil {
		ac.a.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func goodOrgFields() map[string]string {
	return map[string]string{"credit_code": orgVerifyCode, "org_name": "成都视觉科技有限公司", "legal_rep": "王芳", "consent": "1"}
}

// en is an English message, as a page escapes it.
func en(key string, args ...any) string {
	return html.EscapeString(locales.T(locales.EN, key, args...))
}

// latestOrgVerification is the organisation's newest submission.
func latestOrgVerification(t *testing.T, db *models.DB, orgID int64) *identitystore.OrgVerification {
	t.Helper()
	v, err := identitystore.LatestOrgVerification(context.Background(), db, orgID)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Bad input shows the form again, 422, with the message beside the field
// it concerns; nothing is stored.
func TestOrgVerifyFormRefusesBadInput(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		v := newOrgVerifyApp(t, db, true, "")
		with := func(k, val string) map[string]string {
			f := goodOrgFields()
			if val == "" {
				delete(f, k)
			} else {
				f[k] = val
			}
			return f
		}
		tooBig := append(append([]byte{}, orgVerifyPNG...), bytes.Repeat([]byte{7}, identity.MaxLicenceBytes)...)
		for _, c := range []struct {
			name    string
			fields  map[string]string
			licence []byte
			field   string
			msg     string
		}{
			{"check character", with("credit_code", "91510100MA6CFC8W35"), orgVerifyPNG, "credit_code", en("orgverify.err.credit_code_check")},
			{"short code", with("credit_code", "91510100"), orgVerifyPNG, "credit_code", en("orgverify.err.credit_code_length")},
			{"no licence", goodOrgFields(), nil, "licence", en("orgverify.err.licence_missing")},
			{"a GIF", goodOrgFields(), []byte("GIF89a" + orgVerifyMarker), "licence", en("orgverify.err.licence_type")},
			{"over 5 MiB", goodOrgFields(), tooBig, "licence", en("orgverify.err.licence_size", 5)},
			{"no consent", with("consent", ""), orgVerifyPNG, "consent", en("orgverify.err.consent")},
		} {
			res, body := submitOrgVerification(v.owner, v.org.ID, c.fields, c.licence)
			must(t, res.StatusCode == http.StatusUnprocessableEntity, "%s: %d, want 422\n%s", c.name, res.StatusCode, snippet(body))
			contains(t, body, `id="err-`+c.field+`" role="alert">`+c.msg)
		}
		// A body far over the limit is refused before anything reads it.
		res, _ := submitOrgVerification(v.owner, v.org.ID, goodOrgFields(), bytes.Repeat([]byte{1}, 8<<20))
		must(t, res.StatusCode == http.StatusRequestEntityTooLarge, "an 8 MiB upload: %d, want 413", res.StatusCode)
		var n int64
		must(t, db.W.Model(&identitystore.OrgVerification{}).Count(&n).Error == nil && n == 0, "refused submissions stored: %d", n)
	})
}

// The journey: the owner submits (the organisation page says it is in
// review), the platform admin finds it in the hub's queue, reads the
// licence (audited, never cached) and rejects it with a reason the
// organisation sees; the admin of the organisation submits again and it
// is approved: the page says verified.
func TestOrgVerifySubmitReviewJourney(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		v := newOrgVerifyApp(t, db, true, "")
		orgURL := v.url(routenames.OrgsShow, idParam(v.org.ID))
		_, body := v.owner.do("GET", orgURL, nil)
		contains(t, body, `id="orgverify-card"`, `data-status="unverified"`, en("orgverify.start"))
		_, body = v.owner.do("GET", v.url(routenames.OrgVerify, idParam(v.org.ID)), nil)
		contains(t, body, `enctype="multipart/form-data"`, `name="credit_code"`, `name="org_name"`, `name="legal_rep"`, `name="licence"`, `name="consent"`,
			en("orgverify.notice.how"), en("orgverify.notice.who"))

		res, body := submitOrgVerification(v.owner, v.org.ID, goodOrgFields(), orgVerifyPNG)
		must(t, res.StatusCode == http.StatusSeeOther, "submit: %d\n%s", res.StatusCode, snippet(body))
		_, body = v.owner.do("GET", orgURL, nil)
		contains(t, body, `data-status="pending"`)
		// The organisation sees its code masked.
		_, body = v.member.do("GET", v.url(routenames.OrgVerify, idParam(v.org.ID)), nil)
		contains(t, body, "9151**********8W34")
		must(t, !strings.Contains(body, orgVerifyCode), "the organisation's page shows the code in full")
		must(t, !strings.Contains(body, `id="orgverify-form"`), "a member is offered the form")
		sub := latestOrgVerification(t, db, v.org.ID)

		// The hub's queue, and the review page with the code in full.
		_, body = v.root.do("GET", v.url(routenames.AdminHome), nil)
		contains(t, body, `id="orgverify-`+idParam(sub.ID)+`"`, orgVerifyCode, "Chengdu Vision")
		_, body = v.root.do("GET", v.url(routenames.AdminOrgVerify, idParam(sub.ID)), nil)
		contains(t, body, orgVerifyCode, "成都视觉科技有限公司", "王芳", v.url(routenames.AdminOrgVerifyLicence, idParam(sub.ID)))

		// The licence: the file itself, not cached, each read audited.
		for i := range 2 {
			res, body = v.root.do("GET", v.url(routenames.AdminOrgVerifyLicence, idParam(sub.ID)), nil)
			must(t, res.StatusCode == 200 && body == string(orgVerifyPNG) && res.Header.Get("Content-Type") == "image/png" &&
				res.Header.Get("Cache-Control") == "no-store", "licence read %d: %d %q %q", i, res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Cache-Control"))
		}
		es, _, err := db.AuditLog(context.Background(), models.AuditFilter{Action: audit.OrgLicenceRead})
		must(t, err == nil && len(es) == 2, "licence reads audited: %d %v", len(es), err)
		for _, e := range es {
			must(t, e.ActorID != nil && *e.ActorID == v.root.user.ID && e.Subject == "org:"+idParam(v.org.ID) &&
				strings.Contains(e.Detail, v.root.user.Email) && strings.Contains(e.Detail, "Chengdu Vision"), "audit entry: %+v", e)
		}

		// Rejected without a reason: the review again, 422.
		res, body = v.root.post(v.url(routenames.AdminOrgVerifyReject, idParam(sub.ID)), url.Values{"reason": {" "}})
		must(t, res.StatusCode == http.StatusUnprocessableEntity, "reject without a reason: %d", res.StatusCode)
		contains(t, body, en("orgverify.err.reason"))
		res, _ = v.root.post(v.url(routenames.AdminOrgVerifyReject, idParam(sub.ID)), url.Values{"reason": {"The licence photo is blurred"}})
		must(t, res.StatusCode == http.StatusSeeOther, "reject: %d", res.StatusCode)
		res, body = v.root.post(v.url(routenames.AdminOrgVerifyApprove, idParam(sub.ID)), nil)
		must(t, res.StatusCode == http.StatusConflict, "approving a rejected submission: %d", res.StatusCode)
		contains(t, body, en("orgverify.err.not_pending", sub.ID))
		_, body = v.owner.do("GET", orgURL, nil)
		contains(t, body, `data-status="rejected"`, "The licence photo is blurred", en("orgverify.start"))
		mails, err := db.Outbox(context.Background(), "owner@vision.example", 10)
		must(t, err == nil && len(mails) > 0 && strings.Contains(mails[0].Body, "The licence photo is blurred"), "the owner's mail: %+v %v", mails, err)

		// Submitted again by the organisation's admin; approved.
		res, body = submitOrgVerification(v.orgAdmin, v.org.ID, goodOrgFields(), orgVerifyPNG)
		must(t, res.StatusCode == http.StatusSeeOther, "resubmit: %d\n%s", res.StatusCode, snippet(body))
		sub2 := latestOrgVerification(t, db, v.org.ID)
		must(t, sub2.ID != sub.ID && sub2.Status == identitystore.OrgPending, "resubmitted: %+v", sub2)
		res, _ = v.root.post(v.url(routenames.AdminOrgVerifyApprove, idParam(sub2.ID)), nil)
		must(t, res.StatusCode == http.StatusSeeOther, "approve: %d", res.StatusCode)
		_, body = v.member.do("GET", orgURL, nil)
		contains(t, body, `data-status="verified"`)
		// Verified: no form, and a post is a conflict shown on the page.
		res, body = submitOrgVerification(v.owner, v.org.ID, goodOrgFields(), orgVerifyPNG)
		must(t, res.StatusCode == http.StatusConflict, "submitting while verified: %d", res.StatusCode)
		contains(t, body, en("orgverify.err.verified"))
	})
}

// Who may see what: the form is its owners' and admins' (members see the
// status), another organisation's owner is told it does not exist, the
// review and the licence are platform admins' only.
func TestOrgVerifyAccess(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		v := newOrgVerifyApp(t, db, true, "")
		res, _ := submitOrgVerification(v.member, v.org.ID, goodOrgFields(), orgVerifyPNG)
		must(t, res.StatusCode == http.StatusForbidden, "a member submitting: %d", res.StatusCode)
		res, _ = submitOrgVerification(v.other, v.org.ID, goodOrgFields(), orgVerifyPNG)
		must(t, res.StatusCode == http.StatusNotFound, "another org's owner submitting: %d", res.StatusCode)
		res, _ = v.other.do("GET", v.url(routenames.OrgVerify, idParam(v.org.ID)), nil)
		must(t, res.StatusCode == http.StatusNotFound, "another org's owner looking: %d", res.StatusCode)
		res, _ = submitOrgVerification(v.owner, v.org.ID, goodOrgFields(), orgVerifyPNG)
		must(t, res.StatusCode == http.StatusSeeOther, "the owner submitting: %d", res.StatusCode)
		sub := latestOrgVerification(t, db, v.org.ID)
		for _, ac := range []*actor{v.owner, v.orgAdmin, v.member, v.other} {
			for _, route := range []string{routenames.AdminOrgVerify, routenames.AdminOrgVerifyLicence} {
				res, body := ac.do("GET", v.url(route, idParam(sub.ID)), nil)
				must(t, res.StatusCode == http.StatusForbidden && !strings.Contains(body, orgVerifyMarker), "%s GET %s: %d", ac.name, route, res.StatusCode)
			}
			res, _ := ac.post(v.url(routenames.AdminOrgVerifyApprove, idParam(sub.ID)), nil)
			must(t, res.StatusCode == http.StatusForbidden, "%s approving: %d", ac.name, res.StatusCode)
		}
		res, _ = v.anon.do("GET", v.url(routenames.AdminOrgVerifyLicence, idParam(sub.ID)), nil)
		must(t, res.StatusCode == http.StatusSeeOther && strings.HasPrefix(res.Header.Get("Location"), "/login"), "anonymous: %d", res.StatusCode)
		var n int64
		must(t, db.W.Model(&models.AuditEntry{}).Where("action = ?", audit.OrgLicenceRead).Count(&n).Error == nil && n == 0, "refused reads were audited: %d", n)
		must(t, latestOrgVerification(t, db, v.org.ID).Status == identitystore.OrgPending, "a refused approval changed the submission")
	})
}

// Without a PII key the page says verification is not available, and a
// submission is a 503 saying why.
func TestOrgVerifyWithoutAKey(t *testing.T) {
	t.Parallel()
	v := newOrgVerifyApp(t, dbtest.SQLite(t), false, "")
	_, body := v.owner.do("GET", v.url(routenames.OrgVerify, idParam(v.org.ID)), nil)
	contains(t, body, `id="orgverify-unavailable"`)
	must(t, !strings.Contains(body, `id="orgverify-form"`), "the form is offered without a key")
	res, body := submitOrgVerification(v.owner, v.org.ID, goodOrgFields(), orgVerifyPNG)
	must(t, res.StatusCode == http.StatusServiceUnavailable, "a submission without a key: %d", res.StatusCode)
	contains(t, body, en("orgverify.err.unavailable"))
}

// orgVerifyPDF is a licence file that starts as a PDF does.
var orgVerifyPDF = append([]byte("%PDF-1.7\n"), []byte(strings.Repeat(orgVerifyMarker, 10))...)

// The licence an organisation uploaded is never a page of this origin:
// each answer is sandboxed (CSP sandbox), never sniffed and never cached;
// an image opens in the browser, a PDF (which a sandboxed answer cannot
// show) is saved, and the review page offers it as a download. The review
// page, which shows the credit code in full, is never cached either.
func TestOrgVerifyLicenceIsSandboxedAndReviewNotCached(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		v := newOrgVerifyApp(t, db, true, "")
		licence := func(id int64, wantType, wantDisposition string, want []byte) {
			t.Helper()
			res, body := v.root.do("GET", v.url(routenames.AdminOrgVerifyLicence, idParam(id)), nil)
			h := res.Header
			must(t, res.StatusCode == 200 && body == string(want) && h.Get("Content-Type") == wantType, "licence: %d %q", res.StatusCode, h.Get("Content-Type"))
			must(t, h.Get("Cache-Control") == "no-store" && h.Get("X-Content-Type-Options") == "nosniff", "licence headers: %v", h)
			must(t, strings.HasPrefix(h.Get("Content-Disposition"), wantDisposition+";"), "licence disposition: %q, want %s", h.Get("Content-Disposition"), wantDisposition)
			csp := strings.Split(h.Get("Content-Security-Policy"), ";")
			sandboxed := false
			for _, d := range csp {
				// A bare sandbox: no allow-scripts, no allow-same-origin.
				sandboxed = sandboxed || strings.TrimSpace(d) == "sandbox"
			}
			must(t, sandboxed && strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'"), "licence CSP: %q", h.Get("Content-Security-Policy"))
		}
		review := func(id int64) string {
			t.Helper()
			res, body := v.root.do("GET", v.url(routenames.AdminOrgVerify, idParam(id)), nil)
			must(t, res.StatusCode == 200 && res.Header.Get("Cache-Control") == "no-store", "review page: %d, Cache-Control %q", res.StatusCode, res.Header.Get("Cache-Control"))
			contains(t, body, orgVerifyCode)
			return body
		}

		res, body := submitOrgVerification(v.owner, v.org.ID, goodOrgFields(), orgVerifyPDF)
		must(t, res.StatusCode == http.StatusSeeOther, "submit a PDF: %d\n%s", res.StatusCode, snippet(body))
		sub := latestOrgVerification(t, db, v.org.ID)
		body = review(sub.ID)
		contains(t, body, `id="review-licence" download`, "Download the business licence (PDF document")
		must(t, !strings.Contains(body, `target="_blank"`), "a PDF licence opens in a new tab")
		licence(sub.ID, "application/pdf", "attachment", orgVerifyPDF)
		// Refused with a reason: the page again (422), still not cached.
		res, _ = v.root.post(v.url(routenames.AdminOrgVerifyReject, idParam(sub.ID)), url.Values{"reason": {""}})
		must(t, res.StatusCode == http.StatusUnprocessableEntity && res.Header.Get("Cache-Control") == "no-store", "review page again: %d %q", res.StatusCode, res.Header.Get("Cache-Control"))
		res, _ = v.root.post(v.url(routenames.AdminOrgVerifyReject, idParam(sub.ID)), url.Values{"reason": {"Send a photo of the licence"}})
		must(t, res.StatusCode == http.StatusSeeOther, "reject: %d", res.StatusCode)

		res, body = submitOrgVerification(v.owner, v.org.ID, goodOrgFields(), orgVerifyPNG)
		must(t, res.StatusCode == http.StatusSeeOther, "submit a PNG: %d\n%s", res.StatusCode, snippet(body))
		sub = latestOrgVerification(t, db, v.org.ID)
		body = review(sub.ID)
		contains(t, body, `target="_blank"`, "Open the business licence (PNG image")
		licence(sub.ID, "image/png", "inline", orgVerifyPNG)
	})
}

// The notice promises about invoices only what the invoice form does: an
// invoice is issued to the title and taxpayer ID each request gives, as
// free text, not to the verified organisation's record (the form of a
// verified organisation carries neither its registered name nor its
// credit code).
func TestOrgVerifyNoticeSaysWhatInvoicesDo(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		v := newOrgVerifyApp(t, db, true, "")
		res, body := submitOrgVerification(v.owner, v.org.ID, goodOrgFields(), orgVerifyPNG)
		must(t, res.StatusCode == http.StatusSeeOther, "submit: %d\n%s", res.StatusCode, snippet(body))
		res, _ = v.root.post(v.url(routenames.AdminOrgVerifyApprove, idParam(latestOrgVerification(t, db, v.org.ID).ID)), nil)
		must(t, res.StatusCode == http.StatusSeeOther, "approve: %d", res.StatusCode)
		for lang, says := range map[string]string{locales.EN: "title and taxpayer ID given in each invoice request", locales.ZH: "按每次开票申请中填写的抬头和纳税人识别号开具"} {
			why := locales.T(lang, "orgverify.notice.why")
			must(t, strings.Contains(why, says) && !strings.Contains(why, "name the verified") && !strings.Contains(why, "以已认证的组织开具"), "%s notice: %q", lang, why)
			_, body := v.owner.do("GET", v.url(routenames.OrgVerify, idParam(v.org.ID)), nil, "Accept-Language", lang)
			contains(t, body, html.EscapeString(why))
		}
		res, body = v.owner.do("GET", v.url(routenames.InvoicesPage, idParam(v.org.ID)), nil)
		must(t, res.StatusCode == 200, "invoices page: %d", res.StatusCode)
		contains(t, body, `id="f-title" name="title" type="text"`, `id="f-taxpayer_id" name="taxpayer_id" type="text" value=""`)
		must(t, !strings.Contains(body, "成都视觉科技有限公司") && !strings.Contains(body, orgVerifyCode), "the invoice form carries the verified record")
	})
}

// The pages speak the reader's language: no English on a Chinese page,
// no label said twice on an English one, no message missing.
func TestOrgVerifyPagesInBothLanguages(t *testing.T) {
	t.Parallel()
	v := newOrgVerifyApp(t, dbtest.SQLite(t), true, "")
	res, _ := submitOrgVerification(v.owner, v.org.ID, map[string]string{"credit_code": orgVerifyCode, "org_name": "Chengdu Vision Co., Ltd.", "legal_rep": "Wang Fang", "consent": "1"}, orgVerifyPNG)
	must(t, res.StatusCode == http.StatusSeeOther, "submit: %d", res.StatusCode)
	// The flash of the submission (in the submitter's English) is shown once.
	v.owner.do("GET", res.Header.Get("Location"), nil)
	sub := latestOrgVerification(t, v.db, v.org.ID)
	pages := []struct {
		as   *actor
		path string
	}{
		{v.owner, v.url(routenames.OrgVerify, idParam(v.org.ID))},
		{v.owner, v.url(routenames.OrgsShow, idParam(v.org.ID))},
		{v.root, v.url(routenames.AdminOrgVerify, idParam(sub.ID))},
		{v.root, v.url(routenames.AdminHome)},
	}
	for _, lang := range locales.Supported {
		for _, p := range pages {
			res, body := p.as.do("GET", p.path, nil, "Accept-Language", lang)
			must(t, res.StatusCode == 200, "%s GET %s: %d", lang, p.path, res.StatusCode)
			text := visibleText(t, body)
			problems := doubledLabels(text)
			if lang == locales.ZH {
				problems = englishInOrgVerify(englishIn(text))
			}
			for _, pr := range problems {
				t.Errorf("%s GET %s: %s", lang, p.path, pr)
			}
			must(t, !strings.Contains(body, "orgverify."), "%s GET %s shows a message key", lang, p.path)
		}
	}
}

// englishInOrgVerify drops what the test itself submitted in English (a
// registered name and a person's name are data, shown as given).
func englishInOrgVerify(problems []string) []string {
	var out []string
	for _, p := range problems {
		if !strings.Contains(p, "Chengdu Vision") && !strings.Contains(p, "Wang Fang") {
			out = append(out, p)
		}
	}
	return out
}
