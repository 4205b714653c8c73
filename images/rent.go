package images

import (
	"context"

	"gorm.io/gorm"

	"suanli/models"
	"suanli/secrets"
)

// ResolveForRent turns a rent request's image (a catalogue slug, a custom
// reference where the offer allows one, or "" for the offer's default)
// into the image the node runs, refusing an image whose CUDA runtime is
// newer than the offer node's driver supports (both versions named), and
// registry credentials that are not for a custom image or not valid
// (images.CheckRegistryAuth).
func ResolveForRent(ctx context.Context, db *models.DB, box *secrets.Box, o *models.Offer, ref string, auth *RegistryAuth) (Choice, error) {
	c, err := Resolve(ctx, db, *o, ref)
	if err != nil {
		return c, err
	}
	if auth != nil {
		if err := CheckRegistryAuth(c, *auth, box); err != nil {
			return c, err
		}
	}
	return c, CheckOfferNode(db.R.WithContext(ctx), *o, c)
}

// CompatibleRentalNodes keeps, in tx, those of the candidate nodes that can run
// the rental's image (see CompatibleNodes). A rental from before
// images runs the agent's default image anywhere.
func CompatibleRentalNodes(ctx context.Context, db *models.DB, tx *gorm.DB, r *models.Rental, o *models.Offer, nodes []int64) ([]int64, error) {
	if r.Image == "" || len(nodes) == 0 {
		return nodes, nil
	}
	c, err := Resolve(ctx, db, *o, r.Image)
	if err != nil {
		// Offered when rented, but no longer (the provider changed the
		// offer's images): judge it as the custom image it now is.
		c = Choice{Reference: r.Image, Custom: true}
	}
	return CompatibleNodes(tx, nodes, c)
}
