package identity_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/audit"
	"suanli/config"
	"suanli/dbtest"
	"suanli/identity"
	"suanli/models"
	"suanli/models/identitystore"
	"suanli/secrets"
)

// validCode is a unified social credit code whose check character is
// right (GB 32100).
const validCode = "91510100MA6CFC8W34"

// licenceMarker is text inside the test licence: it must never be found
// in the database.
const licenceMarker = "LICENCE-SECRET-MARKER-7f3a"

// pngLicence is a file that starts as a PNG does.
var pngLicence = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), []byte(strings.Repeat(licenceMarker, 20))...)

func newRing(t *testing.T, old ...*secrets.Key) (*secrets.Ring, *secrets.Key) {
	t.Helper()
	k, err := secrets.ParseKey(secrets.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	return secrets.NewRing(config.PIIPurpose, k, old...), k
}

// orgFixture is a team with an owner, an admin and a member, a platform
// admin, and the organisation verification use case with a key ring.
type orgFixture struct {
	t                           *testing.T
	ctx                         context.Context
	db                          *models.DB
	orgs                        *identity.Orgs
	org                         *models.Org
	owner, admin, member, staff *models.User
	outsider                    *models.User
}

func newOrgFixture(t *testing.T, db *models.DB) *orgFixture {
	t.Helper()
	ctx := context.Background()
	acc := &accounts.Service{DB: db, BaseURL: "http://suanli.test"}
	user := func(email string, platform bool) *models.User {
		u, err := acc.CreateUser(ctx, email, "violet-kettle-1984", "", platform)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	f := &orgFixture{t: t, ctx: ctx, db: db, owner: user("owner@team.example", false), admin: user("admin@team.example", false),
		member: user("member@team.example", false), staff: user("root@suanli.example", true), outsider: user("bob@other.example", false)}
	org, err := acc.CreateOrg(ctx, f.owner, models.OrgTeam, "Chengdu Vision Ltd")
	if err != nil {
		t.Fatal(err)
	}
	f.org = org
	for u, role := range map[*models.User]string{f.admin: models.RoleAdmin, f.member: models.RoleMember} {
		if err := db.W.Create(&models.Membership{OrgID: org.ID, UserID: u.ID, Role: role, CreatedAt: time.Now()}).Error; err != nil {
			t.Fatal(err)
		}
	}
	ring, _ := newRing(t)
	f.orgs = &identity.Orgs{DB: db, Ring: ring, BaseURL: "http://suanli.test"}
	return f
}

func goodSubmission() identity.OrgSubmission {
	return identity.OrgSubmission{CreditCode: " 91510100ma6cfc8w34 ", OrgName: "成都视觉科技有限公司", LegalRep: "王芳", Licence: pngLicence, Consent: true}
}

// fields returns the fields an error names.
func fields(err error) map[string]bool {
	out := map[string]bool{}
	var fe apperr.Fields
	if ae, ok := err.(apperr.Fields); ok {
		fe = ae
	}
	for _, e := range fe {
		out[e.Field] = true
	}
	return out
}

func TestOrgSubmissionNamesTheBadField(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newOrgFixture(t, db)
		change := func(fn func(*identity.OrgSubmission)) identity.OrgSubmission {
			s := goodSubmission()
			fn(&s)
			return s
		}
		big := append(append([]byte{}, pngLicence...), bytes.Repeat([]byte{0}, identity.MaxLicenceBytes)...)
		for name, c := range map[string]struct {
			in    identity.OrgSubmission
			field string
		}{
			"missing code":       {change(func(s *identity.OrgSubmission) { s.CreditCode = "" }), "credit_code"},
			"short code":         {change(func(s *identity.OrgSubmission) { s.CreditCode = validCode[:17] }), "credit_code"},
			"letter I in code":   {change(func(s *identity.OrgSubmission) { s.CreditCode = "I" + validCode[1:] }), "credit_code"},
			"wrong check char":   {change(func(s *identity.OrgSubmission) { s.CreditCode = validCode[:17] + "5" }), "credit_code"},
			"one digit altered":  {change(func(s *identity.OrgSubmission) { s.CreditCode = "92" + validCode[2:] }), "credit_code"},
			"no name":            {change(func(s *identity.OrgSubmission) { s.OrgName = " " }), "org_name"},
			"NUL in name":        {change(func(s *identity.OrgSubmission) { s.OrgName = "成都\x00科技" }), "org_name"},
			"no legal rep":       {change(func(s *identity.OrgSubmission) { s.LegalRep = "" }), "legal_rep"},
			"no licence":         {change(func(s *identity.OrgSubmission) { s.Licence = nil }), "licence"},
			"licence is a GIF":   {change(func(s *identity.OrgSubmission) { s.Licence = []byte("GIF89a" + licenceMarker) }), "licence"},
			"licence is HTML":    {change(func(s *identity.OrgSubmission) { s.Licence = []byte("<html>%PDF-") }), "licence"},
			"licence over 5 MiB": {change(func(s *identity.OrgSubmission) { s.Licence = big }), "licence"},
			"no consent":         {change(func(s *identity.OrgSubmission) { s.Consent = false }), "consent"},
		} {
			_, err := f.orgs.Submit(f.ctx, f.owner, f.org.ID, c.in)
			if apperr.Code(err) != apperr.EINVALID || !fields(err)[c.field] || len(fields(err)) != 1 {
				t.Errorf("%s: %v, want only field %s", name, err, c.field)
			}
		}
		if _, err := identitystore.LatestOrgVerification(f.ctx, db, f.org.ID); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("a refused submission was stored: %v", err)
		}
		// JPEG and PDF are licences too, told by their first bytes.
		for _, lic := range [][]byte{[]byte("\xFF\xD8\xFF\xE0" + licenceMarker), []byte("%PDF-1.7\n" + licenceMarker)} {
			s := goodSubmission()
			s.Licence = lic
			if _, err := f.orgs.Submit(f.ctx, f.owner, f.org.ID, s); err != nil {
				t.Fatalf("licence %q: %v", lic[:4], err)
			}
			v, _ := identitystore.LatestOrgVerification(f.ctx, db, f.org.ID)
			if err := f.orgs.Reject(f.ctx, f.staff, v.ID, "try the other file"); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestOrgSubmissionAuthorisation(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newOrgFixture(t, db)
		for _, c := range []struct {
			who  *models.User
			code string
		}{{f.outsider, apperr.ENOTFOUND}, {f.staff, apperr.ENOTFOUND}, {f.member, apperr.EFORBIDDEN}, {nil, apperr.ENOTFOUND}} {
			if _, err := f.orgs.Submit(f.ctx, c.who, f.org.ID, goodSubmission()); apperr.Code(err) != c.code {
				t.Errorf("%v: %v, want %s", c.who, err, c.code)
			}
		}
		// Without a key nothing personal is stored: EUNAVAILABLE.
		noKey := &identity.Orgs{DB: db}
		if _, err := noKey.Submit(f.ctx, f.admin, f.org.ID, goodSubmission()); apperr.Code(err) != apperr.EUNAVAILABLE {
			t.Errorf("without a key: %v", err)
		}
		// An admin of the organisation may; a second submission while it
		// is pending is a conflict.
		v, err := f.orgs.Submit(f.ctx, f.admin, f.org.ID, goodSubmission())
		if err != nil || v.Status != identitystore.OrgPending || v.CreditCode != validCode || v.ConsentVersion != identity.OrgConsentVersion || v.ConsentAt == nil {
			t.Fatalf("submit: %+v %v", v, err)
		}
		if _, err := f.orgs.Submit(f.ctx, f.owner, f.org.ID, goodSubmission()); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("a second submission while pending: %v", err)
		}
		// A personal organisation is verified through its owner.
		personal, err := models.PersonalOrgOf(db.W, f.owner.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.orgs.Submit(f.ctx, f.owner, personal, goodSubmission()); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("a personal organisation: %v", err)
		}
	})
}

