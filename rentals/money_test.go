package rentals_test

import (
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/fleet"
	"suanli/gpu"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/pricing"
	"suanli/providers"
	"suanli/rentals"
)

// Money that a provider is paid must have been earned, and nothing takes
// a provider's payable below zero: prepaid terms are earned as they run,
// payouts pay only earned money, a refund or SLA credit after a payout is
// owed (and offset by the next payout), never a negative payable.

// payable makes the provider of an offer a verified provider organisation
// (demo providers have none and are never paid out), so payout runs pay it.
func (r *rig) payable(providerID int64) {
	r.t.Helper()
	u, err := r.accounts.CreateUser(r.ctx, "owner@payable.example", "provider-pass-2026", "Owner", false)
	if err != nil {
		r.t.Fatal(err)
	}
	acc, err := (&providers.Service{DB: r.db, BaseURL: "http://suanli.test"}).CreateVerified(r.ctx, u, "Payable Provider")
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.db.Tx(r.ctx, func(tx *gorm.DB) error {
		if err := tx.Exec(`UPDATE providers SET org_id = NULL WHERE id = ?`, acc.Provider.ID).Error; err != nil {
			return err
		}
		return tx.Exec(`UPDATE providers SET org_id = ? WHERE id = ?`, acc.Org.ID, providerID).Error
	}); err != nil {
		r.t.Fatal(err)
	}
}

// account is the balance of a ledger account.
func (r *rig) account(kind string, orgID int64) int64 {
	r.t.Helper()
	b, err := ledger.AccountBalance(r.ctx, r.db, kind, orgID)
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

// legSum sums the rental's ledger legs on accounts of a kind.
func (r *rig) legSum(rentalID int64, kind string) int64 {
	r.t.Helper()
	var sum int64
	if err := r.db.R.Raw(`SELECT COALESCE(SUM(e.amount_fen), 0) FROM ledger_entries e JOIN ledger_txns t ON t.id = e.txn_id
		JOIN ledger_accounts a ON a.id = e.account_id WHERE t.rental_id = ? AND a.kind = ?`, rentalID, kind).Scan(&sum).Error; err != nil {
		r.t.Fatal(err)
	}
	return sum
}

// payoutRun runs the payouts for the month before the clock's.
func (r *rig) payoutRun() []models.Payout {
	r.t.Helper()
	p := &providers.Payouts{DB: r.db}
	if _, err := p.Run(r.ctx, providers.PayoutPeriod(r.clock.Now())); err != nil {
		r.t.Fatal(err)
	}
	var ps []models.Payout
	if err := r.db.R.Order("id").Find(&ps).Error; err != nil {
		r.t.Fatal(err)
	}
	return ps
}

func (r *rig) meter() rentals.MeterResult {
	r.t.Helper()
	res, err := r.rentals.Meter(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	return res
}

// netOf is the provider's share of fen: the amount less the commission,
// rounded down once.
func netOf(fen int64) int64 { return fen - fen*rentals.CommissionPct/100 }

func weekTerm(in *rentals.RentInput) { in.Term = pricing.Week }

func TestTermRevenueIsEarnedAsTheTermRuns(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		// Agents are not heard from across the days the clock jumps.
		r := newRig(t, db, rigOptions{SilentAfter: 365 * 24 * time.Hour})
		o := r.rtxOffer()
		r.payable(o.ProviderID)
		r.startAgent(o.NodeID)
		r.waitReady(o.NodeID)
		rt := r.mustRent(o.ID, 1, weekTerm)
		run := r.waitStatus(rt.ID, models.RentalRunning)
		price := *run.TermPriceFen
		if got := r.account(ledger.AccProviderPayable, o.ProviderID); got != 0 {
			t.Errorf("the provider's payable holds %d fen as the term starts, want 0: nothing of it is earned yet", got)
		}
		if got := r.account(ledger.AccProviderUnearned, o.ProviderID); got != price {
			t.Errorf("unearned %d fen, want the term's price %d", got, price)
		}

		// Half-way through, half is earned and a payout pays only that.
		r.quiet()
		now := r.clock.Freeze()
		now = r.clock.Advance(run.EndsAt.Sub(now) / 2)
		if res := r.meter(); res.Terms != 1 {
			t.Errorf("meter pass %+v, want one term earning", res)
		}
		left := int64(run.EndsAt.Sub(now) / time.Second)
		total := int64(7 * 24 * 3600)
		earned := price - (price*left+total-1)/total
		if got := r.rental(rt.ID).EarnedFen; got != earned {
			t.Errorf("earned %d fen of %d half-way, want %d", got, price, earned)
		}
		// Its volume's storage is the provider's too, besides the term.
		payable := r.account(ledger.AccProviderPayable, o.ProviderID)
		if want := netOf(earned) + r.storagePayable(*rt.VolumeID); payable != want {
			t.Errorf("payable %d fen half-way, want %d (%d earned less the commission, and the storage)", payable, want, earned)
		}
		ps := r.payoutRun()
		if len(ps) != 1 || ps[0].AmountFen != payable {
			t.Fatalf("payouts %+v, want one of the earned %d fen", ps, payable)
		}
		if ps[0].AmountFen-r.storagePayable(*rt.VolumeID) >= netOf(price)/2+1 {
			t.Errorf("paid out %d fen of a term of %d half-way through", ps[0].AmountFen, price)
		}

		// Stopped early: nothing comes back to the renter, and the provider
		// earns the term to its end as the GPUs stay held.
		stopped := r.stop(rt.ID)
		if r.walletSum(rt.ID) != -price {
			t.Errorf("stopping a term early gave %d fen back", price+r.walletSum(rt.ID))
		}
		r.clock.Advance(stopped.EndsAt.Sub(r.clock.Now()) + time.Second)
		if _, err := r.rentals.Watch(r.ctx); err != nil {
			t.Fatal(err)
		}
		r.meter()
		if got := r.rental(rt.ID).EarnedFen; got != price {
			t.Errorf("earned %d fen after the term's end, want all %d", got, price)
		}
		if got := r.legSum(rt.ID, ledger.AccProviderUnearned); got != 0 {
			t.Errorf("the rental leaves %d fen unearned after its end", got)
		}
		if got, want := r.legSum(rt.ID, ledger.AccPlatformRevenue), price*rentals.CommissionPct/100; got != want {
			t.Errorf("commission on the term %d fen, want %d (12%% of %d)", got, want, price)
		}
		if got, want := r.account(ledger.AccProviderPayable, o.ProviderID), netOf(price)+r.storagePayable(*rt.VolumeID)-ps[0].AmountFen; got != want {
			t.Errorf("payable after the term %d fen, want %d", got, want)
		}
		r.checkLedger()
	})
}

