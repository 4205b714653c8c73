package rentals_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"suanli/apperr"
	"suanli/bids"
	"suanli/dbtest"
	"suanli/interruptions"
	"suanli/models"
	"suanli/pricing"
	"suanli/rentals"
)

// bidNode adds a node of the RTX offer's provider with its own offer
// (one GPU, or gpus), opted into interruptible rentals at floor fen,
// starts its agent and returns the offer.
func (r *rig) bidNode(floor int64, gpus ...int) models.Offer {
	r.t.Helper()
	base := r.rtxOffer()
	nodeID := r.addSibling(base, max(1, slices.Max(append(gpus, 1))))
	if err := r.db.W.Model(&models.Offer{}).Where("node_id = ?", nodeID).Update("interruptible_floor_per_gpu_hour_fen", floor).Error; err != nil {
		r.t.Fatal(err)
	}
	var o models.Offer
	if err := r.db.R.Where("node_id = ?", nodeID).First(&o).Error; err != nil {
		r.t.Fatal(err)
	}
	r.startAgent(nodeID)
	r.waitReady(nodeID)
	return o
}

func withBid(fen int64) func(*rentals.RentInput) {
	return func(in *rentals.RentInput) { in.Bid = &fen }
}

// liveHolds counts the live holds on the node's GPUs.
func (r *rig) liveHolds(nodeID int64) int64 {
	r.t.Helper()
	var n int64
	if err := r.db.R.Model(&models.RentalGPU{}).Where("node_id = ? AND released_at IS NULL", nodeID).Count(&n).Error; err != nil {
		r.t.Fatal(err)
	}
	return n
}

// Fifty bids and one on-demand rent race for a one-GPU node: the on-demand
// rent always gets it; every bid that got it in between had to outbid the
// one before (so the bids that ran rise strictly, in the order they took
// it), and each was interrupted, billed to the second its grace began; the
// others were refused as outbid and left nothing behind. When the
// on-demand rental stops, the highest bid resumes; the ledger balances.
func TestBidsRaceOnDemandOnOneGPU(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{})
		r.quiet()
		o := r.bidNode(200)
		// The on-demand rent goes once some bid holds the GPU, while the
		// other bids still race.
		var onDemand *models.Rental
		held := make(chan struct{})
		var once sync.Once
		errs := together(51, func(i int) error {
			if i == 50 {
				<-held
				rt, err := r.rent(o.ID, 1)
				onDemand = rt
				return err
			}
			_, err := r.rent(o.ID, 1, withBid(int64(200+6*i)))
			if err == nil {
				once.Do(func() { close(held) })
			}
			return err
		})
		if errs[50] != nil {
			t.Fatalf("the on-demand rent: %v", errs[50])
		}
		for i, err := range errs[:50] {
			if err != nil && !errors.Is(err, bids.ErrOutbid) {
				t.Errorf("bid %d: %v, want nil or outbid", i, err)
			}
		}
		// In the order they took the GPU: the node's lock serialises the
		// rents, and a rent writes its hold after taking the lock (a rental's
		// own id is assigned before it).
		var ran []models.Rental
		if err := db.R.Raw(`SELECT r.* FROM rentals r JOIN rental_gpus rg ON rg.rental_id = r.id
			WHERE r.offer_id = ? AND r.bid_per_gpu_hour_fen IS NOT NULL ORDER BY rg.id`, o.ID).Scan(&ran).Error; err != nil {
			t.Fatal(err)
		}
		accepted := 0
		for _, err := range errs[:50] {
			if err == nil {
				accepted++
			}
		}
		if len(ran) != accepted || accepted == 0 {
			t.Fatalf("%d bid rentals stored, %d bids accepted (want equal, at least one)", len(ran), accepted)
		}
		for i, rt := range ran {
			if rt.Status != models.RentalInterrupted {
				t.Errorf("bid rental %d (¥%s) is %s, want interrupted", rt.ID, pricing.FenToYuanString(*rt.BidPerGPUHourFen), rt.Status)
			}
			if i > 0 && *rt.BidPerGPUHourFen <= *ran[i-1].BidPerGPUHourFen {
				t.Errorf("bid rental %d at %d fen came after one at %d fen: it could not have outbid it", rt.ID, *rt.BidPerGPUHourFen, *ran[i-1].BidPerGPUHourFen)
			}
			if rt.BilledUntil != nil && rt.InterruptedAt != nil && rt.BilledUntil.After(*rt.InterruptedAt) {
				t.Errorf("bid rental %d billed until %s, after its interruption at %s", rt.ID, rt.BilledUntil, rt.InterruptedAt)
			}
		}
		if n := r.liveHolds(o.NodeID); n != 1 {
			t.Fatalf("%d live holds on the one-GPU node, want 1", n)
		}
		r.waitStatus(onDemand.ID, models.RentalRunning)

		r.stop(onDemand.ID)
		// The market pass (here called directly) resumes the highest bid.
		if _, err := (&interruptions.Service{Rentals: r.rentals}).Pass(r.ctx); err != nil {
			t.Fatal(err)
		}
		top := ran[len(ran)-1]
		r.waitStatus(top.ID, models.RentalRunning)
		for _, rt := range ran[:len(ran)-1] {
			if got := r.rental(rt.ID).Status; got != models.RentalInterrupted {
				t.Errorf("lower bid rental %d is %s after the resume, want still interrupted", rt.ID, got)
			}
		}
		if n := r.liveHolds(o.NodeID); n != 1 {
			t.Fatalf("%d live holds after the resume, want 1", n)
		}
		r.checkLedger()
	})
}

