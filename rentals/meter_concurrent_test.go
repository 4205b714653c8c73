package rentals_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"suanli/billing"
	"suanli/dbtest"
	"suanli/fleet"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/pricing"
	"suanli/rentals"
)

// TestConcurrentMeterPassesBillEachIntervalOnce runs two meter passes at
// once (a meter job rescued while the first still runs), each in batches
// that run at once on PostgreSQL, and then two more beside renters who
// stop rentals: every rental is billed each second exactly once (what it
// was billed, and what its charges took from the wallet, equal one
// pass's worth from its start), the passes together report what was
// billed, and the ledger balances.
func TestConcurrentMeterPassesBillEachIntervalOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		rentals.SetMeterBatch(t, 8)
		start := time.Now().UTC().Truncate(time.Second)
		const fleetSize = 60
		seedMeterFleet(t, db, start, fleetSize)
		now := start.Add(10 * time.Minute)
		var clock sync.Mutex
		db.Now = func() time.Time { clock.Lock(); defer clock.Unlock(); return now }
		svc := &rentals.Service{DB: db, Wallet: &billing.Wallet{DB: db}, Hub: fleet.NewHub()}

		// together runs the functions at once and waits for all of them.
		together := func(fns ...func()) {
			var wg sync.WaitGroup
			ready := make(chan struct{})
			for _, fn := range fns {
				wg.Go(func() { <-ready; fn() })
			}
			close(ready)
			wg.Wait()
		}
		passes := func(extra ...func()) (billed int, fen int64) {
			var mu sync.Mutex
			pass := func() {
				res, err := svc.Meter(ctx)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Errorf("meter pass: %v", err)
				}
				billed, fen = billed+res.Rentals, fen+res.Fen
			}
			together(append([]func(){pass, pass}, extra...)...)
			return billed, fen
		}
		// check compares every rental with one pass's worth from start to
		// its billed-until second, and its charges with what it was billed.
		check := func(until time.Time) (total int64) {
			t.Helper()
			var rs []models.Rental
			if err := db.R.Order("id").Find(&rs).Error; err != nil || len(rs) != fleetSize {
				t.Fatalf("%d rentals: %v", len(rs), err)
			}
			var charged []struct {
				RentalID int64
				Fen      int64
				N        int
			}
			if err := db.R.Raw(`SELECT t.rental_id, -SUM(e.amount_fen) AS fen, COUNT(DISTINCT t.id) AS n FROM ledger_txns t
				JOIN ledger_entries e ON e.txn_id = t.id JOIN ledger_accounts a ON a.id = e.account_id
				WHERE t.kind = ? AND a.kind = ? GROUP BY t.rental_id`, billing.ChargeKind, ledger.AccWallet).Scan(&charged).Error; err != nil {
				t.Fatal(err)
			}
			byRental := map[int64]int64{}
			for _, c := range charged {
				byRental[c.RentalID] = c.Fen
			}
			for _, r := range rs {
				fen, carry := pricing.Accrue(r.Rate(), start, until, 0)
				if r.BilledUntil == nil || !r.BilledUntil.Equal(until) || r.BilledFen != fen || r.CarryNum != carry {
					t.Errorf("rental %d (%s) billed %d fen (carry %d) up to %v; one pass's worth is %d (carry %d) up to %v",
						r.ID, r.Status, r.BilledFen, r.CarryNum, r.BilledUntil, fen, carry, until)
				}
				if byRental[r.ID] != r.BilledFen {
					t.Errorf("rental %d: its charges took %d fen from the wallet, it was billed %d", r.ID, byRental[r.ID], r.BilledFen)
				}
				total += r.BilledFen
			}
			if problems, err := ledger.LedgerCheck(ctx, db); err != nil || len(problems) > 0 {
				t.Errorf("ledger: %v %v", err, problems)
			}
			return total
		}

		billed, fen := passes()
		if billed != fleetSize {
			t.Errorf("the two passes billed %d rentals in all, want each of the %d once", billed, fleetSize)
		}
		if total := check(now); fen != total {
			t.Errorf("the two passes report %d fen, the rentals were billed %d", fen, total)
		}

		// Ten minutes on, renters stop some rentals while two passes run:
		// a stop bills its rental's last interval (or finds it billed).
		clock.Lock()
		now = now.Add(10 * time.Minute)
		clock.Unlock()
		var ids []int64
		if err := db.R.Model(&models.Rental{}).Order("id").Limit(fleetSize/3).Pluck("id", &ids).Error; err != nil {
			t.Fatal(err)
		}
		stop := func() {
			for _, id := range ids {
				if _, err := svc.Stop(ctx, id, rentals.StopByUser); err != nil {
					t.Errorf("stop %d: %v", id, err)
				}
			}
		}
		passes(stop)
		check(now)
		var stopped int64
		if err := db.R.Model(&models.Rental{}).Where("id IN ? AND status <> ?", ids, models.RentalRunning).Count(&stopped).Error; err != nil ||
			stopped != int64(len(ids)) {
			t.Errorf("%d of the %d rentals stopped (%v)", stopped, len(ids), err)
		}
	})
}