func TestARefundAfterAPayoutIsOwedNotANegativePayable(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{SilentAfter: 365 * 24 * time.Hour})
		o := r.rtxOffer()
		r.payable(o.ProviderID)
		// A sibling node takes the rentals that move, so the offer's node
		// keeps free GPUs for the next month's rental.
		sib := r.addSibling(o, 2)
		a := r.startAgent(o.NodeID)
		r.startAgent(sib)
		r.waitReady(o.NodeID, sib)
		// An on-demand rental and a week term, each on one GPU.
		rt := r.mustRent(o.ID, 1)
		term := r.mustRent(o.ID, 1, weekTerm)
		r.waitStatus(rt.ID, models.RentalRunning)
		r.waitStatus(term.ID, models.RentalRunning)
		held := []models.GPU{r.heldGPUs(rt.ID)[0], r.heldGPUs(term.ID)[0]}

		// Five minutes in, a payout pays what has been earned: the
		// on-demand use, and nothing of the term (less than an hour's
		// share of it has run).
		r.quiet()
		r.clock.Freeze()
		jump := r.clock.Advance(5 * time.Minute)
		r.meter()
		earned := r.account(ledger.AccProviderPayable, o.ProviderID)
		if earned != netOf(-r.walletSum(rt.ID)) || earned <= 0 {
			t.Fatalf("payable %d fen after five minutes, want the on-demand use's %d", earned, netOf(-r.walletSum(rt.ID)))
		}
		ps := r.payoutRun()
		if len(ps) != 1 || ps[0].AmountFen != earned {
			t.Fatalf("payouts %+v, want one of %d fen", ps, earned)
		}

		// Both GPUs fail within the first ten minutes: the renter gets
		// everything back, and what the provider was paid is owed.
		for _, g := range held {
			fault, err := gpu.ParseFault(fmt.Sprintf("xid:79@%d", g.Idx))
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Sim.Inject(fault); err != nil {
				t.Fatal(err)
			}
		}
		r.waitHeartbeat(o.NodeID, jump)
		r.eventually("the agent reports the GPUs failing", func() bool {
			return r.gpu(held[0].ID).Health == models.GPUFailing && r.gpu(held[1].ID).Health == models.GPUFailing
		})
		if res, err := r.rentals.Watch(r.ctx); err != nil || res.Migrated != 2 {
			t.Fatalf("health pass %+v, %v; want both rentals moved", res, err)
		}
		for _, id := range []int64{rt.ID, term.ID} {
			if got := r.rental(id); !got.Free || r.walletSum(id) != 0 {
				t.Errorf("rental %d: free %v, its wallet sum %d; want a free rental, everything refunded", id, got.Free, r.walletSum(id))
			}
		}
		if r.balance() != r.fund {
			t.Errorf("balance %d after the refunds, want all %d back", r.balance(), r.fund)
		}
		if got := r.account(ledger.AccProviderPayable, o.ProviderID); got != 0 {
			t.Errorf("payable %d fen after the refund, want 0", got)
		}
		if got := r.account(ledger.AccProviderUnearned, o.ProviderID); got != 0 {
			t.Errorf("unearned %d fen after the term's refund, want 0", got)
		}
		if got := r.account(ledger.AccProviderReceivable, o.ProviderID); got != -earned {
			t.Errorf("the provider owes %d fen, want the %d fen it was paid", -got, earned)
		}
		r.checkLedger()

		// Next month the provider earns again; the payout offsets what it
		// owed and pays the rest.
		r.clock.Advance(31 * 24 * time.Hour)
		od := r.mustRent(o.ID, 1)
		r.waitStatus(od.ID, models.RentalRunning)
		r.clock.Advance(2 * time.Hour)
		r.meter()
		bal := r.account(ledger.AccProviderPayable, o.ProviderID)
		if bal <= earned {
			t.Fatalf("payable %d after two hours, want more than the %d owed", bal, earned)
		}
		ps = r.payoutRun()
		if len(ps) != 2 || ps[1].AmountFen != bal-earned {
			t.Errorf("payouts %+v, want a second one of %d (%d less the %d owed)", ps, bal-earned, bal, earned)
		}
		if got := r.account(ledger.AccProviderReceivable, o.ProviderID); got != 0 {
			t.Errorf("still owed %d fen after the offset", -got)
		}
		r.checkLedger()
	})
}

