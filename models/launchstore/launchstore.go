// Package launchstore holds the records and queries of a rental's launch
// spec (migration 00028): the name and labels a launcher gives it, and
// the container's environment and on-start script, kept sealed (they may
// hold API keys). Package launch owns the rules; this package reads,
// writes, seals and opens.
package launchstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/models"
	"suanli/secrets"
)

// Spec is a rental's launch spec as stored: its name, and its
// environment (a JSON object) and on-start script, each sealed with the
// platform key's box bound to the rental ("" when none was given, or
// once the rental is released).
type Spec struct {
	RentalID      int64 `gorm:"primaryKey;autoIncrement:false"`
	Name          string
	SealedEnv     string
	SealedOnstart string
	CreatedAt     time.Time
}

// TableName implements gorm's tabler.
func (Spec) TableName() string { return "rental_launch_specs" }

// Label is one key=value label of a rental.
type Label struct {
	RentalID int64  `gorm:"primaryKey;autoIncrement:false"`
	Key      string `gorm:"primaryKey"`
	Value    string
}

// TableName implements gorm's tabler.
func (Label) TableName() string { return "rental_labels" }

// ExcludedNode is a node a rental's launch was told to avoid
// (exclude_nodes): the nodes a retry, a move or a start tries skip it
// (migration 00029; rentalstore.CandidateNodes reads it).
type ExcludedNode struct {
	RentalID int64 `gorm:"primaryKey;autoIncrement:false"`
	NodeID   int64 `gorm:"primaryKey;autoIncrement:false"`
}

// TableName implements gorm's tabler.
func (ExcludedNode) TableName() string { return "rental_excluded_nodes" }

// SaveExcludedNodes records, in tx, the nodes the rental is never placed
// on (each once, whatever the list repeats).
func SaveExcludedNodes(tx *gorm.DB, rentalID int64, nodes []int64) error {
	ids := slices.Compact(slices.Sorted(slices.Values(nodes)))
	if len(ids) == 0 {
		return nil
	}
	rows := make([]ExcludedNode, len(ids))
	for i, n := range ids {
		rows[i] = ExcludedNode{RentalID: rentalID, NodeID: n}
	}
	return tx.Create(&rows).Error
}

// ExcludedNodes returns, in tx, the nodes the rental is never placed on,
// in order.
func ExcludedNodes(tx *gorm.DB, rentalID int64) ([]int64, error) {
	var ids []int64
	err := tx.Model(&ExcludedNode{}).Where("rental_id = ?", rentalID).Order("node_id").Pluck("node_id", &ids).Error
	return ids, err
}

// Secrets are the parts of a spec that are sealed at rest: the
// container's environment and its on-start script.
type Secrets struct {
	Env     map[string]string
	Onstart string
}

// Empty reports whether there is nothing to seal.
func (s Secrets) Empty() bool { return len(s.Env) == 0 && s.Onstart == "" }

// ErrSealed is a stored environment or script the server cannot open:
// no platform key is configured, or it is not the key they were sealed
// with.
var ErrSealed = errors.New("the environment and on-start script of this rental cannot be opened with the platform's secret key " +
	"(SUANLI_SECRET_KEY is not set, or is not the key they were stored with): launch again with them")

// sealContext binds a sealed part to its rental and to which part it
// is, so that it opens for no other row, as no other part, and never as
// a registry password sealed in the same box.
func sealContext(rentalID int64, part string) []byte {
	return fmt.Appendf(nil, "rental:%d\x00launch:%s", rentalID, part)
}

// Save writes, in tx, a rental's spec: its name, its secrets sealed with
// box (which must not be nil when there are any) and its labels. Nothing
// is written for an empty spec.
func Save(tx *gorm.DB, box *secrets.Box, rentalID int64, name string, labels map[string]string, s Secrets, now time.Time) error {
	if name == "" && len(labels) == 0 && s.Empty() {
		return nil
	}
	row := Spec{RentalID: rentalID, Name: name, CreatedAt: now}
	if !s.Empty() {
		if box == nil {
			return ErrSealed
		}
		if len(s.Env) > 0 {
			b, err := json.Marshal(s.Env)
			if err != nil {
				return err
			}
			row.SealedEnv = box.Seal(b, sealContext(rentalID, "env"))
		}
		if s.Onstart != "" {
			row.SealedOnstart = box.Seal([]byte(s.Onstart), sealContext(rentalID, "onstart"))
		}
	}
	if err := tx.Create(&row).Error; err != nil {
		return err
	}
	if len(labels) == 0 {
		return nil
	}
	rows := make([]Label, 0, len(labels))
	for _, k := range sortedKeys(labels) {
		rows = append(rows, Label{RentalID: rentalID, Key: k, Value: labels[k]})
	}
	return tx.Create(&rows).Error
}