// A running bid interrupted by an on-demand rent while meter passes run
// is billed exactly from its start to the second its grace began, once:
// nothing twice, nothing after; the on-demand rental's checks wait for its
// container's stop; further meter passes bill it nothing.
func TestInterruptionBillsToTheGraceOnce(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{})
		r.quiet()
		o := r.bidNode(300)
		bid := r.mustRent(o.ID, 1, withBid(350))
		r.waitStatus(bid.ID, models.RentalRunning)
		r.clock.Advance(10 * time.Minute)
		if _, err := r.rentals.Meter(r.ctx); err != nil {
			t.Fatal(err)
		}
		r.clock.Advance(97 * time.Second)
		var onDemand *models.Rental
		errs := together(4, func(i int) error {
			if i == 0 {
				rt, err := r.rent(o.ID, 1)
				onDemand = rt
				return err
			}
			_, err := r.rentals.Meter(r.ctx)
			return err
		})
		for i, err := range errs {
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		got := r.rental(bid.ID)
		if got.Status != models.RentalInterrupted || got.InterruptedAt == nil || got.GraceUntil == nil {
			t.Fatalf("bid rental: %s, interrupted at %v, grace until %v", got.Status, got.InterruptedAt, got.GraceUntil)
		}
		if !got.BilledUntil.Equal(*got.InterruptedAt) {
			t.Errorf("billed until %s, interrupted at %s: want the same second", got.BilledUntil, got.InterruptedAt)
		}
		if d := got.GraceUntil.Sub(*got.InterruptedAt); d != bids.Grace {
			t.Errorf("grace %s, want %s", d, bids.Grace)
		}
		want, _ := pricing.Accrue(rateOf(got), *got.RunningSince, *got.InterruptedAt, 0)
		if paid := -r.walletSum(bid.ID); paid != want {
			t.Errorf("the bid rental paid %d fen, want %d (its bid from %s to %s)", paid, want, got.RunningSince, got.InterruptedAt)
		}
		if got.InterruptReason == "" || got.InterruptMsg.Key != "bids.reason.on_demand" {
			t.Errorf("interrupt reason %q (%q), want the on-demand one", got.InterruptReason, got.InterruptMsg.Key)
		}
		r.waitStatus(onDemand.ID, models.RentalRunning)
		// The on-demand rental's checks began only once the bid's container
		// was stopped.
		var stopDone, verifyAt time.Time
		if err := db.R.Raw(`SELECT done_at FROM agent_tasks WHERE rental_id = ? AND kind = 'stop'`, bid.ID).Row().Scan(&stopDone); err != nil {
			t.Fatal(err)
		}
		if err := db.R.Raw(`SELECT created_at FROM agent_tasks WHERE rental_id = ? AND kind = 'verify' ORDER BY id LIMIT 1`, onDemand.ID).Row().Scan(&verifyAt); err != nil {
			t.Fatal(err)
		}
		if verifyAt.Before(stopDone) {
			t.Errorf("the on-demand rental's checks were asked for at %s, before the interrupted container stopped at %s", verifyAt, stopDone)
		}
		var payload string
		if err := db.R.Raw(`SELECT payload FROM agent_tasks WHERE rental_id = ? AND kind = 'stop'`, bid.ID).Row().Scan(&payload); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`"grace_seconds":%d`, int(bids.Grace/time.Second)); !strings.Contains(payload, want) {
			t.Errorf("the stop task %s does not give the grace (%s)", payload, want)
		}
		r.clock.Advance(time.Hour)
		if _, err := r.rentals.Meter(r.ctx); err != nil {
			t.Fatal(err)
		}
		if paid := -r.walletSum(bid.ID); paid != want {
			t.Errorf("after another hour the interrupted rental paid %d fen, want still %d", paid, want)
		}
		r.checkLedger()
	})
}

