package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"suanli/accounts"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/locales"
	"suanli/models"
	"suanli/routenames"
)

// A wallet's refunds and billing details through the API, as the wallet
// page's forms: only money paid in comes back (a bank transfer, here), at
// most what is refundable, for the organisation's admins; billing details
// replaced whole, checked as the form checks them. Another organisation's
// member gets 404, a member 403, and bad input changes nothing.
func TestWalletRefundsAndBillingThroughTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		ctx := context.Background()
		sfx := strings.ToLower(randomHex(t))
		owner, ownerTok := verifiedWithToken(t, a, "wallet-owner-"+sfx+"@example.com")
		_, otherTok := verifiedWithToken(t, a, "wallet-other-"+sfx+"@example.com")
		org := mustOrgs(t, db, owner.ID)[0].Org.ID
		admin, err := (&accounts.Service{DB: db}).CreateUser(ctx, "wallet-admin-"+sfx+"@example.com", testPassword, "Admin", true)
		must(t, err == nil, "admin: %v", err)
		w := &billing.Wallet{DB: db, BaseURL: "http://suanli.test"}
		tp, _, err := w.StartTopup(ctx, owner, org, 50_000, models.MethodBank, locales.EN)
		must(t, err == nil, "top-up: %v", err)
		must(t, w.ConfirmBankTransfer(ctx, admin, tp.ID, 50_000) == nil, "confirm the transfer")

		type refunds struct {
			OrgID         int64 `json:"org_id"`
			RefundableFen int64 `json:"refundable_fen"`
			Refunds       []struct {
				AmountFen int64  `json:"amount_fen"`
				Method    string `json:"method"`
				Status    string `json:"status"`
			} `json:"refunds"`
		}
		list := a.url(routenames.APIWalletRefunds)
		r := decode[refunds](t, mustStatus(t, a, ownerTok, "GET", list, "", http.StatusOK))
		must(t, r.OrgID == org && r.RefundableFen == 50_000 && len(r.Refunds) == 0, "before: %+v", r)
		mustStatus(t, a, otherTok, "GET", list+"?org_id="+idParam(org), "", http.StatusNotFound)
		mustStatus(t, a, otherTok, "POST", list, `{"org_id":`+idParam(org)+`,"amount_fen":100}`, http.StatusNotFound)
		for _, bad := range []string{`{"amount_fen":0}`, `{"amount_fen":-5}`, `{"amount_fen":50001}`} {
			mustInvalid(t, a, ownerTok, "POST", list, bad, http.StatusBadRequest, "amount_fen")
		}
		mustInvalid(t, a, ownerTok, "POST", list, `{"amount_fen":"all"}`, http.StatusBadRequest, "amount_fen")
		must(t, decode[refunds](t, mustStatus(t, a, ownerTok, "GET", list, "", http.StatusOK)).RefundableFen == 50_000, "a refused refund took money")
		r = decode[refunds](t, mustStatus(t, a, ownerTok, "POST", list, `{"amount_fen":20000}`, http.StatusCreated))
		must(t, r.RefundableFen == 30_000 && len(r.Refunds) == 1 && r.Refunds[0].AmountFen == 20_000 && r.Refunds[0].Method == models.MethodBank && r.Refunds[0].Status == "pending", "after: %+v", r)

		// Billing details.
		billingURL := a.url(routenames.APIWalletBilling)
		type billingOut struct {
			OrgID        int64  `json:"org_id"`
			InvoiceTitle string `json:"invoice_title"`
			TaxID        string `json:"tax_id"`
			HourlyCapFen *int64 `json:"hourly_cap_fen"`
		}
		b := decode[billingOut](t, mustStatus(t, a, ownerTok, "GET", billingURL, "", http.StatusOK))
		must(t, b.OrgID == org && b.InvoiceTitle == "" && b.HourlyCapFen == nil, "billing before: %+v", b)
		mustStatus(t, a, otherTok, "PUT", billingURL, `{"org_id":`+idParam(org)+`,"invoice_title":"X"}`, http.StatusNotFound)
		mustInvalid(t, a, ownerTok, "PUT", billingURL, `{"invoice_title":"Chengdu Vision Ltd","tax_id":"91510100!!","hourly_cap_fen":1000}`, http.StatusUnprocessableEntity, "tax_id")
		mustInvalid(t, a, ownerTok, "PUT", billingURL, `{"invoice_title":"Chengdu Vision Ltd","hourly_cap_fen":0}`, http.StatusUnprocessableEntity, "hourly_cap_fen")
		must(t, decode[billingOut](t, mustStatus(t, a, ownerTok, "GET", billingURL, "", http.StatusOK)).InvoiceTitle == "", "refused billing details were stored")
		b = decode[billingOut](t, mustStatus(t, a, ownerTok, "PUT", billingURL, `{"invoice_title":"Chengdu Vision Ltd","tax_id":"91510100MA61ABCD1X","hourly_cap_fen":200000}`, http.StatusOK))
		must(t, b.InvoiceTitle == "Chengdu Vision Ltd" && b.TaxID == "91510100MA61ABCD1X" && b.HourlyCapFen != nil && *b.HourlyCapFen == 200000, "billing: %+v", b)

		// A member of a team may see the wallet's billing, not change it
		// nor refund.
		team, err := (&accounts.Service{DB: db}).CreateOrg(ctx, owner, models.OrgTeam, "Billing team "+sfx)
		must(t, err == nil, "team: %v", err)
		member, memberTok := verifiedWithToken(t, a, "wallet-member-"+sfx+"@example.com")
		must(t, db.W.Create(&models.Membership{OrgID: team.ID, UserID: member.ID, Role: models.RoleMember, CreatedAt: db.Now()}).Error == nil, "add the member")
		mustStatus(t, a, memberTok, "GET", billingURL+"?org_id="+idParam(team.ID), "", http.StatusOK)
		mustStatus(t, a, memberTok, "PUT", billingURL, `{"org_id":`+idParam(team.ID)+`,"invoice_title":"X"}`, http.StatusForbidden)
		mustStatus(t, a, memberTok, "POST", list, `{"org_id":`+idParam(team.ID)+`,"amount_fen":1}`, http.StatusForbidden)
	})
}

