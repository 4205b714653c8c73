package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"suanli/audit"
	"suanli/dbtest"
	"suanli/identity"
	"suanli/models"
	"suanli/models/identitystore"
	"suanli/routenames"
)

// The verification page: the privacy notice and its required consent,
// messages beside the fields on bad input (422), the code form, then the
// verified status with the ID number masked; the account page links to
// it. The admin console shows the identity masked, reveals the full
// number only through the audited POST (never cached), lists the SMS
// outbox and rejects with a reason; the rent page refuses an unverified
// renter whose wallet had cash paid in with a link to the page.
func TestRealNamePages(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := realNameApp(t, db)
		ctx := context.Background()
		root := mustUser(t, db, "rn-pages-root@example.com", "Root", true)
		idemRenter(t, a, "rn-pages-node@example.com") // readies the offer's node
		u, org, _ := cashRenter(t, a, "rn-pages@example.com", root)
		ac := loggedIn(a, "renter", u)
		page := a.url(routenames.RealNameShow)

		res, body := ac.do("GET", a.url(routenames.AccountShow), nil)
		must(t, res.StatusCode == http.StatusOK && strings.Contains(body, `href="`+page+`"`), "the account page links to %s", page)

		// The rent page refuses, with the way to verify.
		o := rtxOffer(t, db)
		res, body = ac.post(a.url(routenames.RentalsCreate, idParam(o.ID)), url.Values{"org_id": {idParam(org)}, "gpus": {"1"}, "term": {"on_demand"},
			"sla": {"standard"}, "ssh_public_key": {testSSHKey(t)}})
		must(t, res.StatusCode == http.StatusForbidden && strings.Contains(body, `id="rent-real-name"`) && strings.Contains(body, `href="`+page+`"`),
			"rent refused: %d %s", res.StatusCode, snippet(body))

		res, body = ac.do("GET", page, nil)
		must(t, res.StatusCode == http.StatusOK && res.Header.Get("Cache-Control") == "no-store", "page: %d %q", res.StatusCode, res.Header.Get("Cache-Control"))
		contains(t, body, `id="realname-required"`, `id="realname-notice"`, "Cybersecurity Law", "Personal Information Protection Law",
			`name="name"`, `name="id_number"`, `name="phone"`, `name="consent"`, `name="kind" value="individual"`, identity.NoticeVersion)

		res, body = ac.post(page, url.Values{"kind": {"individual"}, "name": {"张伟"}, "id_number": {testIDNumber[:17] + "7"}, "phone": {"12345"}})
		must(t, res.StatusCode == http.StatusUnprocessableEntity, "bad form: %d", res.StatusCode)
		for _, f := range []string{"id_number", "phone", "consent"} {
			must(t, fieldError(body, f) != "", "no message beside %s: %s", f, snippet(body))
		}
		must(t, fieldError(body, "name") == "", "a good name has a message: %q", fieldError(body, "name"))

		res, _ = ac.post(page, url.Values{"kind": {"individual"}, "name": {"张伟"}, "id_number": {testIDNumber}, "phone": {"13800138000"}, "consent": {"1"}})
		must(t, res.StatusCode == http.StatusSeeOther, "start: %d", res.StatusCode)
		_, body = ac.do("GET", page, nil)
		contains(t, body, `id="realname-confirm-form"`, `name="code"`, "138****8000", `data-status="pending"`)
		markupOK(t, "the pending page", body)

		res, body = ac.post(a.url(routenames.RealNameResend), nil)
		must(t, res.StatusCode == http.StatusTooManyRequests && res.Header.Get("Retry-After") != "" && fieldError(body, "resend") != "",
			"a resend within the minute: %d %s", res.StatusCode, snippet(body))

		code := smsTo(t, db, "13800138000")
		wrong := "000000"
		if code == wrong {
			wrong = "111111"
		}
		res, body = ac.post(a.url(routenames.RealNameConfirm), url.Values{"code": {wrong}})
		must(t, res.StatusCode == http.StatusUnprocessableEntity && fieldError(body, "code") != "", "wrong code: %d %s", res.StatusCode, snippet(body))
		res, _ = ac.post(a.url(routenames.RealNameConfirm), url.Values{"code": {code}})
		must(t, res.StatusCode == http.StatusSeeOther, "confirm: %d", res.StatusCode)
		_, body = ac.do("GET", page, nil)
		contains(t, body, `data-status="verified"`, "5101**********1236", "138****8000")
		markupOK(t, "the verified page", body)
		must(t, !strings.Contains(body, testIDNumber) && !strings.Contains(body, `id="realname-form"`), "the verified page shows the full ID or the form")

		// The admin console.
		adm := loggedIn(a, "admin", root)
		review := a.url(routenames.AdminRealName, idParam(u.ID))
		_, body = adm.do("GET", a.url(routenames.AdminUsers)+"?q=rn-pages@", nil)
		must(t, strings.Contains(body, `href="`+review+`"`), "the users page links to %s", review)
		res, body = adm.do("GET", review, nil)
		must(t, res.StatusCode == http.StatusOK && strings.Contains(body, "5101**********1236") && strings.Contains(body, "13800138000") &&
			!strings.Contains(body, testIDNumber) && strings.Contains(body, `id="realname-reveal-form"`), "review page: %d %s", res.StatusCode, snippet(body))
		res, _ = ac.post(a.url(routenames.AdminRealNameReveal, idParam(u.ID)), nil)
		must(t, res.StatusCode == http.StatusForbidden || res.StatusCode == http.StatusNotFound, "a user reveals: %d", res.StatusCode)
		reads := func() []models.AuditEntry {
			es, _, err := db.AuditLog(ctx, models.AuditFilter{Action: audit.RealNameIDRead})
			must(t, err == nil, "audit: %v", err)
			return es
		}
		must(t, len(reads()) == 0, "a refused read is audited")
		res, body = adm.post(a.url(routenames.AdminRealNameReveal, idParam(u.ID)), nil)
		must(t, res.StatusCode == http.StatusOK && strings.Contains(body, testIDNumber) && res.Header.Get("Cache-Control") == "no-store",
			"reveal: %d %q", res.StatusCode, res.Header.Get("Cache-Control"))
		markupOK(t, "the revealed ID", body)
		es := reads()
		must(t, len(es) == 1 && es[0].ActorID != nil && *es[0].ActorID == root.ID && es[0].Subject == fmt.Sprintf("user:%d", u.ID) &&
			strings.Contains(es[0].Detail, root.Email), "audit entries %+v", es)
		_, body = adm.do("GET", review, nil)
		must(t, !strings.Contains(body, testIDNumber), "the full ID stays on the page after the read")

		res, body = adm.do("GET", a.url(routenames.AdminSMS)+"?phone=138+0013+8000", nil)
		must(t, res.StatusCode == http.StatusOK && strings.Contains(body, "13800138000") && strings.Contains(body, code), "SMS outbox: %d %s", res.StatusCode, snippet(body))
		must(t, res.Header.Get("Cache-Control") == "no-store", "the SMS outbox (live codes, full numbers) may be cached: %q", res.Header.Get("Cache-Control"))

		res, body = adm.post(a.url(routenames.AdminRealNameReject, idParam(u.ID)), url.Values{"reason": {" "}})
		must(t, res.StatusCode == http.StatusUnprocessableEntity && fieldError(body, "reason") != "", "reject without a reason: %d", res.StatusCode)
		res, _ = adm.post(a.url(routenames.AdminRealNameReject, idParam(u.ID)), url.Values{"reason": {"photo does not match"}})
		must(t, res.StatusCode == http.StatusSeeOther, "reject: %d", res.StatusCode)
		_, body = ac.do("GET", page, nil)
		contains(t, body, `data-status="rejected"`, "photo does not match", `id="realname-form"`)
	})
}

