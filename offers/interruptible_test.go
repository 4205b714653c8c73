package offers_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/dbtest"
	"suanli/models"
	"suanli/models/rentalstore"
	"suanli/offers"
	"suanli/pricing"
)

// bidRental stores an interruptible rental of one GPU of the offer with
// the bid and status, as the rent path would (only the columns the
// clearing price reads matter here).
func bidRental(t *testing.T, db *models.DB, orgID, userID int64, o models.Offer, bid int64, st models.RentalStatus) {
	t.Helper()
	now := time.Now().UTC()
	r := models.Rental{OrgID: orgID, UserID: userID, OfferID: o.ID, ProviderID: o.ProviderID, GPUs: 1, SLA: "standard", Term: pricing.OnDemand,
		Status: st, WorkspaceID: fmt.Sprintf("ws-bid-%d-%s-%d", bid, st, now.UnixNano()), PricePerGPUHourFen: bid, BidPerGPUHourFen: &bid,
		OffpeakPct: o.OffpeakDiscountPct, CreatedAt: now, UpdatedAt: now}
	if err := db.Tx(context.Background(), func(tx *gorm.DB) error { return rentalstore.InsertRental(tx, &r) }); err != nil {
		t.Fatal(err)
	}
}

// renter makes a user and returns its id and its personal organisation's.
func renter(t *testing.T, db *models.DB) (userID, orgID int64) {
	t.Helper()
	u, err := (&accounts.Service{DB: db}).CreateUser(context.Background(), "bidder@example.com", "violet-kettle-1984", "Bidder", false)
	if err != nil {
		t.Fatal(err)
	}
	if orgID, err = models.PersonalOrgOf(db.R, u.ID); err != nil {
		t.Fatalf("personal org: %v", err)
	}
	return u.ID, orgID
}

func refresh(t *testing.T, ix *offers.Index) {
	t.Helper()
	if _, err := ix.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// The clearing price an offer shows is its floor while a GPU is free or
// no bid runs, else the lowest bid of an interruptible rental that may
// give way (pending, provisioning, running): migrating, stopping,
// interrupted and ended rentals set no price. The index (one query per load)
// and the single-offer read agree.
func TestInterruptibleClearingPrice(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		ix := demoIndex(t, db)
		o := demoH100(t, db, "cd-science-city")
		// The demo floor is 55 % of ¥35.50, rounded to the fen.
		want := &offers.Interruptible{FloorFen: 1953, ClearingFen: 1953}
		l, err := ix.Offer(o.ID)
		if err != nil || l.Interruptible == nil || *l.Interruptible != *want {
			t.Fatalf("demo offer: %+v %v, want %+v", l.Interruptible, err, want)
		}
		// An offer without a floor takes no bids.
		other := demoH100(t, db, "cd-hitech")
		if l, _ := ix.Offer(other.ID); l.Interruptible != nil {
			t.Fatalf("an offer without a floor shows %+v", l.Interruptible)
		}

		uid, org := renter(t, db)
		for _, b := range []struct {
			bid int64
			st  models.RentalStatus
		}{
			{2600, models.RentalRunning}, {2300, models.RentalRunning}, {2400, models.RentalPending}, {2500, models.RentalProvisioning},
			{2000, models.RentalStopping}, {1990, models.RentalInterrupted}, {1980, models.RentalStopped}, {1970, models.RentalFailed},
			{1960, models.RentalMigrating},
		} {
			bidRental(t, db, org, uid, o, b.bid, b.st)
		}
		bumpOffers(t, db)
		refresh(t, ix)
		// GPUs are free: a bid at the floor runs now.
		if l, _ := ix.Offer(o.ID); *l.Interruptible != *want {
			t.Fatalf("with free GPUs: %+v, want %+v", l.Interruptible, want)
		}

		// Every GPU of the node is held: the lowest live bid is the price.
		if err := db.W.Exec(`UPDATE gpus SET state = ? WHERE node_id = ?`, models.GPUBusy, o.NodeID).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := db.RefreshAvailability(ctx); err != nil {
			t.Fatal(err)
		}
		refresh(t, ix)
		want.ClearingFen = 2300
		l, _ = ix.Offer(o.ID)
		if l.AvailableGPUs() != 0 || *l.Interruptible != *want {
			t.Fatalf("every GPU held: %d free, %+v, want %+v", l.AvailableGPUs(), l.Interruptible, want)
		}
		row, err := db.PublicOfferByID(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := offers.InterruptibleOf(ctx, db, &row.Offer); err != nil || *got != *want {
			t.Fatalf("InterruptibleOf: %+v %v, want %+v", got, err, want)
		}
		if got, err := offers.InterruptibleOf(ctx, db, &other); err != nil || got != nil {
			t.Fatalf("InterruptibleOf an offer without a floor: %+v %v", got, err)
		}
	})
}

