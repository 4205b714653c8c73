package witness

import (
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/catalog"
	"suanli/models"
	"suanli/models/rentalstore"
)

// ResultsPath is the verifier's endpoint for a rental (the route's path
// with the id filled in).
func ResultsPath(rentalID int64) string {
	return fmt.Sprintf("/witness/v1/rentals/%d/results", rentalID)
}

// OptOutFile is the file in a rental's workspace that keeps the platform
// images from running the verifier at start (the renter's opt-out; it
// persists with the volume).
const OptOutFile = "/workspace/.suanli-no-verify"

// LaunchVerify gives, in tx, a launch task being handed to its node the
// verifier's endpoint (under baseURL, the address containers reach the
// server at) and a fresh credential for its rental only, and asks for a
// run at start when the rental runs a platform (catalogue) image. A
// no-GPU launch, a task of another kind, or no baseURL gets nothing.
func LaunchVerify(tx *gorm.DB, t *agent.Task, baseURL string, now time.Time) error {
	if t.Kind != agent.TaskLaunch || t.RentalID == 0 || t.NoGPU || len(t.GPUUUIDs) == 0 || baseURL == "" {
		return nil
	}
	token, err := IssueCredential(tx, t.RentalID, now)
	if err != nil {
		return err
	}
	v := &agent.Verify{URL: strings.TrimRight(baseURL, "/") + ResultsPath(t.RentalID), Token: token}
	imgs, err := models.CatalogueImages(tx)
	if err != nil {
		return err
	}
	for _, im := range imgs {
		if t.Image != "" && im.Reference == t.Image {
			v.AtStart = true
		}
	}
	r, err := rentalstore.ReadRental(tx, t.RentalID)
	if err != nil {
		return err
	}
	if o, err := rentalstore.ReadOffer(tx, r.OfferID); err == nil {
		v.GPUName = catalog.GPUName(o.GPUModel)
	}
	t.Verify = v
	return nil
}