// TestMeterRangesKeepOrganisationsWhole: a pass's batches cover every
// organisation id, each organisation's rentals in one batch.
func TestMeterRangesKeepOrganisationsWhole(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		seedMeterFleet(t, db, time.Now().UTC(), 32) // 4 rentals of each of 8 organisations
		ranges, err := ledger.MeterRanges(context.Background(), db, 6)
		if err != nil {
			t.Fatal(err)
		}
		if len(ranges) != 4 || ranges[0].From != math.MinInt64 || ranges[len(ranges)-1].To != math.MaxInt64 {
			t.Fatalf("ranges %+v, want 4 of two organisations each, from the least id to the greatest", ranges)
		}
		for i, g := range ranges {
			if i > 0 && g.From != ranges[i-1].To+1 {
				t.Errorf("ranges %+v leave a gap or overlap", ranges)
			}
			var orgs []int64
			if err := db.R.Model(&models.Rental{}).Where("org_id BETWEEN ? AND ?", g.From, g.To).Distinct().Pluck("org_id", &orgs).Error; err != nil {
				t.Fatal(err)
			}
			if len(orgs) != 2 {
				t.Errorf("range %+v holds the organisations %v, want two", g, orgs)
			}
		}
	})
}

// TestMeterBatchHoldsSpendingLimits: an organisation's monthly budget
// stops its rentals once their charges (in the order of the rentals,
// within a batch that bills other organisations together) reach it; the
// rentals of the others are billed in full.
func TestMeterBatchHoldsSpendingLimits(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		start := time.Now().UTC().Truncate(time.Second)
		seedMeterFleet(t, db, start, 12)
		now := start.Add(10 * time.Minute)
		db.Now = func() time.Time { return now }
		var rs []models.Rental
		if err := db.R.Order("id").Find(&rs).Error; err != nil || len(rs) != 12 {
			t.Fatalf("%d rentals: %v", len(rs), err)
		}
		owed := func(r models.Rental) int64 { fen, _ := pricing.Accrue(r.Rate(), start, now, 0); return fen }
		limited := rs[4:8] // the second organisation's
		budget := owed(limited[0]) + owed(limited[1]) + owed(limited[2])/2
		if err := db.W.Model(&models.Org{}).Where("id = ?", limited[0].OrgID).Update("monthly_budget_fen", budget).Error; err != nil {
			t.Fatal(err)
		}
		svc := &rentals.Service{DB: db, Wallet: &billing.Wallet{DB: db}, Hub: fleet.NewHub()}
		res, err := svc.Meter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Rentals != 12 || res.Stopped != 2 {
			t.Errorf("meter pass %+v, want 12 rentals billed and 2 stopped", res)
		}
		for i, r := range rs {
			got, err := db.RentalByID(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			want, reason := owed(r), ""
			switch r.ID {
			case limited[2].ID:
				want, reason = owed(r)/2, rentals.StopSpendCap
			case limited[3].ID:
				want, reason = 0, rentals.StopSpendCap
			}
			if got.BilledFen != want || got.StopReason != reason {
				t.Errorf("rental %d (of organisation %d) billed %d fen, stop reason %q; want %d, %q", i, r.OrgID, got.BilledFen, got.StopReason, want, reason)
			}
		}
		if problems, err := ledger.LedgerCheck(ctx, db); err != nil || len(problems) > 0 {
			t.Errorf("ledger: %v %v", err, problems)
		}
	})
}
