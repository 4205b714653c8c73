package web_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/billing"
	"suanli/config"
	"suanli/dbtest"
	"suanli/handlers"
	"suanli/identity"
	"suanli/models"
	"suanli/models/identitystore"
	"suanli/routenames"
)

// realNameApp serves the router with real-name verification required,
// as `suanli serve` runs by default (the harness runs it off).
func realNameApp(t *testing.T, db *models.DB) *app {
	t.Helper()
	return newAppWith(t, db, func(h *handlers.Handler) { h.Identity.Mode = config.RealNameRequired })
}

// A valid resident ID number (GB 11643) for the tests.
const testIDNumber = "510107199003071236"

var smsCode = regexp.MustCompile(`\b\d{6}\b`)

// smsTo is the code of the newest text message to phone in the SMS outbox.
func smsTo(t *testing.T, db *models.DB, phone string) string {
	t.Helper()
	ms, _, err := identitystore.OutboxPage(context.Background(), db, phone, 1, 1)
	if err != nil || len(ms) == 0 {
		t.Fatalf("no SMS to %s: %v", phone, err)
	}
	return smsCode.FindString(ms[0].Body)
}

// realNameOf is GET /api/v1/me's real_name.
func realNameOf(t *testing.T, a *app, token string) string {
	t.Helper()
	st, me, body := apiCall(a, token, "GET", a.url(routenames.APIMe), "")
	must(t, st == http.StatusOK, "GET /api/v1/me: %d %s", st, body)
	s, _ := me["real_name"].(string)
	return s
}

// Verification through the API: 422 naming id_number or phone, 202
// pending with the code in the SMS outbox, 429 with Retry-After for a
// second code within the minute, 422 naming code for a wrong one, 200
// verified; /api/v1/me follows.
func TestRealNameThroughTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := realNameApp(t, db)
		_, _, token := apiUser(t, a, "rn-api@example.com")
		start, confirm := a.url(routenames.APIMeRealName), a.url(routenames.APIMeRealNameConfirm)
		must(t, realNameOf(t, a, token) == "unverified", "before: %s", realNameOf(t, a, token))

		body := func(id, phone string) string {
			return `{"kind":"individual","name":"张伟","id_number":"` + id + `","phone":"` + phone + `"}`
		}
		for _, tc := range []struct{ name, body, param string }{
			{"a mistyped ID number", body(testIDNumber[:17]+"7", "13800138000"), "id_number"},
			{"a short ID number", body("51010719900307", "13800138000"), "id_number"},
			{"a landline", body(testIDNumber, "028-85551234"), "phone"},
			{"a kind", `{"kind":"company","name":"张伟","id_number":"` + testIDNumber + `","phone":"13800138000"}`, "kind"},
		} {
			st, _, out, err := idemPost(a, start, token, "", tc.body)
			code, param, _ := errorCode(t, out)
			must(t, err == nil && st == http.StatusUnprocessableEntity && code == "invalid" && param == tc.param,
				"%s: %d %s (%v), want 422 naming %s", tc.name, st, out, err, tc.param)
		}
		st, _, out, _ := idemPost(a, start, token, "", `{"kind":"individual","name":"张伟","id_number":"`+testIDNumber+`","phone":"abc"`)
		must(t, st == http.StatusBadRequest, "a broken body: %d %s", st, out)
		must(t, realNameOf(t, a, token) == "unverified", "refused starts changed the status")

		st, _, out, _ = idemPost(a, start, token, "", body(testIDNumber, "+8613800138000"))
		must(t, st == http.StatusAccepted, "start: %d %s", st, out)
		rn := decode[map[string]any](t, out)
		must(t, rn["status"] == "pending" && rn["id_number_masked"] == "5101**********1236" && rn["phone_masked"] == "138****8000" &&
			rn["code_expires_at"] != nil && !strings.Contains(out, testIDNumber), "started: %s", out)
		must(t, realNameOf(t, a, token) == "pending", "after start: %s", realNameOf(t, a, token))

		st, h, out, _ := idemPost(a, start, token, "", body(testIDNumber, "13800138000"))
		code, param, _ := errorCode(t, out)
		must(t, st == http.StatusTooManyRequests && code == "rate_limited" && param == "phone" && h.Get("Retry-After") != "",
			"a second code within the minute: %d %s (Retry-After %q)", st, out, h.Get("Retry-After"))

		sms := smsTo(t, db, "13800138000")
		wrong := "000000"
		if sms == wrong {
			wrong = "111111"
		}
		st, _, out, _ = idemPost(a, confirm, token, "", `{"code":"`+wrong+`"}`)
		code, param, _ = errorCode(t, out)
		must(t, st == http.StatusUnprocessableEntity && code == "invalid" && param == "code", "a wrong code: %d %s", st, out)
		st, _, out, _ = idemPost(a, confirm, token, "", `{"code":"`+sms+`"}`)
		must(t, st == http.StatusOK && strings.Contains(out, `"status":"verified"`), "confirm: %d %s", st, out)
		must(t, realNameOf(t, a, token) == "verified", "after confirm: %s", realNameOf(t, a, token))
		st, _, out, _ = idemPost(a, start, token, "", body(testIDNumber, "13800138001"))
		must(t, st == http.StatusConflict, "a verified user starts again: %d %s", st, out)
		st, _, out, _ = idemPost(a, confirm, token, "", `{"code":"`+sms+`"}`)
		must(t, st == http.StatusConflict, "the code again: %d %s", st, out)
	})
}

