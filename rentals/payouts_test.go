package rentals_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"
	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/audit"
	"suanli/dbtest"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/payments"
	"suanli/providers"
	"suanli/stripemock"
)

// payoutFixture is the SLA fixture (a seeded market and a funded renter)
// plus providers that are organisations.
type payoutFixture struct {
	*slaFixture
	svc   *accounts.Service
	provs *providers.Service
	n     int
	// rentals counts rentals made, to keep their workspace ids apart.
	rentals int
}

func newPayoutFixture(t *testing.T, db *models.DB) *payoutFixture {
	t.Helper()
	f := &payoutFixture{slaFixture: newSLAFixture(t, db)}
	f.svc = &accounts.Service{DB: db, BaseURL: "http://suanli.test", EduSuffixes: accounts.DefaultEduSuffixes}
	f.provs = &providers.Service{DB: db, BaseURL: "http://suanli.test"}
	return f
}

// user creates a user.
func (f *payoutFixture) user(email string, admin bool) *models.User {
	f.t.Helper()
	u, err := f.svc.CreateUser(f.ctx, email, "provider-pass-2026", "", admin)
	if err != nil {
		f.t.Fatal(err)
	}
	return u
}

// provider creates a provider organisation owned by a new user: verified
// (approved) or still pending.
func (f *payoutFixture) provider(verified bool) (*models.Provider, *models.User) {
	f.t.Helper()
	f.n++
	u := f.user("owner"+string(rune('a'+f.n))+"@provider.example", false)
	var acc *providers.Account
	var err error
	if verified {
		acc, err = f.provs.CreateVerified(f.ctx, u, "Provider "+string(rune('A'+f.n)))
	} else {
		acc, err = f.provs.SignUp(f.ctx, u, providers.Profile{CompanyName: "Pending " + string(rune('A'+f.n)),
			ContactName: "Li", ContactPhone: "+86 28 1234 5678", ContactEmail: u.Email, LicenceNo: "91510100MA61234567",
			BankName: "Bank of Chengdu", BankAccountName: "Pending Co", BankAccountNo: "6222 0000 1111 2222"})
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return &acc.Provider, u
}

// rentalOf is a fixture rental whose GPUs belong to the provider.
func (f *payoutFixture) rentalOf(pr *models.Provider, since time.Time) *models.Rental {
	f.t.Helper()
	// The fixture names a workspace after its start: a microsecond apart
	// keeps two rentals that start together apart.
	r := f.rental("standard", since.Add(time.Duration(f.rentals)*time.Microsecond))
	f.rentals++
	r.ProviderID = pr.ID
	if err := f.db.W.Model(r).Update("provider_id", pr.ID).Error; err != nil {
		f.t.Fatal(err)
	}
	return r
}

// earn gives a provider a payable balance through a charge split as the
// meter splits it.
func (f *payoutFixture) earn(pr *models.Provider, grossFen int64, at time.Time) {
	f.t.Helper()
	r := f.rentalOf(pr, at.Add(-time.Hour))
	f.charge(r, grossFen, at)
}

func (f *payoutFixture) payable(providerID int64) int64 {
	f.t.Helper()
	b, err := ledger.PayableBalance(f.ctx, f.db, providerID)
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

func (f *payoutFixture) payouts(providerID int64) []models.Payout {
	f.t.Helper()
	ps, err := ledger.PayoutsOfProvider(f.ctx, f.db, providerID)
	if err != nil {
		f.t.Fatal(err)
	}
	return ps
}

func (f *payoutFixture) txnCount(kind string) int64 {
	f.t.Helper()
	var n int64
	if err := f.db.R.Model(&ledger.LedgerTxn{}).Where("kind = ?", kind).Count(&n).Error; err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *payoutFixture) audits(action string) []models.AuditEntry {
	f.t.Helper()
	es, _, err := f.db.AuditLog(f.ctx, models.AuditFilter{Action: action})
	if err != nil {
		f.t.Fatal(err)
	}
	return es
}

// The case: gross ¥10,000.00 of charges with 12% commission and a
// ¥150.00 SLA credit that the provider's downtime caused, posted by the
// real SLA pass → a payout of ¥8,650.00, the payable at zero, the ledger
// balanced; a second run (and two at once) pays nothing more. Demo and
// unverified providers get nothing.
func TestMonthlyPayoutIsPayableAfterCommissionAndSLACredits(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newPayoutFixture(t, db)
		pr, _ := f.provider(true)

		// October: a 72-hour rental billed ¥1,500.00 with a 30-minute
		// incident (uptime 99.31% < 99.5% → 10% of ¥1,500 = ¥150, more
		// than 10 × the downtime's cost of at most ¥10), and another
		// rental on the same provider billed ¥8,500.00 without downtime.
		down := f.rentalOf(pr, sh(2026, 10, 5, 9, 0))
		f.charge(down, 150_000, sh(2026, 10, 7, 12, 0))
		f.event(down, sh(2026, 10, 6, 10, 0), "incident")
		f.event(down, sh(2026, 10, 6, 10, 30), "migrated")
		f.stop(down, sh(2026, 10, 8, 9, 0))
		up := f.rentalOf(pr, sh(2026, 10, 5, 9, 0))
		f.charge(up, 850_000, sh(2026, 10, 7, 12, 0))
		f.stop(up, sh(2026, 10, 8, 9, 0))
		if got := f.payable(pr.ID); got != 880_000 {
			t.Fatalf("payable after ¥10,000 gross at 12%% commission: %d fen, want 880,000", got)
		}
		*f.now = sh(2026, 10, 8, 10, 0)
		if res := f.settle(); res.Credits != 1 || res.Fen != 15_000 {
			t.Fatalf("SLA pass: %+v, want one credit of 15,000 fen", res)
		}
		if got := f.payable(pr.ID); got != 865_000 {
			t.Fatalf("payable after the SLA credit: %d fen, want 865,000", got)
		}
		if es := f.audits(audit.SLACredit); len(es) != 1 || *es[0].AmountFen != 15_000 || es[0].Subject != "rental:"+itoa(down.ID) || es[0].ActorID != nil {
			t.Errorf("the SLA credit's audit entry: %+v", es)
		}

		// A demo provider (no organisation) and an unverified one earn too.
		demoProv := f.offer.ProviderID
		f.charge(f.rental("standard", sh(2026, 10, 9, 9, 0)), 10_000, sh(2026, 10, 9, 10, 0))
		pending, _ := f.provider(false)
		f.earn(pending, 20_000, sh(2026, 10, 9, 10, 0))

		p := &providers.Payouts{DB: db}
		// October has not ended yet.
		if _, err := p.Run(f.ctx, "2026-10"); apperr.Code(err) != apperr.EINVALID {
			t.Fatalf("a run for a month not yet over: %v", err)
		}
		*f.now = sh(2026, 11, 1, 2, 0)
		if got := providers.PayoutPeriod(*f.now); got != "2026-10" {
			t.Fatalf("the period paid on 1 November: %s", got)
		}
		for _, bad := range []string{"", "2026-13", "October", "2026-11"} {
			if _, err := p.Run(f.ctx, bad); apperr.Code(err) != apperr.EINVALID {
				t.Errorf("period %q: %v", bad, err)
			}
		}
		created, err := p.Run(f.ctx, "2026-10")
		if err != nil || created != 1 {
			t.Fatalf("run: created %d, %v", created, err)
		}
		ps := f.payouts(pr.ID)
		if len(ps) != 1 || ps[0].AmountFen != 865_000 || ps[0].Period != "2026-10" || ps[0].Method != models.PayoutBank ||
			ps[0].Status != models.PayoutPending || ps[0].TxnID == nil {
			t.Fatalf("payouts: %+v", ps)
		}
		if got := f.payable(pr.ID); got != 0 {
			t.Errorf("payable after the payout: %d", got)
		}
		var clearing int64
		db.R.Raw(`SELECT e.amount_fen FROM ledger_entries e JOIN ledger_accounts a ON a.id = e.account_id
			WHERE e.txn_id = ? AND a.kind = ?`, *ps[0].TxnID, ledger.AccBankClearing).Scan(&clearing)
		if clearing != 865_000 {
			t.Errorf("bank clearing got %d fen, want 865,000", clearing)
		}
		f.ledgerBalanced()
		if n := len(f.payouts(demoProv)) + len(f.payouts(pending.ID)); n != 0 {
			t.Errorf("demo and unverified providers got %d payouts", n)
		}
		if f.payable(demoProv) <= 0 || f.payable(pending.ID) != 17_600 {
			t.Errorf("the unpaid providers' payables: demo %d, pending %d", f.payable(demoProv), f.payable(pending.ID))
		}
		if es := f.audits(audit.PayoutCreated); len(es) != 1 || *es[0].AmountFen != 865_000 || es[0].ActorID != nil {
			t.Errorf("audit: %+v", es)
		}

		// Earnings after the run wait for next month's payout; running
		// October again, once or twice at once, pays nothing.
		f.earn(pr, 1_000, sh(2026, 11, 1, 3, 0))
		*f.now = sh(2026, 11, 1, 4, 0)
		txns := f.txnCount(providers.PayoutKind)
		var wg sync.WaitGroup
		var errs [3]error
		var counts [3]int
		for i := range 3 {
			wg.Go(func() { counts[i], errs[i] = p.Run(f.ctx, "2026-10") })
		}
		wg.Wait()
		for i := range 3 {
			if errs[i] != nil || counts[i] != 0 {
				t.Errorf("rerun %d: created %d, %v", i, counts[i], errs[i])
			}
		}
		if ps := f.payouts(pr.ID); len(ps) != 1 || f.txnCount(providers.PayoutKind) != txns {
			t.Errorf("after reruns: %d payouts, %d payout transactions (was %d)", len(ps), f.txnCount(providers.PayoutKind), txns)
		}
		if got := f.payable(pr.ID); got != 880 {
			t.Errorf("November's earnings: payable %d, want 880", got)
		}
		f.ledgerBalanced()
	})
}