// The licence is stored sealed: neither its bytes, nor a PNG header
// (raw, base64 or hex), nor the text inside it is in the database.
func TestOrgLicenceIsSealedAtRest(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newOrgFixture(t, db)
		v, err := f.orgs.Submit(f.ctx, f.owner, f.org.ID, goodSubmission())
		if err != nil {
			t.Fatal(err)
		}
		var raw []string
		if err := db.W.Raw(`SELECT sealed FROM identity_org_licences`).Scan(&raw).Error; err != nil {
			t.Fatal(err)
		}
		if len(raw) != 1 || raw[0] == "" {
			t.Fatalf("sealed licences: %d", len(raw))
		}
		var rows []map[string]any
		if err := db.W.Raw(`SELECT * FROM identity_org_verifications`).Scan(&rows).Error; err != nil {
			t.Fatal(err)
		}
		var all strings.Builder
		all.WriteString(raw[0])
		for _, r := range rows {
			for _, v := range r {
				if b, ok := v.([]byte); ok {
					all.Write(b)
				} else if s, ok := v.(string); ok {
					all.WriteString(s)
				}
			}
		}
		text := all.String()
		for _, bad := range []string{"\x89PNG", "PNG\r\n", licenceMarker, base64.StdEncoding.EncodeToString(pngLicence[:8]),
			base64.StdEncoding.EncodeToString([]byte(licenceMarker))[:12], hex.EncodeToString(pngLicence[:8]), string(pngLicence)} {
			if strings.Contains(text, bad) {
				t.Errorf("the database holds %q of the licence", bad)
			}
		}
		// It opens only for its own organisation and submission.
		if got, err := f.orgs.Licence(f.ctx, f.staff, v.ID); err != nil || !bytes.Equal(got.Data, pngLicence) || got.ContentType != "image/png" {
			t.Fatalf("the licence read back: %v", err)
		}
		// Copied to another organisation's submission, it does not open.
		other, err := (&accounts.Service{DB: db}).CreateOrg(f.ctx, f.outsider, models.OrgTeam, "Other Co")
		if err != nil {
			t.Fatal(err)
		}
		v2, err := f.orgs.Submit(f.ctx, f.outsider, other.ID, goodSubmission())
		if err != nil {
			t.Fatal(err)
		}
		if err := db.W.Exec(`UPDATE identity_org_licences SET sealed = ? WHERE verification_id = ?`, raw[0], v2.ID).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := f.orgs.Licence(f.ctx, f.staff, v2.ID); apperr.Code(err) != apperr.EUNAVAILABLE {
			t.Errorf("a licence copied to another submission opened: %v", err)
		}
	})
}