// cashRenter is a user whose personal wallet had cash paid in (a bank
// transfer an admin confirmed), with an API token.
func cashRenter(t *testing.T, a *app, email string, root *models.User) (*models.User, int64, string) {
	t.Helper()
	ctx := context.Background()
	u, org, token := apiUser(t, a, email)
	w := &billing.Wallet{DB: a.db}
	tp, _, err := w.StartTopup(ctx, u, org, 1_000_000, models.MethodBank, "en")
	must(t, err == nil, "top-up: %v", err)
	must(t, w.ConfirmBankTransfer(ctx, root, tp.ID, 1_000_000) == nil, "confirm the transfer")
	return u, org, token
}

// The rent gate, through the API: an unverified renter whose wallet had
// cash paid in is refused 403 real_name_required (and rents nothing);
// one on trial credit alone rents; verified, or with --real-name off,
// the cash renter rents.
func TestRentGateThroughTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := realNameApp(t, db)
		_, _, rentBody := idemRenter(t, a, "rn-node@example.com") // readies the offer's node
		root := mustUser(t, db, "rn-root@example.com", "Root", true)
		ctx := context.Background()

		cash, cashOrg, cashToken := cashRenter(t, a, "rn-cash@example.com", root)
		st, _, out, _ := idemPost(a, "/api/v1/rentals", cashToken, "", rentBody)
		code, _, msg := errorCode(t, out)
		must(t, st == http.StatusForbidden && code == "real_name_required" && strings.Contains(msg, "real-name"),
			"unverified with cash: %d %s, want 403 real_name_required", st, out)
		must(t, rentalsOf(t, db, cashOrg) == 0, "the refused rent rented")

		trial, err := (&accounts.Service{DB: db}).CreateUser(ctx, "rn-trial@example.com", testPassword, "Trial", false)
		must(t, err == nil, "user: %v", err)
		orgs, _ := db.OrgsOfUser(ctx, trial.ID)
		must(t, db.Tx(ctx, func(tx *gorm.DB) error {
			return billing.CreditPromo(tx, orgs[0].Org.ID, 1_000_000, "trial_credit", "trial", nil, nil, db.Now().UTC())
		}) == nil, "trial credit")
		trialToken, _, err := (&accounts.Service{DB: db}).CreateAPIToken(ctx, trial, "t")
		must(t, err == nil, "token: %v", err)
		st, _, out, _ = idemPost(a, "/api/v1/rentals", trialToken, "", rentBody)
		must(t, st == http.StatusCreated, "unverified on trial credit: %d %s", st, out)

		must(t, (&identity.Service{DB: db}).VerifyByOperator(ctx, cash) == nil, "verify by the operator")
		st, _, out, _ = idemPost(a, "/api/v1/rentals", cashToken, "", rentBody)
		must(t, st == http.StatusCreated, "verified with cash: %d %s", st, out)
	})
}

