package standingorders

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/models"
	"suanli/models/orderstore"
	supplystore "suanli/models/supply"
)

// A bad order is refused with every problem named by its field, and
// nothing is stored.
func TestPlaceRefusesBadOrdersNamingTheField(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, 1_000_000)
		now := r.clock.Now()
		for _, c := range []struct {
			name   string
			change func(*Input)
			fields []string
		}{
			{"no model", func(in *Input) { in.Filters.GPU = "" }, []string{FieldGPU}},
			{"unknown model", func(in *Input) { in.Filters.GPU = "gtx-1080" }, []string{FieldGPU}},
			{"unknown city", func(in *Input) { in.Filters.City = "atlantis" }, []string{FieldCity}},
			{"latency without a city", func(in *Input) { in.Filters.MaxLatencyMS = 20 }, []string{FieldFrom}},
			{"a city without a latency", func(in *Input) { in.Filters.From = "chengdu" }, []string{FieldMaxLatency}},
			{"latency too large", func(in *Input) { in.Filters.From, in.Filters.MaxLatencyMS = "chengdu", 5000 }, []string{FieldMaxLatency}},
			{"no price", func(in *Input) { in.Filters.MaxPriceFen = 0 }, []string{FieldMaxPrice}},
			{"a bid on an on-demand order", func(in *Input) { in.Filters.BidPerGPUHourFen = 300 }, []string{FieldBid}},
			{"interruptible without a bid", func(in *Input) { in.Filters.Interruptible, in.Filters.MaxPriceFen = true, 0 }, []string{FieldBid}},
			{"interruptible with a max price", func(in *Input) { in.Filters.Interruptible, in.Filters.BidPerGPUHourFen = true, 300 }, []string{FieldMaxPrice}},
			{"no GPUs", func(in *Input) { in.GPUs = 0 }, []string{FieldGPUs}},
			{"too many GPUs", func(in *Input) { in.GPUs = 65 }, []string{FieldGPUs}},
			{"no action", func(in *Input) { in.Action = "" }, []string{FieldAction}},
			{"an unknown action", func(in *Input) { in.Action = "buy" }, []string{FieldAction}},
			{"no expiry", func(in *Input) { in.ExpiresAt = time.Time{} }, []string{FieldExpiresAt}},
			{"an expiry in the past", func(in *Input) { in.ExpiresAt = now.Add(-time.Minute) }, []string{FieldExpiresAt}},
			{"an expiry past 30 days", func(in *Input) { in.ExpiresAt = now.Add(MaxAhead + time.Minute) }, []string{FieldExpiresAt}},
			{"no SSH key for a rent", func(in *Input) { in.SSHPublicKey = "" }, []string{FieldSSHPublicKey}},
			{"a bad SSH key", func(in *Input) { in.SSHPublicKey = "ssh-ed25519 AAAA" }, []string{FieldSSHPublicKey}},
			{"an unknown SLA tier", func(in *Input) { in.SLA = "gold" }, []string{FieldSLA}},
			{"an unknown image", func(in *Input) { in.Image = "no-such-image" }, []string{FieldImage}},
			{"a bad image reference", func(in *Input) { in.Image = "Registry/Name:Tag" }, []string{FieldImage}},
			{"a volume of no one", func(in *Input) { in.VolumeID = 99999 }, []string{FieldVolumeID}},
			{"a volume and a size", func(in *Input) { in.VolumeID, in.VolumeGB = 1, 50 }, []string{FieldVolumeGB}},
			{"a negative size", func(in *Input) { in.VolumeGB = -1 }, []string{FieldVolumeGB}},
			{"several at once", func(in *Input) { in.Filters.GPU, in.GPUs, in.ExpiresAt = "", 0, time.Time{} }, []string{FieldGPU, FieldGPUs, FieldExpiresAt}},
		} {
			in := r.input(1, 9000)
			c.change(&in)
			_, err := r.svc.Place(r.ctx, r.user, r.org, r.member, in)
			var fs apperr.Fields
			if !errors.As(err, &fs) {
				t.Errorf("%s: %v, want the fields' problems", c.name, err)
				continue
			}
			var got []string
			for _, f := range fs {
				got = append(got, f.Field)
				if f.Code != apperr.EINVALID || f.Message == "" {
					t.Errorf("%s: %+v, want invalid with a message", c.name, f)
				}
			}
			for _, want := range c.fields {
				if !slices.Contains(got, want) {
					t.Errorf("%s: problems %v, want one of %s", c.name, got, want)
				}
			}
		}
		var n int64
		must(t, db.R.Model(&orderstore.Order{}).Count(&n).Error)
		if n != 0 {
			t.Fatalf("%d orders stored, want none", n)
		}
		// A notify order needs no key, image or volume.
		in := r.input(1, 9000)
		in.Action, in.SSHPublicKey = orderstore.ActionNotify, ""
		if o := r.place(in); o.Status != orderstore.Open || o.SSHPublicKey != "" {
			t.Fatalf("a notify order: %+v", o)
		}
	})
}

