package rentals_test

import (
	"testing"
	"time"

	"suanli/dbtest"
	"suanli/models"
	"suanli/offers"
	"suanli/pricing"
	"suanli/rentals"
)

// An on-demand rental stopped early is billed the minimum agreed at rent
// (the offer's minimum duration), not the platform's 60 s.
func TestStopBillsTheOffersMinimum(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newProvFixture(t, db, true)
		n, tok := f.addNode("gpu-host-1")
		f.report(tok, "dgxa100")
		in := f.offerInput(n.ID, "a100-40g-sxm")
		in.MinDurationS = 600
		o := f.mustOffer(in)
		// The quote for a short rental says the same minimum the stop bills.
		q, err := offers.Quote(*o, offers.QuoteInput{GPUs: "2", Seconds: "10"}, false, f.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if q.BilledSeconds != 600 || !q.MinimumApplied {
			t.Errorf("quote for 10 s: billed %d s (minimum applied %v), want the offer's 600 s", q.BilledSeconds, q.MinimumApplied)
		}
		rt := f.mustRent(o.ID, 2)
		if rt.MinBilledS != 600 {
			t.Fatalf("min_billed_s %d, want the offer's 600", rt.MinBilledS)
		}
		start := f.clock.Now().Truncate(time.Second)
		if err := db.W.Model(&models.Rental{}).Where("id = ?", rt.ID).
			Updates(map[string]any{"status": models.RentalRunning, "running_since": start, "billed_until": start}).Error; err != nil {
			t.Fatal(err)
		}
		f.clock.Set(start.Add(10 * time.Second))
		if _, err := f.rentals.Stop(f.ctx, rt.ID, rentals.StopByUser); err != nil {
			t.Fatal(err)
		}
		got := f.rental(rt.ID)
		want, _ := pricing.Accrue(rateOf(got), start, start.Add(600*time.Second), 0)
		if got.BilledFen != want || got.BilledUntil == nil || !got.BilledUntil.Equal(start.Add(600*time.Second)) {
			t.Errorf("billed %d fen up to %v after 10 s, want %d fen for the 600 s minimum", got.BilledFen, got.BilledUntil, want)
		}
	})
}
