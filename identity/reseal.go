package identity

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"suanli/models/identitystore"
)

// ResealCount is what Reseal did to one kind of sealed values: how many
// it looked at and how many it sealed again under the current key.
type ResealCount struct {
	Kind           string
	Seen, Resealed int
}

// resealPage is how many values one step of the walk reads.
const resealPage = 200

// Reseal seals every stored piece of personal information again under
// the ring's current key and computes its blind index again (a rotated
// key changes every digest), kind by kind (resealers): what `suanli admin
// reseal-pii` runs after a new --pii-key, the old key kept in
// --pii-old-keys until it has. A value no key of the ring opens stops it
// with an error naming it.
func (s *Service) Reseal(ctx context.Context) ([]ResealCount, error) {
	if s.Ring == nil {
		return nil, unavailable()
	}
	var out []ResealCount
	for _, r := range s.resealers() {
		seen, resealed, err := r.Run(ctx)
		out = append(out, ResealCount{Kind: r.Name, Seen: seen, Resealed: resealed})
		if err != nil {
			return out, fmt.Errorf("reseal %s: %w", r.Name, err)
		}
	}
	return out, nil
}

// resealIndividuals reseals individuals' ID numbers and recomputes their
// digests, one transaction per value.
func (s *Service) resealIndividuals(ctx context.Context) (seen, resealed int, err error) {
	var after int64
	for {
		rows, err := identitystore.SealedPage(ctx, s.DB, after, resealPage)
		if err != nil || len(rows) == 0 {
			return seen, resealed, err
		}
		for _, in := range rows {
			after = in.UserID
			seen++
			plain, err := s.Ring.Open(in.IDSealed, idContext(in.UserID))
			if err != nil {
				return seen, resealed, fmt.Errorf("the ID number of user %d: %w", in.UserID, err)
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
			if err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
				ok, err = identitystore.UpdateSealed(tx, in.UserID, in.IDSealed, sealed, digest)
				return err
			}); err != nil {
				return seen, resealed, err
			}
			if ok {
				resealed++
			}
		}
	}
}