// Two first runs at once record one payout per provider: the unique key
// and the payable's lock decide, not the order.
func TestConcurrentPayoutRunsPayOnce(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newPayoutFixture(t, db)
		var provs []*models.Provider
		for range 3 {
			pr, _ := f.provider(true)
			f.earn(pr, 100_000, sh(2026, 10, 10, 12, 0))
			provs = append(provs, pr)
		}
		*f.now = sh(2026, 11, 1, 2, 0)
		p := &providers.Payouts{DB: db}
		var wg sync.WaitGroup
		var total [4]int
		for i := range 4 {
			wg.Go(func() {
				n, err := p.Run(f.ctx, "2026-10")
				if err != nil {
					t.Errorf("run %d: %v", i, err)
				}
				total[i] = n
			})
		}
		wg.Wait()
		if sum := total[0] + total[1] + total[2] + total[3]; sum != 3 {
			t.Errorf("runs created %v payouts, want 3 in all", total)
		}
		for _, pr := range provs {
			if ps := f.payouts(pr.ID); len(ps) != 1 || ps[0].AmountFen != 88_000 || f.payable(pr.ID) != 0 {
				t.Errorf("provider %d: %+v, payable %d", pr.ID, ps, f.payable(pr.ID))
			}
		}
		if n := f.txnCount(providers.PayoutKind); n != 3 {
			t.Errorf("%d payout transactions", n)
		}
		f.ledgerBalanced()
	})
}

