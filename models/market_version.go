package models

import (
	"context"
	"strings"

	"gorm.io/gorm"
)

// OffersVersion returns the counter that changes whenever anything the
// offer list shows changes; the in-memory offer index compares it to decide
// whether to catch up (see OffersChanged).
func (db *DB) OffersVersion(ctx context.Context) (int64, error) {
	var v int64
	err := db.R.WithContext(ctx).Raw(`SELECT version FROM market_versions WHERE name = 'offers'`).Scan(&v).Error
	return v, err
}

// OfferScope says what a change to the offer list touched: the offers
// themselves, or everything of some nodes, datacentres, providers or
// provider organisations. The offer index reloads only those offers; All
// (or an empty scope) reloads it whole, for rare changes without a
// narrower owner.
type OfferScope struct {
	Offers, Nodes, Datacenters, Providers, Orgs []int64
	All                                         bool
}

// Kinds of offer_changes rows, one per OfferScope field.
const (
	ChangeOffer      = "offer"
	ChangeNode       = "node"
	ChangeDatacenter = "datacenter"
	ChangeProvider   = "provider"
	ChangeOrg        = "org"
	ChangeAll        = "all"
)

// OfferLogKeep is how many versions of offer_changes the writers keep:
// a replica further behind reloads whole.
const OfferLogKeep = 8192

// offerScopeMax is the most rows one change writes; a wider change is
// logged as "all" (a replica patching that many offers would do better
// reloading).
const offerScopeMax = 2000

// OffersChanged moves the offers version in tx and logs what moved it, so
// that every replica's offer index updates just those offers. It must run
// in the transaction that makes the change: the version row's lock, held
// to commit, orders the writers, so versions commit in order.
func OffersChanged(tx *gorm.DB, sc OfferScope) error {
	var v int64
	if err := tx.Raw(`UPDATE market_versions SET version = version + 1 WHERE name = 'offers' RETURNING version`).Scan(&v).Error; err != nil {
		return err
	}
	var (
		marks []string
		args  []any
	)
	add := func(kind string, ids []int64) {
		for _, id := range ids {
			marks = append(marks, "(?, ?, ?)")
			args = append(args, v, kind, id)
		}
	}
	add(ChangeOffer, sc.Offers)
	add(ChangeNode, sc.Nodes)
	add(ChangeDatacenter, sc.Datacenters)
	add(ChangeProvider, sc.Providers)
	add(ChangeOrg, sc.Orgs)
	if sc.All || len(marks) == 0 || len(marks) > offerScopeMax {
		marks, args = []string{"(?, ?, ?)"}, []any{v, ChangeAll, 0}
	}
	if err := tx.Exec(`INSERT INTO offer_changes (version, kind, ref_id) VALUES `+strings.Join(marks, ", "), args...).Error; err != nil {
		return err
	}
	if v%512 == 0 {
		return tx.Exec(`DELETE FROM offer_changes WHERE version <= ?`, v-OfferLogKeep).Error
	}
	return nil
}

// BumpOffersVersion moves the offers version in tx for a change without a
// narrower scope: every replica reloads its offer index whole. Prefer
// OffersChanged with the offers, nodes or providers changed.
func BumpOffersVersion(tx *gorm.DB) error { return OffersChanged(tx, OfferScope{All: true}) }
