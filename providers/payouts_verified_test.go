package providers_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/billing"
	"suanli/config"
	"suanli/dbtest"
	"suanli/identity"
	"suanli/models"
	"suanli/models/identitystore"
	"suanli/models/ledger"
	"suanli/payments"
	"suanli/providers"
	"suanli/secrets"
)

// fakeConnect is Stripe Connect that records the transfers asked of it,
// and answers like a network failure while down.
type fakeConnect struct {
	mu        sync.Mutex
	down      bool
	transfers []string
}

func (c *fakeConnect) CreateExpressAccount(context.Context, string, string) (string, error) {
	return "acct_new", nil
}
func (c *fakeConnect) AccountLink(_ context.Context, id, _, _ string) (string, error) {
	return "https://connect.stripe.test/setup/" + id, nil
}
func (c *fakeConnect) Account(context.Context, string) (bool, bool, error) { return true, true, nil }
func (c *fakeConnect) Transfer(_ context.Context, _ string, _ int64, key string, _ int64) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return "", errors.New("dial tcp: connection refused")
	}
	c.transfers = append(c.transfers, key)
	return "tr_" + key, nil
}

func (c *fakeConnect) set(down bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down, c.transfers = down, nil
}

func (c *fakeConnect) sent() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.transfers...)
}

var _ payments.Connect = (*fakeConnect)(nil)

// licencePNG is a business licence file (it starts as a PNG does).
var licencePNG = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), []byte(strings.Repeat("LICENCE", 20))...)