// fakeConnect is Stripe Connect answering as told, per account.
type fakeConnect struct {
	mu    sync.Mutex
	fail  map[string]error
	calls []string
}

func (c *fakeConnect) CreateExpressAccount(context.Context, string, string) (string, error) {
	return "acct_new", nil
}
func (c *fakeConnect) AccountLink(_ context.Context, id, _, _ string) (string, error) {
	return "https://connect.stripe.test/setup/" + id, nil
}
func (c *fakeConnect) Account(context.Context, string) (bool, bool, error) { return true, true, nil }
func (c *fakeConnect) Transfer(_ context.Context, acct string, _ int64, key string, _ int64) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, key)
	if err := c.fail[acct]; err != nil {
		return "", err
	}
	return "tr_" + key, nil
}

var _ payments.Connect = (*fakeConnect)(nil)

// Stripe payouts: a transfer is made after the commit with the payout's
// idempotency key; one Stripe refuses fails the payout and returns the
// money to payable (once); one that could not reach Stripe stays pending
// and goes on the next run.
func TestStripePayoutTransfersAndFailures(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newPayoutFixture(t, db)
		connect := func(acct string) *models.Provider {
			pr, _ := f.provider(true)
			if err := db.Tx(f.ctx, func(tx *gorm.DB) error { return ledger.SetProviderConnect(tx, pr.ID, acct, true, true) }); err != nil {
				t.Fatal(err)
			}
			f.earn(pr, 100_000, sh(2026, 10, 10, 12, 0))
			return pr
		}
		ok, refused, flaky := connect("acct_ok"), connect("acct_refused"), connect("acct_flaky")
		fc := &fakeConnect{fail: map[string]error{
			"acct_refused": &stripe.Error{HTTPStatusCode: 400, Msg: "No such destination: 'acct_refused'"},
			"acct_flaky":   &stripe.Error{HTTPStatusCode: 500, Msg: "internal error"},
		}}
		p := &providers.Payouts{DB: db, Connect: fc}
		*f.now = sh(2026, 11, 1, 2, 0)
		created, err := p.Run(f.ctx, "2026-10")
		if created != 3 || apperr.Code(err) != apperr.EUNAVAILABLE {
			t.Fatalf("run: %d created, err %v (want the flaky transfer's EUNAVAILABLE)", created, err)
		}
		if ps := f.payouts(ok.ID); len(ps) != 1 || ps[0].Method != models.PayoutStripe || ps[0].Status != models.PayoutPaid ||
			ps[0].StripeTransferID != "tr_payout-"+itoa(ps[0].ID) || ps[0].PaidAt == nil || f.payable(ok.ID) != 0 {
			t.Errorf("paid: %+v, payable %d", ps, f.payable(ok.ID))
		}
		if ps := f.payouts(refused.ID); len(ps) != 1 || ps[0].Status != models.PayoutFailed || ps[0].Failure == "" || f.payable(refused.ID) != 88_000 {
			t.Errorf("refused: %+v, payable %d (want the 88,000 back)", ps, f.payable(refused.ID))
		}
		if ps := f.payouts(flaky.ID); len(ps) != 1 || ps[0].Status != models.PayoutPending || f.payable(flaky.ID) != 0 {
			t.Errorf("flaky: %+v, payable %d", ps, f.payable(flaky.ID))
		}
		if n := f.txnCount(providers.PayoutReturnKind); n != 1 {
			t.Errorf("%d payout returns", n)
		}
		f.ledgerBalanced()

		// Stripe answers again: the next run sends the pending one, with
		// the same key, and nothing else.
		delete(fc.fail, "acct_flaky")
		fc.calls = nil
		if created, err := p.Run(f.ctx, "2026-10"); created != 0 || err != nil {
			t.Fatalf("second run: %d, %v", created, err)
		}
		fp := f.payouts(flaky.ID)[0]
		if fp.Status != models.PayoutPaid || len(fc.calls) != 1 || fc.calls[0] != "payout-"+itoa(fp.ID) {
			t.Errorf("retry: %+v, calls %v", fp, fc.calls)
		}
		// A failed payout cannot be failed or paid again.
		admin := f.user("ops@suanli.test", true)
		rp := f.payouts(refused.ID)[0]
		if err := p.MarkFailed(f.ctx, admin, rp.ID, "again"); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("failing a failed payout: %v", err)
		}
		if f.payable(refused.ID) != 88_000 || f.txnCount(providers.PayoutReturnKind) != 1 {
			t.Errorf("the return was posted twice")
		}
		if es := f.audits("payout."); len(es) != 3+2+1 {
			t.Errorf("audit: %d payout entries, want 3 created, 2 paid, 1 failed", len(es))
		}
		f.ledgerBalanced()
	})
}

