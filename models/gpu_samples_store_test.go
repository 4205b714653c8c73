package models_test

import (
	"context"
	"testing"
	"time"

	"suanli/dbtest"
	"suanli/models"
	"suanli/models/supply"
)

// A rental's samples are those of its GPUs taken while it held them
// (across a stop and a start), and pruning deletes the old ones.
func TestRentalGPUSamples(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		n, gs := seededNode(t, db)
		a, b := gs[0], gs[1]
		r := testRental(t, db, n)
		other := testRental(t, db, n)
		t0 := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
		at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
		released := at(20)
		holds := []models.RentalGPU{
			{RentalID: r.ID, GPUID: a.ID, NodeID: n.ID, AttachedAt: at(0), ReleasedAt: &released},
			{RentalID: r.ID, GPUID: a.ID, NodeID: n.ID, AttachedAt: at(40)},
			{RentalID: other.ID, GPUID: b.ID, NodeID: n.ID, AttachedAt: at(0)},
		}
		for i := range holds {
			if err := db.W.Create(&holds[i]).Error; err != nil {
				t.Fatal(err)
			}
		}
		add := func(g models.GPU, m, util int) {
			t.Helper()
			s := models.GPUSample{GPUID: g.ID, At: at(m), UtilPct: util, MemUsedMiB: 2048, PowerW: 312.5, TempC: 61, SMClockMHz: 1980}
			if err := supply.InsertGPUSample(db.W, &s); err != nil {
				t.Fatal(err)
			}
		}
		add(a, -5, 1) // before the rental had it
		add(a, 10, 2) // held
		add(a, 30, 3) // stopped in between
		add(a, 50, 4) // held again
		add(b, 10, 9) // another rental's GPU
		got, err := supply.RentalGPUSamples(ctx, db, r.ID, []int64{a.ID, b.ID}, at(-60))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].UtilPct != 2 || got[1].UtilPct != 4 {
			t.Fatalf("rental's samples: %+v, want those at 10 and 50 min", got)
		}
		s := got[0]
		if !s.At.Equal(at(10)) || s.MemUsedMiB != 2048 || s.PowerW != 312.5 || s.TempC != 61 || s.SMClockMHz != 1980 {
			t.Errorf("sample read back as %+v", s)
		}
		if none, err := supply.RentalGPUSamples(ctx, db, r.ID, nil, at(-60)); err != nil || len(none) != 0 {
			t.Errorf("no GPUs: %v, %v", none, err)
		}
		pruned, err := supply.PruneGPUSamples(ctx, db, at(30))
		if err != nil || pruned != 3 {
			t.Fatalf("pruned %d (%v), want the 3 samples before 30 min", pruned, err)
		}
		if got, err := supply.RentalGPUSamples(ctx, db, r.ID, []int64{a.ID}, at(-60)); err != nil || len(got) != 1 || got[0].UtilPct != 4 {
			t.Errorf("after pruning: %+v, %v", got, err)
		}
		// Only those since the time asked for.
		if got, err := supply.RentalGPUSamples(ctx, db, r.ID, []int64{a.ID}, at(51)); err != nil || len(got) != 0 {
			t.Errorf("samples since 51 min: %+v, %v", got, err)
		}
	})
}
