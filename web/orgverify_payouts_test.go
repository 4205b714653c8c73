package web_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/billing"
	"suanli/config"
	"suanli/dbtest"
	"suanli/handlers"
	"suanli/models"
	"suanli/models/identitystore"
	"suanli/models/ledger"
	"suanli/payments"
	"suanli/providers"
	"suanli/routenames"
)

// payoutGateFixture is two approved providers with money to be paid: one
// whose organisation verification (企业认证) is done (made by an
// operator) and one that only passed the provider review.
type payoutGateFixture struct {
	v                    *orgVerifyApp
	verified, unverified *providers.Account
	unverifiedOwner      *actor
}

const (
	verifiedPayable   = int64(5_000)
	unverifiedPayable = int64(8_800)
)

func newPayoutGateFixture(t *testing.T, db *models.DB, mode string, change ...func(*handlers.Handler)) *payoutGateFixture {
	t.Helper()
	v := newOrgVerifyApp(t, db, true, mode, change...)
	ctx := context.Background()
	ps := &providers.Service{DB: db, BaseURL: "http://suanli.test"}
	verified, err := ps.CreateVerified(ctx, mustUser(t, db, "ok@provider.example", "Vera Verified", false), "Verified GPU Co")
	if err != nil {
		t.Fatal(err)
	}
	ownerU := mustUser(t, db, "wait@provider.example", "Walt Waiting", false)
	unverified, err := ps.SignUp(ctx, ownerU, providers.Profile{CompanyName: "Waiting GPU Co", ContactName: "Li", ContactPhone: "+86 28 1234 5678",
		ContactEmail: ownerU.Email, LicenceNo: "91510100MA61234567", BankName: "Bank of Chengdu", BankAccountName: "Waiting GPU Co", BankAccountNo: "6222 0000 1111 2222"})
	if err != nil {
		t.Fatal(err)
	}
	// Approved as a provider (listed, earning), but not verified as an
	// organisation.
	if err := (&accounts.Service{DB: db}).Review(ctx, v.root.user, unverified.Org.ID, true, ""); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		id  int64
		fen int64
	}{{verified.Provider.ID, verifiedPayable}, {unverified.Provider.ID, unverifiedPayable}} {
		if err := db.Tx(ctx, func(tx *gorm.DB) error {
			return ledger.Post(tx, &ledger.LedgerTxn{Kind: billing.ChargeKind, Memo: "test earnings", CreatedAt: time.Now()},
				ledger.Leg{Kind: ledger.AccPromoCredit, AmountFen: -p.fen},
				ledger.Leg{Kind: ledger.AccProviderPayable, OrgID: p.id, AmountFen: p.fen})
		}); err != nil {
			t.Fatal(err)
		}
	}
	return &payoutGateFixture{v: v, verified: verified, unverified: unverified, unverifiedOwner: loggedIn(v.app, "waiting provider", ownerU)}
}