// A bid refuses what the offer does not take, and a raise only goes up;
// a raise of a running bid bills the old bid to that second and the new
// one after; an interrupted rental that is stopped no longer resumes.
func TestBidRulesAndRaise(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{})
		r.quiet()
		o := r.bidNode(300)
		for _, c := range []struct {
			bid   int64
			field string
		}{{299, bids.Field}, {o.PricePerGPUHourFen + 1, bids.Field}} {
			if _, err := r.rent(o.ID, 1, withBid(c.bid)); fieldOf(err) != c.field {
				t.Errorf("bid %d: %v, want an error on %s", c.bid, err, c.field)
			}
		}
		if _, err := r.rent(o.ID, 1, withBid(300), func(in *rentals.RentInput) { in.Term = pricing.Week }); fieldOf(err) != "term" {
			t.Errorf("a bid for a week: %v, want an error on term", err)
		}
		if _, err := r.rent(r.rtxOffer().ID, 1, withBid(300)); fieldOf(err) != "term" {
			t.Errorf("a bid on an offer without a floor: %v, want an error on term", err)
		}
		bid := r.mustRent(o.ID, 1, withBid(300))
		r.waitStatus(bid.ID, models.RentalRunning)
		r.clock.Advance(5 * time.Minute)
		if _, err := r.rentals.RaiseBid(r.ctx, r.user, r.org, r.member, bid.ID, 300); fieldOf(err) != bids.Field {
			t.Errorf("a raise to the same bid: %v, want an error on %s", err, bids.Field)
		}
		raised, err := r.rentals.RaiseBid(r.ctx, r.user, r.org, r.member, bid.ID, 400)
		if err != nil {
			t.Fatal(err)
		}
		if *raised.BidPerGPUHourFen != 400 || raised.PricePerGPUHourFen != 400 {
			t.Fatalf("after the raise: bid %v, price %d", raised.BidPerGPUHourFen, raised.PricePerGPUHourFen)
		}
		old := r.rental(bid.ID)
		before := -r.walletSum(bid.ID)
		wantBefore, _ := pricing.Accrue(pricing.Rate{PricePerGPUHourFen: 300, GPUs: 1, OffpeakPct: old.OffpeakPct, StudentPct: old.StudentPct,
			SLASurchargePct: old.SLASurchargePct}, *old.RunningSince, *old.BilledUntil, 0)
		if before != wantBefore {
			t.Errorf("billed %d fen at the old bid up to the raise, want %d", before, wantBefore)
		}
		on := r.mustRent(o.ID, 1)
		if got := r.waitStatus(bid.ID, models.RentalInterrupted); got.InterruptMsg.Key != "bids.reason.on_demand" {
			t.Errorf("interrupt message %q", got.InterruptMsg.Key)
		}
		if _, err := r.rentals.Stop(r.ctx, bid.ID, rentals.StopByUser); err != nil {
			t.Fatal(err)
		}
		if got := r.rental(bid.ID); got.Status != models.RentalStopped {
			t.Fatalf("a stopped interrupted rental is %s", got.Status)
		}
		r.waitStatus(on.ID, models.RentalRunning)
		r.stop(on.ID)
		if n, err := (&interruptions.Service{Rentals: r.rentals}).Pass(r.ctx); err != nil || n != 0 {
			t.Errorf("the resume pass resumed %d (%v), want none: the renter stopped it", n, err)
		}
		// A resume that read the rental before its renter stopped it (the
		// pass's list is older than the stop) does not start it either.
		if _, err := r.rentals.Start(r.ctx, r.user, r.org, bid.ID, rentals.StartInput{Resume: true}); !errors.Is(err, rentals.ErrNotInterrupted) {
			t.Errorf("a resume of the stopped rental: %v, want ErrNotInterrupted", err)
		}
		if got := r.rental(bid.ID); got.Status != models.RentalStopped {
			t.Errorf("after the refused resume the rental is %s", got.Status)
		}
		r.checkLedger()
	})
}

// fieldOf is the field an error names ("" for none).
func fieldOf(err error) string {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return ae.Field
	}
	return ""
}

// An on-demand rent of two GPUs interrupts both one-GPU bids holding
// them while both bidders raise their bids: each raise waits for the
// interruption or goes first, nobody deadlocks, and the GPUs end in
// exactly one live rental.
func TestOneRentInterruptsTwoBids(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{})
		r.quiet()
		o := r.bidNode(300, 2)
		a := r.mustRent(o.ID, 1, withBid(320))
		b := r.mustRent(o.ID, 1, withBid(310))
		r.waitStatus(a.ID, models.RentalRunning)
		r.waitStatus(b.ID, models.RentalRunning)
		var on *models.Rental
		errs := together(3, func(i int) error {
			var err error
			switch i {
			case 0:
				on, err = r.rent(o.ID, 2)
			case 1:
				_, err = r.rentals.RaiseBid(r.ctx, r.user, r.org, r.member, a.ID, 330)
			case 2:
				_, err = r.rentals.RaiseBid(r.ctx, r.user, r.org, r.member, b.ID, 315)
			}
			return err
		})
		for i, err := range errs {
			// An interrupted rental's bid may still rise.
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
		}
		if on == nil {
			t.Fatal("the on-demand rent failed (above): nothing to follow")
		}
		r.waitStatus(on.ID, models.RentalRunning)
		for _, id := range []int64{a.ID, b.ID} {
			if got := r.rental(id); got.Status != models.RentalInterrupted || !got.BilledUntil.Equal(*got.InterruptedAt) {
				t.Errorf("bid rental %d is %s, billed until %s, interrupted at %v; want interrupted, billed to then", id, got.Status, got.BilledUntil, got.InterruptedAt)
			}
		}
		if n := r.liveHolds(o.NodeID); n != 2 {
			t.Errorf("%d live holds on the two-GPU node, want 2 (the on-demand rental's)", n)
		}
		r.checkLedger()
	})
}