func TestOrgReviewApproveRejectResubmit(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newOrgFixture(t, db)
		if err := db.W.Model(f.owner).Update("lang", "en").Error; err != nil {
			t.Fatal(err)
		}
		state := func() identity.OrgState {
			_, st, err := f.orgs.State(f.ctx, f.owner, f.org.ID)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		if st := state(); st.Status != identity.OrgUnverified || !st.CanSubmit {
			t.Fatalf("before: %+v", st)
		}
		v, err := f.orgs.Submit(f.ctx, f.owner, f.org.ID, goodSubmission())
		if err != nil {
			t.Fatal(err)
		}
		if st := state(); st.Status != "pending" || st.CanSubmit {
			t.Fatalf("submitted: %+v", st)
		}
		// Only platform admins decide; a rejection needs its reason.
		if err := f.orgs.Approve(f.ctx, f.owner, v.ID); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("the owner approving: %v", err)
		}
		if err := f.orgs.Reject(f.ctx, f.staff, v.ID, "  "); apperr.Code(err) != apperr.EINVALID || !fields(err)["reason"] {
			t.Errorf("a rejection without a reason: %v", err)
		}
		if err := f.orgs.Reject(f.ctx, f.staff, v.ID, "The licence photo is blurred"); err != nil {
			t.Fatal(err)
		}
		st := state()
		if st.Status != "rejected" || st.Latest.Reason != "The licence photo is blurred" || !st.CanSubmit {
			t.Fatalf("rejected: %+v", st)
		}
		if err := f.orgs.Approve(f.ctx, f.staff, v.ID); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("approving a rejected submission: %v", err)
		}
		// Resubmitted, approved: verified, and no third submission.
		v2, err := f.orgs.Submit(f.ctx, f.owner, f.org.ID, goodSubmission())
		if err != nil {
			t.Fatal(err)
		}
		if err := f.orgs.Approve(f.ctx, f.staff, v2.ID); err != nil {
			t.Fatal(err)
		}
		if st := state(); st.Status != "verified" || st.CanSubmit {
			t.Fatalf("approved: %+v", st)
		}
		if ok, err := identitystore.OrgVerifiedIn(db.W, f.org.ID); !ok || err != nil {
			t.Fatalf("verified: %v %v", ok, err)
		}
		if _, err := f.orgs.Submit(f.ctx, f.owner, f.org.ID, goodSubmission()); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("submitting while verified: %v", err)
		}
		// The owner was mailed both decisions, in English.
		mails, err := db.Outbox(f.ctx, f.owner.Email, 10)
		if err != nil {
			t.Fatal(err)
		}
		var subjects []string
		for _, m := range mails {
			subjects = append(subjects, m.Subject)
		}
		joined := strings.Join(subjects, " | ")
		if !strings.Contains(joined, "Chengdu Vision Ltd is verified") || !strings.Contains(joined, "was rejected") {
			t.Errorf("mails to the owner: %s", joined)
		}
		for _, m := range mails {
			if strings.Contains(m.Subject, "rejected") && !strings.Contains(m.Body, "The licence photo is blurred") {
				t.Errorf("the rejection mail does not give the reason: %s", m.Body)
			}
		}
		// Reopened by an admin: the organisation submits again.
		if err := f.orgs.Reset(f.ctx, f.staff, v2.ID, "The company changed its name"); err != nil {
			t.Fatal(err)
		}
		if st := state(); st.Status != "reset" || !st.CanSubmit {
			t.Fatalf("reset: %+v", st)
		}
		if ok, _ := identitystore.OrgVerifiedIn(db.W, f.org.ID); ok {
			t.Error("still verified after the reset")
		}
		// Every step is audited.
		for _, action := range []string{audit.OrgVerifySubmitted, audit.OrgVerifyRejected, audit.OrgVerifyApproved, audit.OrgVerifyReset} {
			es, _, err := db.AuditLog(f.ctx, models.AuditFilter{Action: action, Subject: "org:" + itoa(f.org.ID)})
			if err != nil || len(es) == 0 {
				t.Errorf("no audit entry %s: %v", action, err)
			}
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Every full read of a licence is in the audit log, naming the reader
// and the organisation; anyone but a platform admin reads nothing.
func TestOrgLicenceReadsAreAudited(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newOrgFixture(t, db)
		v, err := f.orgs.Submit(f.ctx, f.owner, f.org.ID, goodSubmission())
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range []*models.User{f.owner, f.admin, f.outsider, nil} {
			if _, err := f.orgs.Licence(f.ctx, u, v.ID); apperr.Code(err) != apperr.EFORBIDDEN {
				t.Errorf("%v read the licence: %v", u, err)
			}
		}
		ctx := audit.WithActor(f.ctx, f.staff.ID, "10.0.0.9")
		for range 3 {
			if _, err := f.orgs.Licence(ctx, f.staff, v.ID); err != nil {
				t.Fatal(err)
			}
		}
		es, _, err := db.AuditLog(f.ctx, models.AuditFilter{Action: audit.OrgLicenceRead})
		if err != nil || len(es) != 3 {
			t.Fatalf("audit entries of licence reads: %d %v", len(es), err)
		}
		for _, e := range es {
			if e.ActorID == nil || *e.ActorID != f.staff.ID || e.ActorIP != "10.0.0.9" || e.Subject != "org:"+itoa(f.org.ID) ||
				!strings.Contains(e.Detail, f.staff.Email) || !strings.Contains(e.Detail, f.org.Name) {
				t.Errorf("audit entry: %+v", e)
			}
		}
		// Without the key, nothing is read (and nothing audited).
		if _, err := (&identity.Orgs{DB: db}).Licence(ctx, f.staff, v.ID); apperr.Code(err) != apperr.EUNAVAILABLE {
			t.Errorf("without a key: %v", err)
		}
	})
}

