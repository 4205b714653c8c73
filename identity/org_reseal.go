package identity

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"suanli/models"
	"suanli/models/identitystore"
	"suanli/secrets"
)

// orgResealBatch is how many licences' references a reseal reads at a time
// (each licence's file is then read, resealed and written on its own).
const orgResealBatch = 100

// ResealOrgLicences seals every stored business licence again under the
// ring's current key (a key rotation: `suanli admin reseal-pii`, after
// the new key was made current and the old one listed as old), one
// licence per transaction, and returns how many it resealed. Licences
// already under the current key are left as they are, so it may run
// again after an interruption. A licence that opens under no key of the
// ring stops it with an error (nothing is lost: it stays as it was).
func ResealOrgLicences(ctx context.Context, db *models.DB, ring *secrets.Ring) (int, error) {
	_, n, err := resealOrgLicences(ctx, db, ring)
	return n, err
}

// ResealOrgLicences is the package function for the service's database
// and ring, in the shape of its other resealers: how many licences it
// looked at and how many it sealed again.
func (s *Service) ResealOrgLicences(ctx context.Context) (seen, resealed int, err error) {
	return resealOrgLicences(ctx, s.DB, s.Ring)
}

func resealOrgLicences(ctx context.Context, db *models.DB, ring *secrets.Ring) (seen, resealed int, err error) {
	if ring == nil {
		return 0, 0, errOrgUnavailable()
	}
	after := int64(0)
	for {
		refs, err := identitystore.OrgLicencesAfter(ctx, db, after, orgResealBatch)
		if err != nil {
			return seen, resealed, err
		}
		if len(refs) == 0 {
			return seen, resealed, nil
		}
		for _, ref := range refs {
			after = ref.VerificationID
			seen++
			err := db.Tx(ctx, func(tx *gorm.DB) error {
				old, err := identitystore.OrgLicenceSealed(tx, ref.VerificationID)
				if err != nil || ring.Current(old) {
					return err
				}
				sealed, err := ring.Reseal(old, licenceContext(ref.OrgID, ref.VerificationID))
				if err != nil {
					return fmt.Errorf("licence of organisation verification #%d: %w", ref.VerificationID, err)
				}
				changed, err := identitystore.SetOrgLicenceSealed(tx, ref.VerificationID, old, sealed)
				if changed {
					resealed++
				}
				return err
			})
			if err != nil {
				return seen, resealed, err
			}
		}
	}
}
