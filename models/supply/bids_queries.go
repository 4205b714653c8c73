package supply

import (
	"context"
	"maps"
	"slices"

	"gorm.io/gorm"

	"suanli/models"
)

// BidHoldingStatuses are the statuses in which an interruptible rental's
// bid counts towards its offer's clearing price (bids.Clearing): those in
// which it holds the offer's GPUs and may give way to a higher bid
// (pending, provisioning, running), as the rent path chooses whom to
// interrupt (rentalstore.NodeBidHolders). A migrating rental is not
// interrupted, a stopping one is giving its GPUs back and an interrupted
// one holds none: none of them sets the price a new bid must beat.
var BidHoldingStatuses = []models.RentalStatus{models.RentalPending, models.RentalProvisioning, models.RentalRunning}

// OfferBids are the bids per GPU-hour of an offer's live interruptible
// rentals (BidHoldingStatuses), one per rental, in no order.
type OfferBids map[int64][]int64

// LiveBidsByOffer reads the bids of every offer's live interruptible
// rentals in one query (the offer index loads them with the offers).
func LiveBidsByOffer(ctx context.Context, db *models.DB) (OfferBids, error) {
	return liveBids(db.R.WithContext(ctx), "")
}

// LiveBidsOfOffers reads the bids of the live interruptible rentals of
// some offers (the offer index's patch), by offer.
func LiveBidsOfOffers(ctx context.Context, db *models.DB, offerIDs []int64) (OfferBids, error) {
	if len(offerIDs) == 0 {
		return OfferBids{}, nil
	}
	out := OfferBids{}
	for c := range slices.Chunk(offerIDs, 5000) {
		m, err := liveBids(db.R.WithContext(ctx), " AND offer_id IN ?", c)
		if err != nil {
			return nil, err
		}
		maps.Copy(out, m)
	}
	return out, nil
}

// LiveBidsOfOffer reads the bids of one offer's live interruptible
// rentals (an offer's page and the single-offer API).
func LiveBidsOfOffer(ctx context.Context, db *models.DB, offerID int64) ([]int64, error) {
	m, err := liveBids(db.R.WithContext(ctx), " AND offer_id = ?", offerID)
	return m[offerID], err
}

func liveBids(tx *gorm.DB, cond string, args ...any) (OfferBids, error) {
	var rows []struct {
		OfferID int64
		Bid     int64
	}
	err := tx.Raw(`SELECT offer_id, bid_per_gpu_hour_fen AS bid FROM rentals
		WHERE bid_per_gpu_hour_fen IS NOT NULL AND status IN ?`+cond, append([]any{BidHoldingStatuses}, args...)...).Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	out := OfferBids{}
	for _, r := range rows {
		out[r.OfferID] = append(out[r.OfferID], r.Bid)
	}
	return out, nil
}