// A key rotation: the licence sealed under the old key is sealed again
// under the new one, and then opens with the new key alone.
func TestResealOrgLicences(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newOrgFixture(t, db)
		oldRing, oldKey := newRing(t)
		f.orgs.Ring = oldRing
		v, err := f.orgs.Submit(f.ctx, f.owner, f.org.ID, goodSubmission())
		if err != nil {
			t.Fatal(err)
		}
		rotated, newKey := newRing(t, oldKey)
		n, err := identity.ResealOrgLicences(f.ctx, db, rotated)
		if err != nil || n != 1 {
			t.Fatalf("reseal: %d %v", n, err)
		}
		if n, err := identity.ResealOrgLicences(f.ctx, db, rotated); err != nil || n != 0 {
			t.Fatalf("a second reseal: %d %v", n, err)
		}
		f.orgs.Ring = secrets.NewRing(config.PIIPurpose, newKey)
		if got, err := f.orgs.Licence(f.ctx, f.staff, v.ID); err != nil || !bytes.Equal(got.Data, pngLicence) {
			t.Fatalf("the resealed licence under the new key alone: %v", err)
		}
		f.orgs.Ring = secrets.NewRing(config.PIIPurpose, oldKey)
		if _, err := f.orgs.Licence(f.ctx, f.staff, v.ID); apperr.Code(err) != apperr.EUNAVAILABLE {
			t.Errorf("the old key alone still opens it: %v", err)
		}
	})
}