// The commission is 12 % of what a renter pays, to the fen, however small
// each meter charge is (a rounded-down 12 % of 8 fen is 0).
func TestCommissionIsTwelvePercentOverTheRental(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{SilentAfter: 365 * 24 * time.Hour})
		o := r.rtxOffer()
		r.startAgent(o.NodeID)
		r.waitReady(o.NodeID)
		rt := r.mustRent(o.ID, 1)
		r.waitStatus(rt.ID, models.RentalRunning)
		r.quiet()
		r.clock.Freeze()
		for range 90 {
			r.clock.Advance(time.Minute)
			r.meter()
		}
		paid := -r.walletSum(rt.ID)
		commission := r.legSum(rt.ID, ledger.AccPlatformRevenue)
		payable := r.legSum(rt.ID, ledger.AccProviderPayable)
		if paid < 500 {
			t.Fatalf("the renter paid %d fen in 90 minutes", paid)
		}
		if want := paid * rentals.CommissionPct / 100; commission != want {
			t.Errorf("commission %d fen on %d fen paid (%.2f%%), want %d", commission, paid, 100*float64(commission)/float64(paid), want)
		}
		if commission+payable != paid {
			t.Errorf("commission %d + provider %d ≠ paid %d", commission, payable, paid)
		}
		r.checkLedger()
	})
}