func (f *payoutGateFixture) payable(t *testing.T, providerID int64) int64 {
	t.Helper()
	b, err := ledger.PayableBalance(context.Background(), f.v.db, providerID)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (f *payoutGateFixture) payouts(t *testing.T, providerID int64) []models.Payout {
	t.Helper()
	ps, err := ledger.PayoutsOfProvider(context.Background(), f.v.db, providerID)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// run runs the month's payouts from the admin's payouts page and returns
// the page it comes back to.
func (f *payoutGateFixture) run(t *testing.T) string {
	t.Helper()
	res, body := f.v.root.post(f.v.url(routenames.AdminPayoutsRun), url.Values{"period": {matrixPayoutPeriod()}})
	must(t, res.StatusCode == http.StatusSeeOther, "payout run: %d\n%s", res.StatusCode, snippet(body))
	_, body = f.v.root.do("GET", res.Header.Get("Location"), nil)
	return body
}

// With --real-name required, a provider organisation that is not
// verified is not paid: no payout, its payable untouched, the reason on
// its earnings page and in the admin's run summary; the verified one is
// paid as before. Once verified, the next run pays it all.
func TestPayoutGateHoldsUnverifiedProviders(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newPayoutGateFixture(t, db, config.RealNameRequired)
		ctx := context.Background()
		txnsBefore := ledgerTxns(t, db)
		body := f.run(t)
		contains(t, body, en("orgverify.payouts.ran_held", 1, matrixPayoutPeriod(), 1), `id="payouts-held"`, `id="held-`+idParam(f.unverified.Org.ID)+`"`,
			"Waiting GPU Co", "¥88.00", en("orgverify.held.not_verified"))
		// Money moved for the verified provider only.
		ps := f.payouts(t, f.verified.Provider.ID)
		must(t, len(ps) == 1 && ps[0].AmountFen == verifiedPayable && f.payable(t, f.verified.Provider.ID) == 0, "the verified provider's payouts: %+v", ps)
		must(t, len(f.payouts(t, f.unverified.Provider.ID)) == 0, "the unverified provider was paid: %+v", f.payouts(t, f.unverified.Provider.ID))
		must(t, f.payable(t, f.unverified.Provider.ID) == unverifiedPayable, "the unverified provider's payable: %d, want %d untouched", f.payable(t, f.unverified.Provider.ID), unverifiedPayable)
		must(t, ledgerTxns(t, db) == txnsBefore+1, "ledger transactions: %d, want one more (the verified payout)", ledgerTxns(t, db)-txnsBefore)
		problems, err := ledger.LedgerCheck(ctx, db)
		must(t, err == nil && len(problems) == 0, "ledger: %v %v", problems, err)

		// The provider's earnings page says why, with the way to verify.
		earnings := f.v.url(routenames.ProviderEarnings, idParam(f.unverified.Provider.ID))
		_, body = f.unverifiedOwner.do("GET", earnings, nil)
		contains(t, body, `id="payout-held"`, en("orgverify.payout_held"), f.v.url(routenames.OrgVerify, idParam(f.unverified.Org.ID)))
		// The provider's own organisation page says so too.
		_, body = f.unverifiedOwner.do("GET", f.v.url(routenames.OrgsShow, idParam(f.unverified.Org.ID)), nil)
		contains(t, body, `id="orgverify-payouts-wait"`)

		// A second run still pays it nothing.
		f.run(t)
		must(t, len(f.payouts(t, f.unverified.Provider.ID)) == 0 && f.payable(t, f.unverified.Provider.ID) == unverifiedPayable, "a second run paid the unverified provider")

		// Verified: the next run pays its whole payable, and the notices go.
		if err := db.Tx(ctx, func(tx *gorm.DB) error { return identitystore.MarkOrgVerified(tx, f.unverified.Org.ID, time.Now()) }); err != nil {
			t.Fatal(err)
		}
		body = f.run(t)
		must(t, !strings.Contains(body, `id="payouts-held"`), "the payouts page still lists held providers")
		ps = f.payouts(t, f.unverified.Provider.ID)
		must(t, len(ps) == 1 && ps[0].AmountFen == unverifiedPayable && f.payable(t, f.unverified.Provider.ID) == 0, "after verification: %+v", ps)
		_, body = f.unverifiedOwner.do("GET", earnings, nil)
		must(t, !strings.Contains(body, `id="payout-held"`), "the earnings page still says payouts are held")
	})
}

// With --real-name off nothing changes: every approved provider is paid.
func TestPayoutGateOffPaysEveryone(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newPayoutGateFixture(t, db, config.RealNameOff)
		body := f.run(t)
		contains(t, body, en("admin.payouts.ran", 2, matrixPayoutPeriod()))
		must(t, !strings.Contains(body, `id="payouts-held"`), "payouts held with --real-name off")
		for _, p := range []struct {
			id, fen int64
		}{{f.verified.Provider.ID, verifiedPayable}, {f.unverified.Provider.ID, unverifiedPayable}} {
			ps := f.payouts(t, p.id)
			must(t, len(ps) == 1 && ps[0].AmountFen == p.fen && f.payable(t, p.id) == 0, "provider %d: %+v", p.id, ps)
		}
		_, body = f.unverifiedOwner.do("GET", f.v.url(routenames.ProviderEarnings, idParam(f.unverified.Provider.ID)), nil)
		must(t, !strings.Contains(body, `id="payout-held"`), "the earnings page says payouts are held with --real-name off")
	})
}