// sort=interruptible_price: interruptible offers by clearing price, then
// the others, each by price and id; interruptible=1 keeps only the
// interruptible ones, and when it leaves nothing its relaxation says so.
func TestInterruptibleSortAndFilter(t *testing.T) {
	ix := demoIndex(t, dbtest.SQLite(t))
	r := search(t, ix, offers.Query{Sort: offers.SortInterruptible, PerPage: 200})
	if r.Total != 43 {
		t.Fatalf("%d offers", r.Total)
	}
	key := func(o *offers.Listed) int64 {
		if o.Interruptible == nil {
			return 1 << 62
		}
		return o.Interruptible.ClearingFen
	}
	order := func(a, b *offers.Listed) int {
		return cmp.Or(cmp.Compare(key(a), key(b)), cmp.Compare(a.PricePerGPUHourFen(), b.PricePerGPUHourFen()), cmp.Compare(a.ID, b.ID))
	}
	if !slices.IsSortedFunc(r.Offers, order) {
		t.Fatal("not in interruptible order")
	}
	n := 0
	for _, o := range r.Offers {
		if o.Interruptible != nil {
			n++
		}
	}
	if n != 6 || r.Offers[0].Interruptible == nil || r.Offers[n-1].Interruptible == nil || r.Offers[n].Interruptible != nil {
		t.Fatalf("%d interruptible offers, not first", n)
	}

	only := search(t, ix, offers.Query{Interruptible: true, PerPage: 200})
	if only.Total != n {
		t.Fatalf("interruptible=1: %d offers, want %d", only.Total, n)
	}
	for _, o := range only.Offers {
		if o.Interruptible == nil {
			t.Fatalf("interruptible=1 lists offer %d", o.ID)
		}
	}
	// Several models, merged from pre-sorted runs, in the same order.
	q := offers.Query{GPUs: []string{"h100-sxm", "rtx-4090", "l40s"}, Sort: offers.SortInterruptible, PerPage: 200}
	if m := search(t, ix, q); !slices.IsSortedFunc(m.Offers, order) || m.Offers[0].Interruptible == nil {
		t.Fatal("merged runs not in interruptible order")
	}

	none := search(t, ix, offers.Query{Interruptible: true, GPUs: []string{"b200"}})
	var relax *offers.Relaxation
	for i := range none.Relaxations {
		if none.Relaxations[i].Filter == "interruptible" {
			relax = &none.Relaxations[i]
		}
	}
	if none.Total != 0 || relax == nil || relax.Count != 1 || relax.Query.Interruptible {
		t.Fatalf("no interruptible B200: total %d, relaxation %+v", none.Total, relax)
	}
	if v := (offers.Query{Interruptible: true, Sort: offers.SortInterruptible}).Values(); v.Get("interruptible") != "1" || v.Get("sort") != "interruptible_price" {
		t.Fatalf("values %v", v)
	}
}

// The cheapest interruptible offer for the TCO: by clearing price with
// the off-peak share, as the on-demand one is by price.
func TestCheapestInterruptible(t *testing.T) {
	ix := demoIndex(t, dbtest.SQLite(t))
	c := ix.CheapestOffers("rtx-4090", 30, false)
	if c.Interruptible == nil || c.Interruptible.Interruptible == nil {
		t.Fatal("no interruptible RTX 4090")
	}
	// The demo's two: Tianfu Software Park (45 % of ¥4.98) and Jiading
	// (50 % of ¥5.00); with off-peak discounts of 30 % and 30 %.
	if got := offers.InterruptiblePriceFen(c.Interruptible, false); got != 224 {
		t.Fatalf("cheapest interruptible RTX 4090 at %d fen, want 224", got)
	}
	if c := ix.CheapestOffers("b200", 30, false); c.Interruptible != nil || c.OnDemand == nil {
		t.Fatalf("B200: %+v", c)
	}
}