// An hourly cap admits a rental by what the live rentals will spend in the
// coming hour, not only by what has been charged.
func TestHourlyCapCountsTheRatesOfLiveRentals(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{})
		o := r.rtxOffer()
		r.startAgent(o.NodeID)
		r.waitReady(o.NodeID)
		hour := pricing.HourFen(pricing.Rate{PricePerGPUHourFen: o.PricePerGPUHourFen, GPUs: 1, OffpeakPct: o.OffpeakDiscountPct}, r.clock.Now())
		capFen := 2*hour - 1 // one rental fits, two do not
		if err := db.W.Model(&models.Org{}).Where("id = ?", r.org.ID).Update("hourly_cap_fen", capFen).Error; err != nil {
			t.Fatal(err)
		}
		r.org.HourlyCapFen = &capFen
		first := r.mustRent(o.ID, 1)
		r.waitStatus(first.ID, models.RentalRunning)
		if _, err := r.rent(o.ID, 1); err == nil || !limitHourly(err) {
			t.Fatalf("a second rental at %d fen/h under a cap of %d fen/h: %v, want the hourly limit", hour, capFen, err)
		}
		r.stop(first.ID)
		second, err := r.rent(o.ID, 1)
		if err != nil {
			t.Fatalf("with the first stopped, renting again: %v", err)
		}
		r.waitStatus(second.ID, models.RentalRunning)
	})
}

func limitHourly(err error) bool {
	ae, ok := apperr.As(err)
	return ok && ae.Key == "err.limit_hourly_live" && len(ae.Args) == 2
}

// charges are the rental's charge transactions (a term's earnings, moved
// as it runs, are transactions of the rental too).
func (r *rig) charges(rentalID int64) []ledger.LedgerTxn {
	r.t.Helper()
	var out []ledger.LedgerTxn
	for _, t := range r.txns(rentalID) {
		if t.Kind == billing.ChargeKind {
			out = append(out, t)
		}
	}
	return out
}

// An SLA credit settled after the payout that took the provider's payable
// is owed, not a negative payable; the next payout offsets it.
func TestSLACreditAfterAPayoutIsOwed(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newPayoutFixture(t, db)
		pr, _ := f.provider(true)
		// October: ¥1,500 billed, a 5-hour incident; still running when the
		// payout runs, so October's credit is settled after it.
		down := f.rentalOf(pr, sh(2026, 10, 5, 9, 0))
		f.charge(down, 150_000, sh(2026, 10, 7, 12, 0))
		f.event(down, sh(2026, 10, 6, 10, 0), "incident")
		f.event(down, sh(2026, 10, 6, 15, 0), "migrated")
		p := &providers.Payouts{DB: db}
		*f.now = sh(2026, 11, 1, 2, 0)
		if _, err := p.Run(f.ctx, "2026-10"); err != nil {
			t.Fatal(err)
		}
		if ps := f.payouts(pr.ID); len(ps) != 1 || ps[0].AmountFen != 132_000 {
			t.Fatalf("October's payout: %+v, want ¥1,320", ps)
		}
		*f.now = sh(2026, 11, 1, 3, 0)
		res := f.settle()
		if res.Credits != 1 || res.Fen <= 0 {
			t.Fatalf("SLA pass: %+v, want October's credit", res)
		}
		credit := res.Fen
		if got := f.payable(pr.ID); got != 0 {
			t.Errorf("payable %d fen after a credit it could not cover, want 0", got)
		}
		owed, err := ledger.AccountBalance(f.ctx, db, ledger.AccProviderReceivable, pr.ID)
		if err != nil || owed != -credit {
			t.Errorf("owed %d fen (%v), want the %d fen credit", -owed, err, credit)
		}
		f.ledgerBalanced()

		// November earns ¥4,400 net; December's payout pays it less the credit.
		f.charge(down, 500_000, sh(2026, 11, 10, 12, 0))
		*f.now = sh(2026, 12, 1, 2, 0)
		if _, err := p.Run(f.ctx, "2026-11"); err != nil {
			t.Fatal(err)
		}
		if ps := f.payouts(pr.ID); len(ps) != 2 || ps[0].AmountFen != 440_000-credit {
			t.Errorf("November's payout: %+v, want %d fen (¥4,400 less the %d owed)", ps, 440_000-credit, credit)
		}
		if got, _ := ledger.AccountBalance(f.ctx, db, ledger.AccProviderReceivable, pr.ID); got != 0 {
			t.Errorf("still owed %d fen", -got)
		}
		f.ledgerBalanced()
	})
}