// A rental's share links and the caller's API tokens through the API: a
// link made for a declared port (its token and URL shown once), listed
// without its token, revoked; a port not declared, or hours out of range,
// is a 400 naming the field and makes no link; another organisation's
// member gets 404. The output of a rental that is not running is a 409.
// Tokens are listed without their secret and revoked by id, the caller's
// own only.
func TestSharesAndTokensThroughTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		_, token, body := idemRenter(t, a, "shares-"+strings.ToLower(randomHex(t))+"@example.com")
		body = strings.TrimSuffix(body, "}") + `,"ports":[8000]}`
		st, _, resp, err := idemPost(a, "/api/v1/rentals", token, "", body)
		must(t, err == nil && st == http.StatusCreated, "rent: %d %s %v", st, resp, err)
		rental := decode[struct {
			ID int64 `json:"id"`
		}](t, resp).ID
		_, otherTok := apiToken(t, a, "shares-other-"+strings.ToLower(randomHex(t))+"@example.com")

		// Not running yet: its output is not there to read.
		code, _, _ := errorCode(t, mustStatus(t, a, token, "GET", a.url(routenames.APIRentalsLogs, idParam(rental)), "", http.StatusConflict))
		must(t, code == "conflict", "logs of a pending rental: %s", code)
		mustStatus(t, a, otherTok, "GET", a.url(routenames.APIRentalsLogs, idParam(rental)), "", http.StatusNotFound)

		shares := a.url(routenames.APIRentalsSharesList, idParam(rental))
		mustInvalid(t, a, token, "POST", shares, `{"port":9999,"hours":24}`, http.StatusBadRequest, "port")
		mustInvalid(t, a, token, "POST", shares, `{"port":8000,"hours":0}`, http.StatusBadRequest, "hours")
		mustInvalid(t, a, token, "POST", shares, `{"port":8000,"hours":169}`, http.StatusBadRequest, "hours")
		mustInvalid(t, a, token, "POST", shares, `{"port":"8000","hours":1}`, http.StatusBadRequest, "body")
		mustStatus(t, a, otherTok, "POST", shares, `{"port":8000,"hours":24}`, http.StatusNotFound)
		mustStatus(t, a, otherTok, "GET", shares, "", http.StatusNotFound)
		must(t, strings.Contains(mustStatus(t, a, token, "GET", shares, "", http.StatusOK), `"shares":[]`), "a refused link was made")
		made := decode[struct {
			ID    int64  `json:"id"`
			Port  int    `json:"port"`
			Token string `json:"token"`
			URL   string `json:"url"`
		}](t, mustStatus(t, a, token, "POST", shares, `{"port":8000,"hours":24}`, http.StatusCreated))
		must(t, made.Port == 8000 && strings.HasPrefix(made.Token, "shr_") && made.URL == "http://suanli.test/share/"+made.Token+"/", "the link: %+v", made)
		listed := mustStatus(t, a, token, "GET", shares, "", http.StatusOK)
		must(t, strings.Contains(listed, `"id":`+idParam(made.ID)) && !strings.Contains(listed, made.Token), "the list: %s", listed)
		revoke := a.url(routenames.APIRentalsSharesRevoke, idParam(rental), idParam(made.ID))
		mustStatus(t, a, otherTok, "DELETE", revoke, "", http.StatusNotFound)
		mustStatus(t, a, token, "DELETE", revoke, "", http.StatusNoContent)
		must(t, strings.Contains(mustStatus(t, a, token, "GET", shares, "", http.StatusOK), `"shares":[]`), "a revoked link is listed")
		mustStatus(t, a, token, "DELETE", revoke, "", http.StatusNotFound)

		// Tokens: listed without the secret; revoked by id, one's own only.
		tokens := mustStatus(t, a, token, "GET", a.url(routenames.APITokensList), "", http.StatusOK)
		must(t, strings.Contains(tokens, `"prefix":"`) && !strings.Contains(tokens, token), "tokens: %s", tokens)
		list := decode[struct {
			Tokens []struct {
				ID int64 `json:"id"`
			} `json:"tokens"`
		}](t, tokens)
		must(t, len(list.Tokens) == 1, "tokens: %s", tokens)
		own := a.url(routenames.APITokensRevoke, idParam(list.Tokens[0].ID))
		mustStatus(t, a, otherTok, "DELETE", own, "", http.StatusNotFound)
		mustStatus(t, a, token, "DELETE", a.url(routenames.APITokensRevoke, "x"), "", http.StatusNotFound)
		mustStatus(t, a, token, "DELETE", own, "", http.StatusNoContent)
		mustStatus(t, a, token, "GET", a.url(routenames.APITokensList), "", http.StatusUnauthorized)
	})
}