// An order whose GPUs are not free stays open; when they come free, many
// availability changes and passes racing (20 goroutines, each freeing a
// GPU and running a pass of its own service, as workers on several
// replicas would) rent exactly once: one rental, the order filled with
// its id, one mail.
func TestOrderFiresExactlyOnceWhenChangesRace(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, 1_000_000)
		o := r.place(r.input(2, 9000))
		if o.Status != orderstore.Open || len(r.rentals()) != 0 {
			t.Fatalf("with no free GPU the order is %s with %d rentals, want open with none", o.Status, len(r.rentals()))
		}
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for i := range 20 {
			wg.Go(func() {
				r.free(i % 4)
				svc := &Service{DB: r.db, Rentals: r.svc.Rentals, Accounts: r.svc.Accounts}
				if err := svc.Pass(context.Background()); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("a pass: %v", err)
		}
		r.pass()
		rs := r.rentals()
		if len(rs) != 1 {
			t.Fatalf("%d rentals, want exactly 1", len(rs))
		}
		got := r.order(o.ID)
		if got.Status != orderstore.Filled || got.RentalID == nil || *got.RentalID != rs[0].ID || got.OfferID == nil || *got.OfferID != r.offer.ID {
			t.Fatalf("order %+v, want filled with rental %d on offer %d", got, rs[0].ID, r.offer.ID)
		}
		if rs[0].GPUs != 2 || rs[0].OfferID != r.offer.ID || rs[0].SSHPublicKey != sshKey() {
			t.Fatalf("rental %+v, want 2 GPUs of the offer with the order's key", rs[0])
		}
		if ms := r.mails(orderNo(o.ID)); len(ms) != 1 || !strings.Contains(ms[0].Body, orderNo(rs[0].ID)) {
			t.Fatalf("mails about the order: %+v, want one naming rental %d", ms, rs[0].ID)
		}
	})
}

// An order whose wallet cannot pay an hour when it matches fails with the
// reason (code and message), mails it, and rents nothing; the next order
// (funded) is not blocked by it.
func TestEmptyWalletFailsTheOrderWithTheReason(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, 0)
		o := r.place(r.input(1, 9000))
		r.free(0)
		r.pass()
		got := r.order(o.ID)
		if got.Status != orderstore.Failed || got.FailureCode != apperr.EINSUFFICIENTFUNDS || !strings.Contains(got.Failure, "balance") ||
			got.FailureMsg.Key != "err.rent_balance" || got.RentalID != nil {
			t.Fatalf("order %+v, want failed for the balance", got)
		}
		if n := len(r.rentals()); n != 0 {
			t.Fatalf("%d rentals, want none", n)
		}
		if ms := r.mails(orderNo(o.ID)); len(ms) != 1 {
			t.Fatalf("%d mails about the failure, want 1", len(ms))
		}
		// Funded now, a new order rents the GPU the failed one did not take.
		must(t, db.Tx(r.ctx, func(tx *gorm.DB) error {
			return billing.CreditPromo(tx, r.org.ID, 1_000_000, "promo_credit", "test funds", nil, nil, r.clock.Now())
		}))
		o2 := r.place(r.input(1, 9000))
		if o2.Status != orderstore.Filled || len(r.rentals()) != 1 {
			t.Fatalf("the funded order is %s with %d rentals, want filled with 1", o2.Status, len(r.rentals()))
		}
		// The failed one stays failed: a pass never retries it.
		r.free(1)
		r.pass()
		if got := r.order(o.ID); got.Status != orderstore.Failed {
			t.Fatalf("the failed order is %s again", got.Status)
		}
	})
}