// With Stripe pointed at stripe-mock, a Connect payout goes through the
// real gateway and is paid.
func TestStripePayoutThroughStripeMock(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	f := newPayoutFixture(t, db)
	pr, _ := f.provider(true)
	if err := db.Tx(f.ctx, func(tx *gorm.DB) error { return ledger.SetProviderConnect(tx, pr.ID, "acct_1", true, true) }); err != nil {
		t.Fatal(err)
	}
	f.earn(pr, 100_000, sh(2026, 10, 10, 12, 0))
	*f.now = sh(2026, 11, 1, 2, 0)
	p := &providers.Payouts{DB: db, Connect: payments.NewStripe("sk_test_suanli", stripemock.Start(t))}
	if n, err := p.Run(f.ctx, "2026-10"); n != 1 || err != nil {
		t.Fatalf("run: %d %v", n, err)
	}
	if ps := f.payouts(pr.ID); len(ps) != 1 || ps[0].Status != models.PayoutPaid || ps[0].StripeTransferID == "" {
		t.Errorf("payout: %+v", ps)
	}
	f.ledgerBalanced()
}

// Bank-transfer payouts: only a platform admin marks one paid, and only
// with the bank's reference; marking it failed returns the money.
func TestMarkPayoutPaidOrFailed(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newPayoutFixture(t, db)
		a, owner := f.provider(true)
		b, _ := f.provider(true)
		f.earn(a, 100_000, sh(2026, 10, 10, 12, 0))
		f.earn(b, 50_000, sh(2026, 10, 10, 12, 0))
		*f.now = sh(2026, 11, 1, 2, 0)
		p := &providers.Payouts{DB: db}
		if _, err := p.Run(f.ctx, "2026-10"); err != nil {
			t.Fatal(err)
		}
		pa, pb := f.payouts(a.ID)[0], f.payouts(b.ID)[0]
		admin := f.user("ops@suanli.test", true)

		if err := p.MarkPaid(f.ctx, owner, pa.ID, "ICBC-20261105-0001"); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("the provider's owner marking paid: %v", err)
		}
		if err := p.MarkPaid(f.ctx, nil, pa.ID, "ICBC-20261105-0001"); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("nobody marking paid: %v", err)
		}
		err := p.MarkPaid(f.ctx, admin, pa.ID, "   ")
		var fields apperr.Fields
		if !errors.As(err, &fields) || fields[0].Field != "bank_reference" {
			t.Errorf("no reference: %v", err)
		}
		// Bytes the databases cannot store are a message, not a 500.
		for _, bad := range []string{"ICBC\x00-1", "ICBC-\xff"} {
			if err := p.MarkPaid(f.ctx, admin, pa.ID, bad); !errors.As(err, &fields) || fields[0].Field != "bank_reference" || fields[0].Key != "err.text" {
				t.Errorf("reference %q: %v", bad, err)
			}
			if err := p.MarkFailed(f.ctx, admin, pa.ID, bad); !errors.As(err, &fields) || fields[0].Field != "reason" || fields[0].Key != "err.text" {
				t.Errorf("reason %q: %v", bad, err)
			}
		}
		if err := p.MarkPaid(f.ctx, admin, 999_999, "X"); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("an unknown payout: %v", err)
		}
		actx := audit.WithActor(f.ctx, admin.ID, "198.51.100.4")
		if err := p.MarkPaid(actx, admin, pa.ID, " ICBC-20261105-0001 "); err != nil {
			t.Fatal(err)
		}
		got, _ := ledger.PayoutByID(f.ctx, db, pa.ID)
		if got.Status != models.PayoutPaid || got.BankReference != "ICBC-20261105-0001" || got.PaidBy == nil || *got.PaidBy != admin.ID {
			t.Errorf("paid: %+v", got)
		}
		if err := p.MarkPaid(f.ctx, admin, pa.ID, "again"); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("paying twice: %v", err)
		}
		if err := p.MarkFailed(f.ctx, admin, pa.ID, "bounced"); apperr.Code(err) != apperr.ECONFLICT {
			t.Errorf("failing a paid payout: %v", err)
		}
		if es := f.audits(audit.PayoutPaid); len(es) != 1 || es[0].ActorID == nil || *es[0].ActorID != admin.ID || es[0].ActorIP != "198.51.100.4" {
			t.Errorf("audit of the payment: %+v", es)
		}

		if err := p.MarkFailed(f.ctx, owner, pb.ID, "bounced"); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("the owner failing a payout: %v", err)
		}
		if err := p.MarkFailed(f.ctx, admin, pb.ID, ""); !errors.As(err, &fields) || fields[0].Field != "reason" {
			t.Errorf("no reason: %v", err)
		}
		if err := p.MarkFailed(f.ctx, admin, pb.ID, "account closed"); err != nil {
			t.Fatal(err)
		}
		if f.payable(b.ID) != 44_000 {
			t.Errorf("after the failure: payable %d, want 44,000 back", f.payable(b.ID))
		}
		rows, total, err := ledger.Payouts(f.ctx, db, ledger.PayoutFilter{Status: models.PayoutFailed})
		if err != nil || total != 1 || rows[0].ID != pb.ID || rows[0].ProviderName("en") == "" {
			t.Errorf("list of failed: %+v %d %v", rows, total, err)
		}
		if rows, total, _ := ledger.Payouts(f.ctx, db, ledger.PayoutFilter{}); total != 2 || len(rows) != 2 {
			t.Errorf("list: %d", total)
		}
		f.ledgerBalanced()

		// November pays what failed in October back out.
		*f.now = sh(2026, 12, 1, 2, 0)
		if n, err := p.Run(f.ctx, "2026-11"); n != 1 || err != nil {
			t.Fatalf("November: %d %v", n, err)
		}
		if ps := f.payouts(b.ID); len(ps) != 2 || ps[0].Period != "2026-11" || ps[0].AmountFen != 44_000 {
			t.Errorf("b's payouts: %+v", ps)
		}
		f.ledgerBalanced()
	})
}