// Open returns, in tx, the rental's secrets opened with box: none (and no
// error) when the rental has no spec or its secrets were forgotten;
// ErrSealed when they do not open. Only the hand-over of a launch task
// to the node's agent calls it.
func Open(tx *gorm.DB, box *secrets.Box, rentalID int64) (Secrets, error) {
	var rows []Spec
	if err := tx.Where("rental_id = ?", rentalID).Limit(1).Find(&rows).Error; err != nil || len(rows) == 0 {
		return Secrets{}, err
	}
	row := rows[0]
	if row.SealedEnv == "" && row.SealedOnstart == "" {
		return Secrets{}, nil
	}
	if box == nil {
		return Secrets{}, ErrSealed
	}
	var out Secrets
	if row.SealedEnv != "" {
		b, err := box.Open(row.SealedEnv, sealContext(rentalID, "env"))
		if err != nil {
			return Secrets{}, ErrSealed
		}
		if err := json.Unmarshal(b, &out.Env); err != nil {
			return Secrets{}, fmt.Errorf("rental %d: sealed environment: %w", rentalID, err)
		}
	}
	if row.SealedOnstart != "" {
		b, err := box.Open(row.SealedOnstart, sealContext(rentalID, "onstart"))
		if err != nil {
			return Secrets{}, ErrSealed
		}
		out.Onstart = string(b)
	}
	return out, nil
}

// Forget empties, in tx, the rental's sealed environment and script (a
// released rental never launches again); its name and labels stay, so
// that a launcher still finds it.
func Forget(tx *gorm.DB, rentalID int64) error {
	return tx.Model(&Spec{}).Where("rental_id = ?", rentalID).
		Updates(map[string]any{"sealed_env": "", "sealed_onstart": ""}).Error
}

// Shown is what the API shows of a rental's spec: its name and labels,
// and whether it holds an environment and a script — never what they
// hold.
type Shown struct {
	Name       string
	Labels     map[string]string
	EnvSet     bool
	OnstartSet bool
}

// ShownOf returns the shown specs of the rentals, by rental id; a rental
// without a spec is absent.
func ShownOf(ctx context.Context, db *models.DB, ids []int64) (map[int64]Shown, error) {
	out := map[int64]Shown{}
	if len(ids) == 0 {
		return out, nil
	}
	var specs []struct {
		RentalID           int64
		Name               string
		EnvSet, OnstartSet bool
	}
	err := db.R.WithContext(ctx).Model(&Spec{}).
		Select("rental_id, name, sealed_env <> '' AS env_set, sealed_onstart <> '' AS onstart_set").
		Where("rental_id IN ?", ids).Scan(&specs).Error
	if err != nil {
		return nil, err
	}
	for _, s := range specs {
		out[s.RentalID] = Shown{Name: s.Name, EnvSet: s.EnvSet, OnstartSet: s.OnstartSet}
	}
	var labels []Label
	if err := db.R.WithContext(ctx).Where("rental_id IN ?", ids).Order("rental_id, key").Find(&labels).Error; err != nil {
		return nil, err
	}
	for _, l := range labels {
		s := out[l.RentalID]
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[l.Key] = l.Value
		out[l.RentalID] = s
	}
	return out, nil
}

// Filter selects an organisation's rentals by their spec: every label
// of Labels (key and value) and, when not "", the name.
type Filter struct {
	Labels map[string]string
	Name   string
}

// RentalsPage returns one page of the organisation's rentals that the
// filter selects, in the API's order (live rentals first, then the rest,
// newest first), and how many it selects in all.
func RentalsPage(ctx context.Context, db *models.DB, orgID int64, f Filter, offset, limit int) ([]models.Rental, int64, error) {
	q := func() *gorm.DB {
		tx := db.R.WithContext(ctx).Model(&models.Rental{}).Where("org_id = ?", orgID)
		for _, k := range sortedKeys(f.Labels) {
			tx = tx.Where("EXISTS (SELECT 1 FROM rental_labels l WHERE l.rental_id = rentals.id AND l.key = ? AND l.value = ?)", k, f.Labels[k])
		}
		if f.Name != "" {
			tx = tx.Where("EXISTS (SELECT 1 FROM rental_launch_specs s WHERE s.rental_id = rentals.id AND s.name = ?)", f.Name)
		}
		return tx
	}
	var n int64
	if err := q().Count(&n).Error; err != nil {
		return nil, 0, err
	}
	// The statuses are constants, so spelling them into the ORDER BY is
	// safe (as models.RentalsPage does).
	live := make([]string, len(models.LiveRentalStatuses))
	for i, s := range models.LiveRentalStatuses {
		live[i] = string(s)
	}
	var rs []models.Rental
	err := q().Order("CASE WHEN status IN ('" + strings.Join(live, "','") + "') THEN 0 ELSE 1 END, id DESC").
		Offset(offset).Limit(limit).Find(&rs).Error
	return rs, n, err
}

// sortedKeys are m's keys in order, so that writes and queries are the
// same whatever the map's order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