// An open order past its expiry expires in the next pass (mailed once)
// and rents nothing, even with GPUs free.
func TestOrdersExpire(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, 1_000_000)
		in := r.input(1, 9000)
		in.ExpiresAt = r.clock.Now().Add(time.Hour)
		o := r.place(in)
		r.clock.Advance(time.Hour)
		r.free(0)
		r.pass()
		r.pass()
		got := r.order(o.ID)
		if got.Status != orderstore.Expired || got.EndedAt == nil || len(r.rentals()) != 0 {
			t.Fatalf("order %+v with %d rentals, want expired with none", got, len(r.rentals()))
		}
		if ms := r.mails(orderNo(o.ID)); len(ms) != 1 {
			t.Fatalf("%d mails about the expiry, want 1", len(ms))
		}
	})
}

// A notify order mails once when GPUs matching it are free, takes none
// of them, and is filled without a rental.
func TestNotifyOrderMailsOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, 1_000_000)
		in := r.input(2, 9000)
		in.Action = orderstore.ActionNotify
		o := r.place(in)
		if o.Status != orderstore.Open {
			t.Fatalf("order %s before any GPU is free", o.Status)
		}
		r.free(0)
		r.pass()
		if got := r.order(o.ID); got.Status != orderstore.Open {
			t.Fatalf("order %s with one GPU free, want open (it wants 2)", got.Status)
		}
		r.free(1, 2)
		r.pass()
		r.free(3)
		r.pass()
		got := r.order(o.ID)
		if got.Status != orderstore.Filled || got.RentalID != nil || got.OfferID == nil || *got.OfferID != r.offer.ID {
			t.Fatalf("order %+v, want filled without a rental, naming the offer", got)
		}
		ms := r.mails(orderNo(o.ID))
		if len(ms) != 1 || !strings.Contains(ms[0].Body, "/offers/") {
			t.Fatalf("mails %+v, want one linking the offer", ms)
		}
		if n := len(r.rentals()); n != 0 {
			t.Fatalf("%d rentals, want none", n)
		}
	})
}

// Two free GPUs, four orders of one GPU each and one of two: the higher
// price goes first; within one price, the order placed first; an order
// that does not get its GPUs stays open. A notify order takes nothing.
func TestFairness(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, 1_000_000)
		cheapEarly := r.place(r.input(1, 9000))
		r.clock.Advance(time.Second)
		dearLate := r.place(r.input(1, 9500))
		r.clock.Advance(time.Second)
		cheapLate := r.place(r.input(1, 9000))
		r.clock.Advance(time.Second)
		in := r.input(2, 20000)
		in.Action = orderstore.ActionNotify
		notify := r.place(in)
		r.free(0, 1)
		r.pass()
		status := func(o *orderstore.Order) orderstore.Status { return r.order(o.ID).Status }
		if status(dearLate) != orderstore.Filled || status(cheapEarly) != orderstore.Filled || status(cheapLate) != orderstore.Open {
			t.Fatalf("dear late %s, cheap early %s, cheap late %s: want filled, filled, open",
				status(dearLate), status(cheapEarly), status(cheapLate))
		}
		if status(notify) != orderstore.Filled {
			t.Fatalf("the notify order is %s, want filled (told)", status(notify))
		}
		if n := len(r.rentals()); n != 2 {
			t.Fatalf("%d rentals, want 2", n)
		}
	})
}