// Connect onboarding: owners and admins of the provider only; the
// account is created once and its capabilities read back.
func TestConnectOnboarding(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newPayoutFixture(t, db)
		pr, owner := f.provider(true)
		_, stranger := f.provider(true)
		p := &providers.Payouts{DB: db}
		if _, err := p.ConnectOnboard(f.ctx, owner, pr.ID, "https://r", "https://f"); apperr.Code(err) != apperr.EUNAVAILABLE {
			t.Errorf("without Stripe: %v", err)
		}
		p.Connect = &fakeConnect{}
		if _, err := p.ConnectOnboard(f.ctx, stranger, pr.ID, "https://r", "https://f"); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("another provider's owner: %v", err)
		}
		if _, err := p.ConnectOnboard(f.ctx, owner, f.offer.ProviderID, "https://r", "https://f"); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("a demo provider: %v", err)
		}
		member := f.user("member@provider.example", false)
		if err := db.Tx(f.ctx, func(tx *gorm.DB) error {
			return models.AddMember(tx, &models.Membership{OrgID: *pr.OrgID, UserID: member.ID, Role: models.RoleMember, CreatedAt: *f.now})
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.ConnectOnboard(f.ctx, member, pr.ID, "https://r", "https://f"); apperr.Code(err) != apperr.EFORBIDDEN {
			t.Errorf("a plain member: %v", err)
		}
		for range 2 {
			url, err := p.ConnectOnboard(f.ctx, owner, pr.ID, "https://r", "https://f")
			if err != nil || url != "https://connect.stripe.test/setup/acct_new" {
				t.Fatalf("onboard: %q %v", url, err)
			}
		}
		got, err := p.RefreshConnect(f.ctx, pr.ID)
		if err != nil || got.StripeAccountID != "acct_new" || !got.StripeChargesEnabled || !got.StripePayoutsEnabled {
			t.Errorf("refreshed: %+v %v", got, err)
		}
		if es := f.audits(audit.ConnectOnboard); len(es) != 1 {
			t.Errorf("onboarding audited %d times", len(es))
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
