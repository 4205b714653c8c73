package rentals

import (
	"context"

	"gorm.io/gorm"

	"suanli/images"
	"suanli/models"
)

// resolveImage turns a rent request's image (a catalogue slug, a custom
// reference where the offer allows one, or "" for the offer's default)
// into the image the node runs, refusing an image whose CUDA runtime is
// newer than the offer node's driver supports (both versions named), and
// registry credentials that are not for a custom image or not valid
// (images.CheckRegistryAuth).
func (s *Service) resolveImage(ctx context.Context, o *models.Offer, ref string, auth *images.RegistryAuth) (images.Choice, error) {
	c, err := images.Resolve(ctx, s.DB, *o, ref)
	if err != nil {
		return c, err
	}
	if auth != nil {
		if err := images.CheckRegistryAuth(c, *auth, s.Credentials); err != nil {
			return c, err
		}
	}
	return c, images.CheckOfferNode(s.DB.R.WithContext(ctx), *o, c)
}

// compatibleNodes keeps, in tx, those of the candidate nodes that can run
// the rental's image (see images.CompatibleNodes). A rental from before
// images runs the agent's default image anywhere.
func (s *Service) compatibleNodes(ctx context.Context, tx *gorm.DB, r *models.Rental, o *models.Offer, nodes []int64) ([]int64, error) {
	if r.Image == "" || len(nodes) == 0 {
		return nodes, nil
	}
	c, err := images.Resolve(ctx, s.DB, *o, r.Image)
	if err != nil {
		// Offered when rented, but no longer (the provider changed the
		// offer's images): judge it as the custom image it now is.
		c = images.Choice{Reference: r.Image, Custom: true}
	}
	return images.CompatibleNodes(tx, nodes, c)
}