func ledgerTxns(t *testing.T, db *models.DB) int64 {
	t.Helper()
	var n int64
	if err := db.R.Model(&ledger.LedgerTxn{}).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// gateConnect is Stripe Connect that records the transfers asked of it,
// and answers like a network failure while down.
type gateConnect struct {
	mu        sync.Mutex
	down      bool
	transfers []string
}

func (c *gateConnect) CreateExpressAccount(context.Context, string, string) (string, error) {
	return "acct_new", nil
}
func (c *gateConnect) AccountLink(_ context.Context, id, _, _ string) (string, error) {
	return "https://connect.stripe.test/setup/" + id, nil
}
func (c *gateConnect) Account(context.Context, string) (bool, bool, error) { return true, true, nil }
func (c *gateConnect) Transfer(_ context.Context, _ string, _ int64, key string, _ int64) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return "", errors.New("dial tcp: connection refused")
	}
	c.transfers = append(c.transfers, key)
	return "tr_" + key, nil
}

// up lets transfers through from now on and forgets those made.
func (c *gateConnect) up() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down, c.transfers = false, nil
}

func (c *gateConnect) sent() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.transfers...)
}

var _ payments.Connect = (*gateConnect)(nil)

// A Stripe payout recorded while the provider was verified, whose
// transfer has not gone out (Stripe was down), is held once an admin
// resets the verification: runs transfer nothing, the payout stays
// pending, and the admin's payouts page names it with the reason. Verified
// again, the next run transfers it and the notice goes.
func TestPayoutGateHoldsRecordedTransferAfterReset(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		fc := &gateConnect{down: true}
		f := newPayoutGateFixture(t, db, config.RealNameRequired, func(h *handlers.Handler) { h.Payouts.Connect = fc })
		ctx := context.Background()
		pr := f.verified.Provider.ID
		if err := db.Tx(ctx, func(tx *gorm.DB) error { return ledger.SetProviderConnect(tx, pr, "acct_verified", true, true) }); err != nil {
			t.Fatal(err)
		}
		body := f.run(t)
		contains(t, body, en("admin.payouts.run_partial", 1, matrixPayoutPeriod()))
		ps := f.payouts(t, pr)
		must(t, len(ps) == 1 && ps[0].Method == models.PayoutStripe && ps[0].Status == models.PayoutPending, "recorded: %+v", ps)
		po := ps[0]

		v := latestOrgVerification(t, db, f.verified.Org.ID)
		res, _ := f.v.root.post(f.v.url(routenames.AdminOrgVerifyReset, idParam(v.ID)), url.Values{"reason": {"The licence was revoked"}})
		must(t, res.StatusCode == http.StatusSeeOther, "reset: %d", res.StatusCode)

		fc.up()
		body = f.run(t)
		contains(t, body, `id="held-`+idParam(f.verified.Org.ID)+`"`, `id="held-payout-`+idParam(po.ID)+`"`,
			en("orgverify.held.pending_transfer", po.ID, "¥50.00"))
		must(t, len(fc.sent()) == 0, "transfers for a held provider: %v", fc.sent())
		ps = f.payouts(t, pr)
		must(t, len(ps) == 1 && ps[0].Status == models.PayoutPending && ps[0].StripeTransferID == "", "held payout: %+v", ps)
		problems, err := ledger.LedgerCheck(ctx, db)
		must(t, err == nil && len(problems) == 0, "ledger: %v %v", problems, err)

		// Verified again: the next run transfers it, once.
		if err := db.Tx(ctx, func(tx *gorm.DB) error { return identitystore.MarkOrgVerified(tx, f.verified.Org.ID, time.Now()) }); err != nil {
			t.Fatal(err)
		}
		body = f.run(t)
		must(t, !strings.Contains(body, `id="held-payout-`), "the payouts page still holds the transfer")
		must(t, len(fc.sent()) == 1 && fc.sent()[0] == "payout-"+idParam(po.ID), "transfers after verification: %v", fc.sent())
		ps = f.payouts(t, pr)
		must(t, len(ps) == 1 && ps[0].Status == models.PayoutPaid, "after verification: %+v", ps)
	})
}