// With --real-name off (the harness's mode) an unverified renter whose
// wallet had cash paid in rents, and nothing asks for verification.
func TestRentWithRealNameOff(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	a := newApp(t, db)
	_, _, rentBody := idemRenter(t, a, "off-node@example.com")
	root := mustUser(t, db, "off-root@example.com", "Root", true)
	_, _, token := cashRenter(t, a, "off-cash@example.com", root)
	st, _, out, _ := idemPost(a, "/api/v1/rentals", token, "", rentBody)
	must(t, st == http.StatusCreated, "--real-name off: %d %s", st, out)
	must(t, realNameOf(t, a, token) == "unverified", "status %s", realNameOf(t, a, token))
}

// Withdrawing through the API: DELETE /api/v1/me/real-name takes no body
// (one is 400, nothing withdrawn); it is 204 and
// the caller is unverified, so the next rent of a renter whose wallet had
// cash paid in is 403 real_name_required; a second DELETE (nothing held)
// is 204 too; a new verification with the same ID number works, and the
// renter rents again.
func TestRealNameWithdrawThroughTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := realNameApp(t, db)
		_, _, rentBody := idemRenter(t, a, "rn-wd-node@example.com") // readies the offer's node
		root := mustUser(t, db, "rn-wd-root@example.com", "Root", true)
		u, org, token := cashRenter(t, a, "rn-wd@example.com", root)
		start, confirm, withdraw := a.url(routenames.APIMeRealName), a.url(routenames.APIMeRealNameConfirm), a.url(routenames.APIMeRealNameWithdraw)
		verify := func(phone string) {
			t.Helper()
			st, _, out, _ := idemPost(a, start, token, "", `{"kind":"individual","name":"张伟","id_number":"`+testIDNumber+`","phone":"`+phone+`"}`)
			must(t, st == http.StatusAccepted, "start: %d %s", st, out)
			st, _, out, _ = idemPost(a, confirm, token, "", `{"code":"`+smsTo(t, db, phone)+`"}`)
			must(t, st == http.StatusOK, "confirm: %d %s", st, out)
		}
		verify("13800138000")
		st, _, out, _ := idemPost(a, "/api/v1/rentals", token, "", rentBody)
		must(t, st == http.StatusCreated, "verified with cash: %d %s", st, out)

		st, _, out = apiCall(a, token, "DELETE", withdraw, `{"reason":"x"}`)
		must(t, st == http.StatusBadRequest && realNameOf(t, a, token) == "verified", "a body: %d %s, want 400 and nothing withdrawn", st, out)
		st, _, out = apiCall(a, token, "DELETE", withdraw, "")
		must(t, st == http.StatusNoContent && out == "", "withdraw: %d %q", st, out)
		must(t, realNameOf(t, a, token) == "unverified", "after the withdrawal: %s", realNameOf(t, a, token))
		row, err := identitystore.IndividualOf(context.Background(), db, u.ID)
		must(t, row == nil && err != nil, "the row after the withdrawal: %+v %v", row, err)

		before := rentalsOf(t, db, org)
		st, _, out, _ = idemPost(a, "/api/v1/rentals", token, "", rentBody)
		code, _, _ := errorCode(t, out)
		must(t, st == http.StatusForbidden && code == "real_name_required", "withdrawn with cash: %d %s, want 403 real_name_required", st, out)
		must(t, rentalsOf(t, db, org) == before, "the refused rent rented")

		st, _, out = apiCall(a, token, "DELETE", withdraw, "")
		must(t, st == http.StatusNoContent, "withdraw with nothing held: %d %s", st, out)

		verify("13900139000") // the same ID number: the blind index let it go
		must(t, realNameOf(t, a, token) == "verified", "verified again: %s", realNameOf(t, a, token))
		st, _, out, _ = idemPost(a, "/api/v1/rentals", token, "", rentBody)
		must(t, st == http.StatusCreated, "verified again with cash: %d %s", st, out)
	})
}