// markupOK fails on a page's markup problems (markup_test.go).
func markupOK(t *testing.T, what, body string) {
	t.Helper()
	for _, p := range markupProblems(body) {
		t.Errorf("%s: %s", what, p)
	}
}

// Withdrawing on the page: the notice says what the code does (the
// withdrawal, what is kept; no deadline, no account closure); the
// verified page offers the withdrawal with a box to tick (no
// JavaScript); the POST needs the CSRF token (403, nothing deleted) and
// the box (422, the message beside it); done, the page shows the user
// unverified with the form again, the audit log has the withdrawal, and
// the rent page refuses again.
func TestRealNameWithdrawPage(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := realNameApp(t, db)
		ctx := context.Background()
		root := mustUser(t, db, "rn-wdp-root@example.com", "Root", true)
		idemRenter(t, a, "rn-wdp-node@example.com") // readies the offer's node
		u, org, _ := cashRenter(t, a, "rn-wdp@example.com", root)
		page, withdraw := a.url(routenames.RealNameShow), a.url(routenames.RealNameWithdraw)
		for _, lang := range []string{"zh-CN", "en"} {
			ac := loggedIn(a, "renter", u)
			res, body := ac.do("GET", page, nil, "Accept-Language", lang)
			must(t, res.StatusCode == http.StatusOK, "%s page: %d", lang, res.StatusCode)
			notice := between(body, `id="realname-notice"`, "</section>")
			for _, gone := range []string{"15", "工作日", "working days", "注销", "closed", "six months", "六个月"} {
				must(t, !strings.Contains(notice, gone), "%s: the notice still says %q", lang, gone)
			}
			must(t, !strings.Contains(body, `id="realname-withdraw-form"`), "%s: an unverified user is offered a withdrawal", lang)
		}
		contains(t, between(mustGet(t, loggedIn(a, "renter", u), page, "zh-CN"), `id="realname-notice"`, "</section>"),
			"撤回同意并删除实名信息", "审计日志", "发送记录", `id="realname-notice-gate"`)
		contains(t, between(mustGet(t, loggedIn(a, "renter", u), page, "en"), `id="realname-notice"`, "</section>"),
			"Withdraw consent and delete my ID data", "audit log", "write to the platform")

		ac := loggedIn(a, "renter", u)
		res, _ := ac.post(page, url.Values{"kind": {"individual"}, "name": {"张伟"}, "id_number": {testIDNumber}, "phone": {"13800138000"}, "consent": {"1"}})
		must(t, res.StatusCode == http.StatusSeeOther, "start: %d", res.StatusCode)
		res, _ = ac.post(a.url(routenames.RealNameConfirm), url.Values{"code": {smsTo(t, db, "13800138000")}})
		must(t, res.StatusCode == http.StatusSeeOther, "confirm: %d", res.StatusCode)
		res, body := ac.do("GET", page, nil)
		must(t, res.StatusCode == http.StatusOK, "verified page: %d", res.StatusCode)
		contains(t, body, `data-status="verified"`, `id="realname-withdraw-form"`, `action="`+withdraw+`"`, `name="confirm"`, `id="realname-withdraw-submit"`)
		markupOK(t, "the verified page with the withdrawal", body)

		// CSRF: without the token, refused and nothing deleted.
		res, _ = ac.do("POST", withdraw, url.Values{"confirm": {"1"}})
		must(t, res.StatusCode == http.StatusForbidden, "without the CSRF token: %d", res.StatusCode)
		st, err := identitystore.StatusOf(ctx, db, u.ID)
		must(t, err == nil && st == identitystore.Verified, "after the forged POST: %s %v", st, err)

		// The box.
		res, body = ac.post(withdraw, url.Values{})
		must(t, res.StatusCode == http.StatusUnprocessableEntity && fieldError(body, "confirm") != "", "without the box: %d %s", res.StatusCode, snippet(body))
		markupOK(t, "the refused withdrawal", body)
		st, _ = identitystore.StatusOf(ctx, db, u.ID)
		must(t, st == identitystore.Verified, "an unconfirmed withdrawal: %s", st)

		res, _ = ac.post(withdraw, url.Values{"confirm": {"1"}})
		must(t, res.StatusCode == http.StatusSeeOther && res.Header.Get("Location") == page, "withdraw: %d %q", res.StatusCode, res.Header.Get("Location"))
		_, body = ac.do("GET", page, nil)
		contains(t, body, `data-status="unverified"`, `id="realname-form"`)
		must(t, !strings.Contains(body, "5101**********1236") && !strings.Contains(body, "138****8000") && !strings.Contains(body, `id="realname-withdraw-form"`),
			"the page after the withdrawal still shows the data or the withdrawal: %s", snippet(body))
		es, _, err := db.AuditLog(ctx, models.AuditFilter{Action: audit.RealNameWithdrawn})
		must(t, err == nil && len(es) == 1 && es[0].ActorID != nil && *es[0].ActorID == u.ID && es[0].Subject == fmt.Sprintf("user:%d", u.ID),
			"withdrawn entries %+v %v", es, err)

		// The rent page refuses again.
		o := rtxOffer(t, db)
		res, body = ac.post(a.url(routenames.RentalsCreate, idParam(o.ID)), url.Values{"org_id": {idParam(org)}, "gpus": {"1"}, "term": {"on_demand"},
			"sla": {"standard"}, "ssh_public_key": {testSSHKey(t)}})
		must(t, res.StatusCode == http.StatusForbidden && strings.Contains(body, `id="rent-real-name"`), "rent after the withdrawal: %d %s", res.StatusCode, snippet(body))
	})
}

// mustGet is the body of GET path in lang, which must be 200.
func mustGet(t *testing.T, ac *actor, path, lang string) string {
	t.Helper()
	res, body := ac.do("GET", path, nil, "Accept-Language", lang)
	must(t, res.StatusCode == http.StatusOK, "GET %s: %d", path, res.StatusCode)
	return body
}
