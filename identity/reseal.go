package identity

import (
	"context"
	"fmt"
	"log/slog"

	"gorm.io/gorm"

	"suanli/models/identitystore"
	"suanli/models/ledger"
)

// ResealCount is what Reseal did to one kind of sealed values: how many
// it looked at and how many it sealed again under the current key.
type ResealCount struct {
	Kind           string
	Seen, Resealed int
	// Duplicates are the verifications whose ID number is verified on
	// another account too (the blind index under the old key missed it):
	// resealed, but their digest is left as it was, since the unique
	// index refuses it; an admin decides which account keeps it. Each
	// names user ids only, never the number.
	Duplicates []Duplicate
}

// Duplicate is one ID number verified on two accounts or more, found by
// Reseal: UserID's row, and the other users holding it verified.
type Duplicate struct {
	UserID int64
	Others []int64
}

// resealPage is how many values one step of the walk reads.
const resealPage = 200

// Reseal seals every stored piece of personal information again under
// the ring's current key and computes its blind index again (a rotated
// key changes every digest), kind by kind (resealers): what `suanli admin
// reseal-pii` runs after a new --pii-key, the old key kept in
// --pii-old-keys until it has. A value no key of the ring opens stops it
// with an error naming it; an ID number found verified on another
// account too is reported in the count's Duplicates, and the walk goes on.
func (s *Service) Reseal(ctx context.Context) ([]ResealCount, error) {
	if s.Ring == nil {
		return nil, unavailable()
	}
	var out []ResealCount
	for _, r := range s.resealers() {
		c := ResealCount{Kind: r.Name}
		err := r.Run(ctx, &c)
		out = append(out, c)
		if err != nil {
			return out, fmt.Errorf("reseal %s: %w", r.Name, err)
		}
	}
	return out, nil
}

// resealIndividuals reseals individuals' ID numbers and recomputes their
// digests, one transaction per value.
func (s *Service) resealIndividuals(ctx context.Context, count *ResealCount) error {
	var after int64
	for {
		rows, err := identitystore.SealedPage(ctx, s.DB, after, resealPage)
		if err != nil || len(rows) == 0 {
			return err
		}
		for _, in := range rows {
			after = in.UserID
			count.Seen++
			plain, err := s.Ring.Open(in.IDSealed, idContext(in.UserID))
			if err != nil {
				return fmt.Errorf("the ID number of user %d: %w", in.UserID, err)
			}
			digest := s.digestID(string(plain))
			if s.Ring.Current(in.IDSealed) && in.IDDigest != nil && *in.IDDigest == digest {
				continue
			}
			sealed := in.IDSealed
			if !s.Ring.Current(sealed) {
				sealed = s.Ring.Seal(plain, idContext(in.UserID))
			}
			var ok bool
			err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
				ok, err = identitystore.UpdateSealed(tx, in.UserID, in.IDSealed, sealed, digest)
				return err
			})
			if err != nil && ledger.IsUniqueViolation(err) {
				ok, err = s.resealDuplicate(ctx, &in, sealed, digest, count)
			}
			if err != nil {
				return err
			}
			if ok {
				count.Resealed++
			}
		}
	}
}

// resealDuplicate reseals a verified ID number whose new digest another
// verified row holds already (the same number verified on two accounts,
// under two keys): the sealed value is replaced, so that the old key may
// go, the digest left as it was, and the duplicate reported with the
// other users holding it.
func (s *Service) resealDuplicate(ctx context.Context, in *identitystore.Individual, sealed, digest string, count *ResealCount) (resealed bool, err error) {
	var others []int64
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		if others, err = identitystore.VerifiedWith(tx, []string{digest}, in.UserID); err != nil {
			return err
		}
		if sealed == in.IDSealed {
			return nil
		}
		resealed, err = identitystore.UpdateSealedOnly(tx, in.UserID, in.IDSealed, sealed)
		return err
	})
	if err != nil {
		return false, err
	}
	count.Duplicates = append(count.Duplicates, Duplicate{UserID: in.UserID, Others: others})
	slog.Warn("reseal-pii: an ID number is verified on more than one account", "user", in.UserID, "others", others)
	return resealed, nil
}