// A meter pass that races a stop of one of its rentals bills the batch
// again instead of failing the whole pass. On PostgreSQL the race is made
// exact: a transaction stops the rental and holds its row until the pass
// is waiting for it, then commits, so the pass's claim finds the rental
// changed under it. (SQLite has one writer: no pass can overlap a stop.)
func TestMeterPassSurvivesARacingStop(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	f := newSLAFixture(t, db)
	rs := []*models.Rental{f.rental("standard", sh(2026, 10, 1, 8, 0)), f.rental("standard", sh(2026, 10, 1, 8, 1))}
	*f.now = sh(2026, 10, 1, 9, 0)
	svc := &rentals.Service{DB: db, Wallet: &billing.Wallet{DB: db}, Hub: fleet.NewHub()}

	stop := db.W.Begin()
	t.Cleanup(func() { stop.Rollback() }) // a no-op once committed
	if err := stop.Exec(`SELECT id FROM rentals WHERE id = ? FOR UPDATE`, rs[1].ID).Error; err != nil {
		t.Fatal(err)
	}
	if err := stop.Exec(`UPDATE rentals SET status = 'stopping' WHERE id = ?`, rs[1].ID).Error; err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var res rentals.MeterResult
	go func() {
		var err error
		res, err = svc.Meter(f.ctx)
		done <- err
	}()
	// Wait until the pass is blocked on the stopped rental's row.
	waitForLockWaiter(t, db, "%UPDATE rentals SET billed_until%")
	if err := stop.Commit().Error; err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("a meter pass that raced a stop failed: %v", err)
	}
	if res.Rentals != 1 {
		t.Errorf("meter pass %+v, want the one running rental billed", res)
	}
	billed, err := db.RentalByID(f.ctx, rs[0].ID)
	if err != nil || billed.BilledFen == 0 {
		t.Errorf("the running rental was not billed: %+v %v", billed, err)
	}
	f.ledgerBalanced()
}

// waitForLockWaiter waits until a statement like the pattern is waiting
// for a row lock on PostgreSQL.
func waitForLockWaiter(t *testing.T, db *models.DB, like string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int64
		if err := db.R.Raw(`SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE ?`, like).Scan(&waiting).Error; err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no statement like %q waited for a lock", like)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A stop that overlaps a meter pass's claim of the same rental still bills
// the rental's minimum: the stop waits for the claim and bills on from it
// (it used to read the rental before the claim, lose its own claim to it
// and bill nothing more, leaving a 20-second rental billed 10 seconds).
func TestStopDuringAMeterClaimBillsTheMinimum(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	f := newSLAFixture(t, db)
	start := sh(2026, 10, 1, 8, 59)
	r := f.rental("standard", start)
	*f.now = start.Add(20 * time.Second)
	svc := &rentals.Service{DB: db, Wallet: &billing.Wallet{DB: db}, Hub: fleet.NewHub()}

	// A meter pass has claimed the first 10 seconds and not yet committed.
	claim := db.W.Begin()
	if err := claim.Exec(`UPDATE rentals SET billed_until = ?, billed_fen = billed_fen + 6 WHERE id = ?`, start.Add(10*time.Second), r.ID).Error; err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := svc.Stop(f.ctx, r.ID, rentals.StopByUser)
		done <- err
	}()
	waitForLockWaiter(t, db, "%rentals%")
	if err := claim.Commit().Error; err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, err := db.RentalByID(f.ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.BilledUntil == nil || got.BilledUntil.Sub(start) < time.Duration(pricing.MinimumSeconds)*time.Second {
		t.Errorf("a rental stopped during a meter claim is billed until %v, %v after its start; want at least the %d s minimum",
			got.BilledUntil, got.BilledUntil.Sub(start), pricing.MinimumSeconds)
	}
}