// A Stripe payout recorded while the provider's organisation was
// verified, whose transfer did not go through (Stripe was down), is not
// transferred once an admin resets that verification: it stays pending,
// its money in clearing, and the admin's list of held payouts names it.
// Verified again (submitted and approved), the next run transfers it,
// once, with its own idempotency key. Both databases.
func TestPendingStripePayoutWaitsForReverification(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		acc := &accounts.Service{DB: db, BaseURL: "http://suanli.test"}
		user := func(email string, admin bool) *models.User {
			u, err := acc.CreateUser(ctx, email, "violet-kettle-1984", "", admin)
			if err != nil {
				t.Fatal(err)
			}
			return u
		}
		owner, root := user("owner@held-gpu.example", false), user("root@suanli.example", true)
		// Approved as a provider and verified by the operator.
		a, err := (&providers.Service{DB: db, BaseURL: "http://suanli.test"}).CreateVerified(ctx, owner, "Held GPU Co")
		if err != nil {
			t.Fatal(err)
		}
		pr := a.Provider
		const earned = int64(8_800)
		if err := db.Tx(ctx, func(tx *gorm.DB) error {
			if err := ledger.SetProviderConnect(tx, pr.ID, "acct_held", true, true); err != nil {
				return err
			}
			return ledger.Post(tx, &ledger.LedgerTxn{Kind: billing.ChargeKind, Memo: "test earnings", CreatedAt: time.Now()},
				ledger.Leg{Kind: ledger.AccPromoCredit, AmountFen: -earned},
				ledger.Leg{Kind: ledger.AccProviderPayable, OrgID: pr.ID, AmountFen: earned})
		}); err != nil {
			t.Fatal(err)
		}
		fc := &fakeConnect{down: true}
		p := &providers.Payouts{DB: db, Connect: fc, RealName: config.RealNameRequired}
		period := providers.PayoutPeriod(db.Now())
		payout := func() models.Payout {
			t.Helper()
			ps, err := ledger.PayoutsOfProvider(ctx, db, pr.ID)
			if err != nil || len(ps) != 1 {
				t.Fatalf("payouts of the provider: %+v %v", ps, err)
			}
			return ps[0]
		}
		clearing := func() int64 {
			t.Helper()
			b, err := ledger.AccountBalance(ctx, db, ledger.AccPaymentClearing, 0)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		balanced := func() {
			t.Helper()
			problems, err := ledger.LedgerCheck(ctx, db)
			if err != nil || len(problems) != 0 {
				t.Fatalf("ledger: %v %v", problems, err)
			}
		}

		// Recorded while verified; Stripe does not answer, so it waits.
		created, err := p.Run(ctx, period)
		if created != 1 || apperr.Code(err) != apperr.EUNAVAILABLE {
			t.Fatalf("first run: %d created, %v", created, err)
		}
		po := payout()
		if po.Method != models.PayoutStripe || po.Status != models.PayoutPending || po.AmountFen != earned {
			t.Fatalf("recorded: %+v", po)
		}
		clearingBefore := clearing()

		// An admin resets the organisation's verification.
		orgs := &identity.Orgs{DB: db, Ring: newRing(t), BaseURL: "http://suanli.test"}
		v, err := identitystore.LatestOrgVerification(ctx, db, a.Org.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := orgs.Reset(ctx, root, v.ID, "The licence was revoked"); err != nil {
			t.Fatal(err)
		}

		// Stripe answers again, but nothing is transferred: the payout
		// stays pending with its money in clearing, and no error says
		// the run failed.
		fc.set(false)
		for range 2 {
			created, err = p.Run(ctx, period)
			if created != 0 || err != nil {
				t.Fatalf("run while held: %d created, %v", created, err)
			}
		}
		if sent := fc.sent(); len(sent) != 0 {
			t.Fatalf("transfers for a held provider: %v", sent)
		}
		if got := payout(); got.Status != models.PayoutPending || got.StripeTransferID != "" || got.PaidAt != nil {
			t.Fatalf("held payout: %+v", got)
		}
		if clearing() != clearingBefore {
			t.Fatalf("clearing moved: %d, was %d", clearing(), clearingBefore)
		}
		balanced()
		held, err := p.Held(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(held) != 1 || held[0].ProviderID != pr.ID || held[0].BalanceFen != 0 ||
			len(held[0].Pending) != 1 || held[0].Pending[0] != (providers.PendingTransfer{PayoutID: po.ID, AmountFen: earned}) {
			t.Fatalf("held: %+v", held)
		}
		if wait, err := p.AwaitsOrgVerification(ctx, &pr); !wait || err != nil {
			t.Fatalf("the provider's page is not told: %v %v", wait, err)
		}

		// Verified again: the next run transfers it, once.
		sub, err := orgs.Submit(ctx, owner, a.Org.ID, identity.OrgSubmission{CreditCode: "91510100MA6CFC8W34", OrgName: "成都视觉科技有限公司",
			LegalRep: "王芳", Licence: licencePNG, Consent: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := orgs.Approve(ctx, root, sub.ID); err != nil {
			t.Fatal(err)
		}
		created, err = p.Run(ctx, period)
		if created != 0 || err != nil {
			t.Fatalf("run after verification: %d created, %v", created, err)
		}
		got := payout()
		if sent := fc.sent(); len(sent) != 1 || sent[0] != "payout-"+itoa(got.ID) {
			t.Fatalf("transfers after verification: %v", sent)
		}
		if got.Status != models.PayoutPaid || got.StripeTransferID != "tr_payout-"+itoa(got.ID) || got.PaidAt == nil {
			t.Fatalf("paid: %+v", got)
		}
		if held, err := p.Held(ctx); len(held) != 0 || err != nil {
			t.Fatalf("still held: %+v %v", held, err)
		}
		balanced()
	})
}

// With --real-name off the transfer is not held.
func TestPendingStripePayoutTransfersWithGateOff(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	ctx := context.Background()
	acc := &accounts.Service{DB: db, BaseURL: "http://suanli.test"}
	owner, err := acc.CreateUser(ctx, "owner@open-gpu.example", "violet-kettle-1984", "", false)
	if err != nil {
		t.Fatal(err)
	}
	root, err := acc.CreateUser(ctx, "root@suanli.example", "violet-kettle-1984", "", true)
	if err != nil {
		t.Fatal(err)
	}
	a, err := (&providers.Service{DB: db, BaseURL: "http://suanli.test"}).CreateVerified(ctx, owner, "Open GPU Co")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Tx(ctx, func(tx *gorm.DB) error {
		if err := ledger.SetProviderConnect(tx, a.Provider.ID, "acct_open", true, true); err != nil {
			return err
		}
		return ledger.Post(tx, &ledger.LedgerTxn{Kind: billing.ChargeKind, Memo: "test earnings", CreatedAt: time.Now()},
			ledger.Leg{Kind: ledger.AccPromoCredit, AmountFen: -5_000},
			ledger.Leg{Kind: ledger.AccProviderPayable, OrgID: a.Provider.ID, AmountFen: 5_000})
	}); err != nil {
		t.Fatal(err)
	}
	fc := &fakeConnect{down: true}
	p := &providers.Payouts{DB: db, Connect: fc, RealName: config.RealNameOff}
	period := providers.PayoutPeriod(db.Now())
	if _, err := p.Run(ctx, period); apperr.Code(err) != apperr.EUNAVAILABLE {
		t.Fatalf("first run: %v", err)
	}
	v, err := identitystore.LatestOrgVerification(ctx, db, a.Org.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&identity.Orgs{DB: db}).Reset(ctx, root, v.ID, "The licence was revoked"); err != nil {
		t.Fatal(err)
	}
	fc.set(false)
	if _, err := p.Run(ctx, period); err != nil {
		t.Fatal(err)
	}
	if sent := fc.sent(); len(sent) != 1 {
		t.Fatalf("transfers with the gate off: %v", sent)
	}
}

func newRing(t *testing.T) *secrets.Ring {
	t.Helper()
	k, err := secrets.ParseKey(secrets.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	return secrets.NewRing(config.PIIPurpose, k)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
