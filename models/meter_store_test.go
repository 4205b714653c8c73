package models_test

import (
	"strconv"
	"testing"
	"time"

	"suanli/dbtest"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/rentalstore"
	"suanli/pricing"
)

// running makes r a running on-demand rental billed up to at.
func running(t *testing.T, db *models.DB, r *models.Rental, at time.Time) {
	t.Helper()
	if err := db.W.Model(&models.Rental{}).Where("id = ?", r.ID).Updates(map[string]any{"billed_until": at, "running_since": at}).Error; err != nil {
		t.Fatal(err)
	}
	r.BilledUntil, r.RunningSince = &at, &at
}

func TestClaimMeterInterval(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		w := newRentalWorld(t, db)
		r := w.rental(t, db, models.RentalRunning, pricing.OnDemand)
		running(t, db, r, w.now)
		to := w.now.Add(time.Minute)
		ok, err := ledger.ClaimMeterInterval(db.W, r.ID, w.now, to, 17, 5, "", to)
		if err != nil || !ok {
			t.Fatalf("claim: %v, %v", ok, err)
		}
		// A second pass that read the same billed-until second loses.
		if ok, err := ledger.ClaimMeterInterval(db.W, r.ID, w.now, to, 17, 5, "", to); err != nil || ok {
			t.Errorf("claimed the same interval twice: %v, %v", ok, err)
		}
		to2 := to.Add(time.Minute)
		if ok, _ := ledger.ClaimMeterInterval(db.W, r.ID, to, to2, 3, 1, "balance exhausted", to2); !ok {
			t.Error("next interval not claimed")
		}
		got, _ := rentalstore.ReadRental(db.W, r.ID)
		if got.BilledFen != 20 || got.CarryNum != 1 || !got.BilledUntil.Equal(to2) || got.StopReason != "balance exhausted" {
			t.Errorf("after two claims %+v", got)
		}
		// Not running: nothing is claimed.
		rentalstore.MoveRental(db.W, r.ID, models.RentalStopping, []models.RentalStatus{models.RentalRunning}, rentalstore.RentalMove{}, to2)
		if ok, _ := ledger.ClaimMeterInterval(db.W, r.ID, to2, to2.Add(time.Minute), 1, 0, "", to2); ok {
			t.Error("claimed a stopping rental's interval")
		}
	})
}

func TestClaimMeterIntervals(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		w := newRentalWorld(t, db)
		a := w.rental(t, db, models.RentalRunning, pricing.OnDemand)
		b := w.rental(t, db, models.RentalRunning, pricing.OnDemand)
		running(t, db, a, w.now)
		running(t, db, b, w.now)
		ledger.ClaimMeterInterval(db.W, b.ID, w.now, w.now, 0, 0, "spending limit reached", w.now)
		to := w.now.Add(time.Minute)
		if ok, err := ledger.ClaimMeterIntervals(db.W, nil, to); err != nil || !ok {
			t.Errorf("no claims: %v, %v", ok, err)
		}
		ok, err := ledger.ClaimMeterIntervals(db.W, []ledger.MeterClaim{
			{RentalID: a.ID, Prev: w.now, To: to, Carry: 7, Fen: 11, Stop: "balance exhausted"},
			{RentalID: b.ID, Prev: w.now, To: to, Carry: 2, Fen: 4},
		}, to)
		if err != nil || !ok {
			t.Fatalf("claims: %v, %v", ok, err)
		}
		ga, _ := rentalstore.ReadRental(db.W, a.ID)
		gb, _ := rentalstore.ReadRental(db.W, b.ID)
		if ga.BilledFen != 11 || ga.CarryNum != 7 || !ga.BilledUntil.Equal(to) || ga.StopReason != "balance exhausted" || !ga.UpdatedAt.Equal(to) {
			t.Errorf("a %+v", ga)
		}
		// An empty stop keeps the reason the rental had.
		if gb.BilledFen != 4 || gb.CarryNum != 2 || !gb.BilledUntil.Equal(to) || gb.StopReason != "spending limit reached" {
			t.Errorf("b %+v", gb)
		}
		// b was billed meanwhile from what this batch read: the batch says so.
		to2 := to.Add(time.Minute)
		ok, err = ledger.ClaimMeterIntervals(db.W, []ledger.MeterClaim{
			{RentalID: a.ID, Prev: to, To: to2, Fen: 1},
			{RentalID: b.ID, Prev: w.now, To: to2, Fen: 1},
		}, to2)
		if err != nil || ok {
			t.Errorf("raced batch: %v, %v", ok, err)
		}
	})
}

