package web_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"gorm.io/gorm"

	"suanli/models/ledger"
)

// The wallet's ledger CSV: a byte order mark (spreadsheets read Chinese
// correctly), the header, signed yuan, and a memo that would be a formula
// defused with an apostrophe.
func TestWalletLedgerCSV(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	ctx := context.Background()
	u := mustUser(t, a.db, "csv@example.com", "Cee Ess", false)
	orgs, err := a.db.OrgsOfUser(ctx, u.ID)
	if err != nil || len(orgs) == 0 {
		t.Fatalf("personal organisation: %v", err)
	}
	org := orgs[0].Org.ID
	err = a.db.Tx(ctx, func(tx *gorm.DB) error {
		return ledger.Post(tx, &ledger.LedgerTxn{Kind: "promo_credit", Memo: "=HYPERLINK(\"x\")", CreatedAt: a.db.Now().UTC()},
			ledger.Leg{Kind: ledger.AccWallet, OrgID: org, AmountFen: 1250},
			ledger.Leg{Kind: ledger.AccPromoCredit, AmountFen: -1250})
	})
	if err != nil {
		t.Fatal(err)
	}
	res, body := loggedIn(a, "owner", u).do("GET", "/orgs/"+strconv.FormatInt(org, 10)+"/wallet/ledger.csv", nil)
	must(t, res.StatusCode == 200, "status %d: %s", res.StatusCode, body)
	must(t, strings.HasPrefix(body, "\uFEFFentry_id,time_asia_shanghai,kind,memo,amount_cny,topup_id\n"), "head %q", body[:min(len(body), 80)])
	must(t, strings.Contains(body, `,promo_credit,"'=HYPERLINK(""x"")",12.5,`), "body %q", body)
}
