package rentals_test

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/rentalstore"
	"suanli/pricing"
	"suanli/rentals"
	"suanli/sla"
)

// sh is a time in Asia/Shanghai, as UTC.
func sh(y int, m time.Month, d, h, min int) time.Time {
	return time.Date(y, m, d, h, min, 0, 0, pricing.Shanghai).UTC()
}

// slaFixture is a seeded market, a funded renter and rentals written
// straight into the database: the SLA pass reads only the rental, its
// timeline and its ledger, so no agent is needed.
type slaFixture struct {
	t     *testing.T
	ctx   context.Context
	db    *models.DB
	now   *time.Time
	org   models.Org
	user  *models.User
	offer models.Offer
}

func newSLAFixture(t *testing.T, db *models.DB) *slaFixture {
	t.Helper()
	ctx := context.Background()
	now := sh(2026, 10, 1, 9, 0)
	f := &slaFixture{t: t, ctx: ctx, db: db, now: &now}
	db.Now = func() time.Time { return *f.now }
	if err := demo.SeedDemo(ctx, db); err != nil {
		t.Fatal(err)
	}
	svc := &accounts.Service{DB: db, BaseURL: "http://suanli.test", EduSuffixes: accounts.DefaultEduSuffixes}
	u, err := svc.CreateUser(ctx, "sla@example.com", "renter-pass-2026", "SLA", false)
	if err != nil {
		t.Fatal(err)
	}
	orgs, err := db.OrgsOfUser(ctx, u.ID)
	if err != nil || len(orgs) == 0 {
		t.Fatalf("organisations: %v %v", orgs, err)
	}
	f.org, f.user = orgs[0].Org, u
	if err := db.Tx(ctx, func(tx *gorm.DB) error {
		return billing.CreditPromo(tx, f.org.ID, 5_000_000, "promo_credit", "test funds", nil, nil, now)
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.R.Where("status = ?", models.OfferListed).Order("id").First(&f.offer).Error; err != nil {
		t.Fatal(err)
	}
	return f
}

// rental writes a running on-demand rental of one GPU at ¥20 per GPU-hour
// (no discounts) that started at since.
func (f *slaFixture) rental(tier string, since time.Time) *models.Rental {
	f.t.Helper()
	tr, _ := pricing.TierByName(tier)
	r := &models.Rental{OrgID: f.org.ID, UserID: f.user.ID, OfferID: f.offer.ID, ProviderID: f.offer.ProviderID, NodeID: &f.offer.NodeID,
		GPUs: 1, SLA: tier, Term: pricing.OnDemand, Status: models.RentalRunning, WorkspaceID: fmt.Sprintf("ws-sla-%d", since.UnixNano()), Access: "", Checks: "",
		PricePerGPUHourFen: 2000, SLASurchargePct: tr.SurchargePct, RunningSince: &since, BilledUntil: &since, CreatedAt: since, UpdatedAt: since}
	if err := f.db.W.Create(r).Error; err != nil {
		f.t.Fatal(err)
	}
	f.event(r, since, "running")
	return r
}

func (f *slaFixture) event(r *models.Rental, at time.Time, kind string) {
	f.t.Helper()
	if err := models.AddRentalEvent(f.db.W, r.ID, at, kind, "", nil); err != nil {
		f.t.Fatal(err)
	}
}

// charge posts a charge of the rental at a time, split as the meter does.
func (f *slaFixture) charge(r *models.Rental, fen int64, at time.Time) {
	f.t.Helper()
	commission := fen * rentals.CommissionPct / 100
	err := ledger.Post(f.db.W, &ledger.LedgerTxn{Kind: billing.ChargeKind, Memo: "test charge", RentalID: &r.ID, CreatedAt: at},
		ledger.Leg{Kind: ledger.AccWallet, OrgID: r.OrgID, AmountFen: -fen},
		ledger.Leg{Kind: ledger.AccProviderPayable, OrgID: r.ProviderID, AmountFen: fen - commission},
		ledger.Leg{Kind: ledger.AccPlatformRevenue, AmountFen: commission})
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *slaFixture) stop(r *models.Rental, at time.Time) {
	f.t.Helper()
	f.event(r, at, "stop_requested")
	f.event(r, at, "stopped")
	if err := f.db.W.Model(r).Updates(map[string]any{"status": models.RentalStopped, "stopped_at": at}).Error; err != nil {
		f.t.Fatal(err)
	}
}

func (f *slaFixture) settle() sla.Result {
	f.t.Helper()
	res, err := sla.Settle(f.ctx, f.db)
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

func (f *slaFixture) credits(r *models.Rental) map[string]models.SLACredit {
	f.t.Helper()
	cs, err := rentalstore.SLACreditsOfRental(f.ctx, f.db, r.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]models.SLACredit{}
	for _, c := range cs {
		out[c.Period] = c
	}
	return out
}

func (f *slaFixture) balance() int64 {
	f.t.Helper()
	b, err := ledger.WalletBalance(f.ctx, f.db, f.org.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

func (f *slaFixture) slaTxns(r *models.Rental) []ledger.LedgerTxn {
	f.t.Helper()
	var ts []ledger.LedgerTxn
	if err := f.db.R.Where("rental_id = ? AND kind = ?", r.ID, sla.CreditKind).Find(&ts).Error; err != nil {
		f.t.Fatal(err)
	}
	return ts
}

func (f *slaFixture) ledgerBalanced() {
	f.t.Helper()
	problems, err := ledger.LedgerCheck(f.ctx, f.db)
	if err != nil || len(problems) > 0 {
		f.t.Fatalf("ledger: %v %v", problems, err)
	}
}

// The SLA credit for an incident of known length equals the table's rule,
// and is posted once however often the pass runs.
func TestSLACreditForAnIncidentIsPostedOnce(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newSLAFixture(t, db)
		// Standard: from 22:00 on 31 October; November (30 days) has a
		// 5 h incident on Tuesday 3 November, 09:00–14:00 (peak hours).
		std := f.rental("standard", sh(2026, 10, 31, 22, 0))
		f.charge(std, 4_000, sh(2026, 10, 31, 23, 59))
		f.charge(std, 1_200_000, sh(2026, 11, 15, 12, 0))
		f.charge(std, 3_000, sh(2026, 12, 1, 0, 0).Add(30*time.Second)) // December's
		f.event(std, sh(2026, 11, 3, 9, 0), "incident")
		f.event(std, sh(2026, 11, 3, 9, 30), "node_failed") // still down
		f.event(std, sh(2026, 11, 3, 14, 0), "migrated")
		// Premium: the whole of November, the same incident, less billed.
		prem := f.rental("premium", sh(2026, 11, 1, 0, 0))
		f.charge(prem, 500_000, sh(2026, 11, 20, 12, 0))
		f.event(prem, sh(2026, 11, 3, 9, 0), "incident")
		f.event(prem, sh(2026, 11, 3, 14, 0), "migrated")
		// Free: its GPUs failed in its first minutes; it paid nothing.
		free := f.rental("standard", sh(2026, 11, 5, 10, 0))
		f.event(free, sh(2026, 11, 5, 10, 3), "incident")
		f.stop(free, sh(2026, 11, 5, 10, 5))
		if err := db.W.Model(free).Update("free", true).Error; err != nil {
			t.Fatal(err)
		}

		// November is not over: only the standard rental's October is due.
		*f.now = sh(2026, 11, 30, 23, 0)
		if res := f.settle(); res.Recorded != 1 || res.Credits != 0 {
			t.Fatalf("before November ended: %+v", res)
		}
		*f.now = sh(2026, 12, 1, 9, 0)
		before := f.balance()
		res := f.settle()
		again := f.settle()
		if res.Recorded != 2 || res.Credits != 2 || again.Recorded != 0 || again.Credits != 0 {
			t.Fatalf("first pass %+v, second pass %+v", res, again)
		}

		// Standard: 715/720 h = 99.30556% < 99.5 → 10%; 10% of ¥12,000 = ¥1,200
		// beats 10 × the downtime's cost (5 h × ¥20 = ¥100).
		cs := f.credits(std)
		nov := cs["2026-11"]
		if nov.PeriodSecs != 30*24*3600 || nov.DowntimeSecs != 5*3600 || nov.CreditPct != 10 || nov.BilledFen != 1_200_000 || nov.CreditFen != 120_000 || nov.TxnID == nil {
			t.Errorf("standard November: %+v", nov)
		}
		if math.Abs(nov.UptimePct-715.0/720*100) > 1e-9 {
			t.Errorf("standard uptime %.6f", nov.UptimePct)
		}
		// October: 2 h without downtime, recorded with no credit.
		if oct, ok := cs["2026-10"]; !ok || oct.PeriodSecs != 7200 || oct.CreditFen != 0 || oct.TxnID != nil || oct.BilledFen != 4_000 || oct.UptimePct != 100 {
			t.Errorf("standard October: %+v", cs["2026-10"])
		}
		if len(cs) != 2 {
			t.Errorf("standard: %d computations, want October and November", len(cs))
		}
		// Premium: < 99.5 → 25% of ¥5,000 = ¥1,250 < 20 × ¥115 = ¥2,300.
		pn := f.credits(prem)["2026-11"]
		if pn.CreditPct != 25 || pn.CreditFen != 230_000 || pn.BilledFen != 500_000 {
			t.Errorf("premium November: %+v", pn)
		}
		if n := len(f.credits(free)); n != 0 || len(f.slaTxns(free)) != 0 {
			t.Errorf("the free rental got %d computations", n)
		}
		if got := f.balance() - before; got != 120_000+230_000 {
			t.Errorf("wallet moved by %d fen, want %d", got, 120_000+230_000)
		}
		if ts := f.slaTxns(std); len(ts) != 1 || *ts[0].IdemKey != "sla/r"+strconv.FormatInt(std.ID, 10)+"/2026-11" {
			t.Errorf("standard's SLA transactions: %+v", ts)
		}
		if len(f.slaTxns(prem)) != 1 {
			t.Errorf("premium: %d SLA transactions", len(f.slaTxns(prem)))
		}
		var payable int64
		db.R.Raw(`SELECT e.amount_fen FROM ledger_entries e JOIN ledger_accounts a ON a.id = e.account_id
			WHERE e.txn_id = ? AND a.kind = ?`, *nov.TxnID, ledger.AccProviderPayable).Scan(&payable)
		if payable != -120_000 {
			t.Errorf("the provider's payable moved by %d, want −120,000", payable)
		}
		f.ledgerBalanced()

		// The standard rental ends in December: its final computation
		// follows, once.
		f.stop(std, sh(2026, 12, 2, 10, 0))
		*f.now = sh(2026, 12, 2, 11, 0)
		res = f.settle()
		again = f.settle()
		dec := f.credits(std)["2026-12"]
		if res.Recorded != 1 || again.Rentals != 0 || dec.PeriodSecs != 34*3600 || dec.BilledFen != 3_000 || dec.CreditFen != 0 {
			t.Errorf("final: first %+v, again %+v, December %+v", res, again, dec)
		}
		if due, err := rentalstore.SLADue(f.ctx, db, sh(2026, 12, 1, 0, 0), "2026-11"); err != nil || len(due) != 0 {
			t.Errorf("still due: %v %v", due, err)
		}
		f.ledgerBalanced()
	})
}

// A rental stopped while it was down: its final computation counts the
// downtime up to the stop, and the credit never exceeds what was paid.
func TestSLACreditAtRentalEndIsCappedAtWhatWasPaid(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newSLAFixture(t, db)
		r := f.rental("standard", sh(2026, 11, 10, 10, 0))
		f.charge(r, 4_000, sh(2026, 11, 10, 12, 0))
		f.event(r, sh(2026, 11, 10, 12, 0), "incident")
		f.stop(r, sh(2026, 11, 10, 13, 0))
		*f.now = sh(2026, 11, 10, 14, 0) // the month is not over: the end is enough
		before := f.balance()
		f.settle()
		f.settle()
		// 3 h with 1 h down: 66.7% → 100%; 10 × ¥20 = ¥200 > the ¥40 paid.
		c := f.credits(r)["2026-11"]
		if c.PeriodSecs != 3*3600 || c.DowntimeSecs != 3600 || c.CreditPct != 100 || c.CreditFen != 4_000 {
			t.Errorf("final: %+v", c)
		}
		if got := f.balance() - before; got != 4_000 || len(f.slaTxns(r)) != 1 {
			t.Errorf("wallet moved by %d, %d SLA transactions", got, len(f.slaTxns(r)))
		}
		f.ledgerBalanced()
		// The rental page's section shows the recorded computation with the
		// downtime's cost.
		events, _ := db.RentalEvents(f.ctx, r.ID)
		var cur models.Rental
		db.R.First(&cur, r.ID)
		view, err := sla.OfRental(f.ctx, db, &cur, events, *f.now)
		if err != nil || len(view.Periods) != 1 || !view.Periods[0].Recorded || view.Periods[0].DowntimeCostFen != 2_000 || !view.Periods[0].Final {
			t.Errorf("rental SLA view: %+v %v", view, err)
		}
	})
}