func TestMeterPassQueries(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		w := newRentalWorld(t, db)
		a := w.rental(t, db, models.RentalRunning, pricing.OnDemand)
		w.rental(t, db, models.RentalRunning, pricing.Week)
		w.rental(t, db, models.RentalStopped, pricing.OnDemand)
		b := w.rental(t, db, models.RentalRunning, pricing.OnDemand)
		ids, err := ledger.RunningOnDemandIDs(w.ctx, db, 0, 10)
		if err != nil || len(ids) != 2 || ids[0] != a.ID || ids[1] != b.ID {
			t.Fatalf("running on demand %v (%v), want [%d %d]", ids, err, a.ID, b.ID)
		}
		if ids, _ := ledger.RunningOnDemandIDs(w.ctx, db, a.ID, 10); len(ids) != 1 || ids[0] != b.ID {
			t.Errorf("after a: %v", ids)
		}
		if ids, _ := ledger.RunningOnDemandIDs(w.ctx, db, 0, 1); len(ids) != 1 || ids[0] != a.ID {
			t.Errorf("limit 1: %v", ids)
		}
		rs, err := ledger.RunningOnDemandBetween(db.W, a.ID, b.ID)
		if err != nil || len(rs) != 2 || rs[0].ID != a.ID || rs[1].ID != b.ID {
			t.Errorf("between: %v (%v)", rs, err)
		}

		// Money: a top-up of 500 fen into the renter's wallet.
		if err := ledger.Post(db.W, &ledger.LedgerTxn{Kind: "topup", CreatedAt: w.now},
			ledger.Leg{Kind: ledger.AccPaymentClearing, AmountFen: -500},
			ledger.Leg{Kind: ledger.AccWallet, OrgID: w.org.ID, AmountFen: 500}); err != nil {
			t.Fatal(err)
		}
		if bal, err := ledger.OrgWalletBalance(db.W, w.org.ID); err != nil || bal != 500 {
			t.Errorf("balance %d (%v)", bal, err)
		}
		if bal, err := ledger.OrgWalletBalance(db.W, 1<<40); err != nil || bal != 0 {
			t.Errorf("no wallet: %d (%v)", bal, err)
		}
		bals, err := ledger.WalletBalances(db.W, []int64{w.org.ID, 1 << 40})
		if err != nil || len(bals) != 1 || bals[w.org.ID] != 500 {
			t.Errorf("balances %v (%v)", bals, err)
		}
		limited, err := ledger.OrgsWithSpendLimits(db.W, []int64{w.org.ID})
		if err != nil || len(limited) != 0 {
			t.Errorf("limited without a limit: %v (%v)", limited, err)
		}
		db.W.Model(&models.Org{}).Where("id = ?", w.org.ID).Update("hourly_cap_fen", 100)
		limited, _ = ledger.OrgsWithSpendLimits(db.W, []int64{w.org.ID})
		if o := limited[w.org.ID]; o == nil || o.HourlyCapFen == nil || *o.HourlyCapFen != 100 {
			t.Errorf("limited %v", limited)
		}

		if ok, err := ledger.MarkLowBalanceMailed(db.W, a.ID); err != nil || !ok {
			t.Errorf("first mail: %v, %v", ok, err)
		}
		if ok, _ := ledger.MarkLowBalanceMailed(db.W, a.ID); ok {
			t.Error("mailed twice")
		}

		// A charge of 120 fen for a: the wallet pays, the provider and the platform share it.
		if err := ledger.Post(db.W, &ledger.LedgerTxn{Kind: "charge", RentalID: &a.ID, CreatedAt: w.now},
			ledger.Leg{Kind: ledger.AccWallet, OrgID: w.org.ID, AmountFen: -120},
			ledger.Leg{Kind: ledger.AccProviderPayable, OrgID: a.ProviderID, AmountFen: 100},
			ledger.Leg{Kind: ledger.AccPlatformRevenue, AmountFen: 20}); err != nil {
			t.Fatal(err)
		}
		key := ledger.TermKey(a.ID, 1)
		if key != "term/r"+strconv.FormatInt(a.ID, 10)+"/1" {
			t.Errorf("term key %q", key)
		}
		if err := ledger.Post(db.W, &ledger.LedgerTxn{Kind: "charge", RentalID: &a.ID, IdemKey: &key, CreatedAt: w.now},
			ledger.Leg{Kind: ledger.AccWallet, OrgID: w.org.ID, AmountFen: -30},
			ledger.Leg{Kind: ledger.AccProviderUnearned, OrgID: a.ProviderID, AmountFen: 30}); err != nil {
			t.Fatal(err)
		}
		sums, err := ledger.RentalAccountSums(db.W, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for _, s := range sums {
			got[s.Kind] += s.Fen
		}
		want := map[string]int64{ledger.AccWallet: -150, ledger.AccProviderPayable: 100, ledger.AccPlatformRevenue: 20, ledger.AccProviderUnearned: 30}
		if len(got) != len(want) {
			t.Errorf("sums %v, want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("sum %s: %d, want %d", k, got[k], v)
			}
		}
		if n, err := ledger.TermsPaid(db.W, a.ID); err != nil || n != 1 {
			t.Errorf("terms paid %d (%v), want 1", n, err)
		}
		if n, _ := ledger.TermsPaid(db.W, b.ID); n != 0 {
			t.Errorf("b's terms paid %d", n)
		}

		if err := ledger.SetRentalBilledFen(db.W, a.ID, 150); err != nil {
			t.Fatal(err)
		}
		db.W.Model(&models.Rental{}).Where("id = ?", a.ID).Update("earned_fen", 30)
		if r, _ := rentalstore.ReadRental(db.W, a.ID); r.BilledFen != 150 || r.EarnedFen != 30 {
			t.Errorf("billed %d earned %d", r.BilledFen, r.EarnedFen)
		}
		if err := ledger.ClearRentalMoney(db.W, a.ID); err != nil {
			t.Fatal(err)
		}
		if r, _ := rentalstore.ReadRental(db.W, a.ID); r.BilledFen != 0 || r.EarnedFen != 0 {
			t.Errorf("cleared: billed %d earned %d", r.BilledFen, r.EarnedFen)
		}
		end := w.now.Add(24 * time.Hour)
		if err := ledger.SetRentalEndsAt(db.W, b.ID, end); err != nil {
			t.Fatal(err)
		}
		if r, _ := rentalstore.ReadRental(db.W, b.ID); r.EndsAt == nil || !r.EndsAt.Equal(end) {
			t.Errorf("ends at %v", r.EndsAt)
		}
	})
}