// Cancelling an open order deletes it (it never fires); only its placer
// or an admin of the organisation may.
func TestCancel(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, 1_000_000)
		o := r.place(r.input(1, 9000))
		was, err := r.svc.Cancel(r.ctx, r.user, o.ID)
		if err != nil || was.Status != orderstore.Open {
			t.Fatalf("cancel: %v %+v", err, was)
		}
		if _, err := orderstore.ByID(r.ctx, db, o.ID); apperr.Code(err) != apperr.ENOTFOUND {
			t.Fatalf("the cancelled order: %v, want gone", err)
		}
		r.free(0)
		r.pass()
		if n := len(r.rentals()); n != 0 {
			t.Fatalf("%d rentals after the cancel, want none", n)
		}
		if _, err := r.svc.Cancel(r.ctx, r.user, o.ID); apperr.Code(err) != apperr.ENOTFOUND {
			t.Fatalf("cancelling twice: %v, want not found", err)
		}
	})
}

// An interruptible order rents an interruptible offer at its bid (a
// rental on a bid), and an offer whose on-demand price is within the bid
// on demand.
func TestInterruptibleOrderRentsAtItsBid(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, 1_000_000)
		var o models.Offer
		must(t, db.R.Raw(`SELECT o.* FROM offers o JOIN datacenters d ON d.id = o.datacenter_id WHERE d.slug = 'sh-jiading' AND o.gpu_model = 'rtx-4090'`).Scan(&o).Error)
		if o.ID == 0 || o.InterruptibleFloorPerGPUHourFen == nil || *o.InterruptibleFloorPerGPUHourFen > 300 || o.PricePerGPUHourFen <= 300 {
			t.Fatalf("the Shanghai RTX 4090 offer %+v: want a floor at most ¥3 below its price", o)
		}
		must(t, db.W.Model(&models.Node{}).Where("id = ?", o.NodeID).Update("health", models.NodeHealthy).Error)
		must(t, db.W.Model(&models.GPU{}).Where("node_id = ?", o.NodeID).Updates(map[string]any{"health": models.GPUHealthy, "state": models.GPUFree}).Error)
		must(t, db.Tx(r.ctx, func(tx *gorm.DB) error { return supplystore.RefreshNodeAvailability(tx, o.NodeID, r.clock.Now()) }))
		in := r.input(1, 0)
		in.Filters = Filters{GPU: "rtx-4090", City: "shanghai", Interruptible: true, BidPerGPUHourFen: 300}
		got := r.place(in)
		if got.Status != orderstore.Filled || got.RentalID == nil || *got.OfferID != o.ID {
			t.Fatalf("order %+v, want filled on offer %d", got, o.ID)
		}
		rt, err := db.RentalByID(r.ctx, *got.RentalID)
		must(t, err)
		if rt.BidPerGPUHourFen == nil || *rt.BidPerGPUHourFen != 300 || rt.PricePerGPUHourFen != 300 {
			t.Fatalf("rental bid %v price %d, want a bid of 300", rt.BidPerGPUHourFen, rt.PricePerGPUHourFen)
		}
		// A bid at or above the on-demand price rents on demand.
		in.Filters.BidPerGPUHourFen = o.PricePerGPUHourFen
		got = r.place(in)
		rt, err = db.RentalByID(r.ctx, *got.RentalID)
		must(t, err)
		if got.Status != orderstore.Filled || rt.BidPerGPUHourFen != nil || rt.PricePerGPUHourFen != o.PricePerGPUHourFen {
			t.Fatalf("order %s, rental bid %v price %d: want on demand at %d", got.Status, rt.BidPerGPUHourFen, rt.PricePerGPUHourFen, o.PricePerGPUHourFen)
		}
	})
}
