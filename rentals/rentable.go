package rentals

import (
	"context"
	"fmt"

	"suanli/apperr"
	"suanli/models"
	"suanli/models/rentalstore"
	"suanli/models/supply"
)

// rentableOffer refuses renting an offer whose node is draining or removed,
// or whose provider is not approved, with a message saying so.
func rentableOffer(ctx context.Context, db *models.DB, o *models.Offer) error {
	n, err := rentalstore.NodeByID(ctx, db, o.NodeID)
	if err != nil {
		return err
	}
	if n.Status != models.NodeActive {
		return &apperr.Error{Code: apperr.ECONFLICT, Key: "providers.err.node_not_renting", Args: []any{n.Status},
			Message: fmt.Sprintf("this offer's node is %s and takes no new rentals", n.Status)}
	}
	ok, err := supply.ProviderApproved(db.R.WithContext(ctx), o.ProviderID)
	if err != nil {
		return err
	}
	if !ok {
		return &apperr.Error{Code: apperr.ECONFLICT, Message: "this offer is not listed", Key: "err.offer_not_listed"}
	}
	return nil
}
