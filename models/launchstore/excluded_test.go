package launchstore_test

import (
	"slices"
	"testing"

	"gorm.io/gorm"

	"suanli/dbtest"
	"suanli/models"
	"suanli/models/launchstore"
	"suanli/models/rentalstore"
)

// A rental's excluded nodes are kept once each, and the nodes a retry, a
// move or a start picks (CandidateNodes, StartNodes) skip them; another
// rental of the same offer is not affected.
func TestExcludedNodesAreNeverPicked(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		w := newWorld(t, db)
		var own models.Node
		if err := db.R.First(&own, w.offer.NodeID).Error; err != nil {
			t.Fatal(err)
		}
		sibling := func(name string) int64 {
			n := models.Node{ProviderID: own.ProviderID, DatacenterID: own.DatacenterID, Name: name, GPUModel: own.GPUModel,
				Status: models.NodeActive, Health: models.NodeHealthy, AgentInfo: "{}", CreatedAt: w.now}
			if err := db.W.Create(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n.ID
		}
		if err := db.W.Model(&models.Node{}).Where("id = ?", own.ID).Updates(map[string]any{"status": models.NodeActive, "health": models.NodeHealthy}).Error; err != nil {
			t.Fatal(err)
		}
		b, c := sibling("excluded-b"), sibling("allowed-c")
		excluding, other := w.rental(t, models.RentalProvisioning), w.rental(t, models.RentalProvisioning)
		if err := db.Tx(w.ctx, func(tx *gorm.DB) error {
			return launchstore.SaveExcludedNodes(tx, excluding, []int64{b, own.ID, b})
		}); err != nil {
			t.Fatal(err)
		}
		if got, err := launchstore.ExcludedNodes(db.R, excluding); err != nil || !slices.Equal(got, []int64{own.ID, b}) {
			t.Fatalf("excluded %v (%v), want [%d %d]", got, err, own.ID, b)
		}
		if err := db.Tx(w.ctx, func(tx *gorm.DB) error { return launchstore.SaveExcludedNodes(tx, other, nil) }); err != nil {
			t.Fatalf("no nodes to exclude: %v", err)
		}
		for _, pick := range []struct {
			name string
			of   func(rentalID int64) ([]int64, error)
		}{
			{"candidates", func(id int64) ([]int64, error) { return rentalstore.CandidateNodes(db.R, &w.offer, id) }},
			{"start nodes", func(id int64) ([]int64, error) { return rentalstore.StartNodes(db.R, &w.offer, id) }},
		} {
			if got, err := pick.of(excluding); err != nil || !slices.Equal(got, []int64{c}) {
				t.Errorf("%s of the excluding rental: %v (%v), want [%d]", pick.name, got, err, c)
			}
			if got, err := pick.of(other); err != nil || !slices.Equal(got, []int64{own.ID, b, c}) {
				t.Errorf("%s of another rental: %v (%v), want [%d %d %d]", pick.name, got, err, own.ID, b, c)
			}
		}
	})
}

// ForgetLaunchSecrets forgets a rental's registry credential, environment
// and script, and nothing else: its name and labels stay, and another
// rental's secrets too.
func TestForgetLaunchSecrets(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		w := newWorld(t, db)
		box := testBox(t)
		gone, kept := w.rental(t, models.RentalFailed), w.rental(t, models.RentalRunning)
		for _, id := range []int64{gone, kept} {
			w.save(t, box, id, "job", map[string]string{"cluster": "c1"}, launchstore.Secrets{Env: map[string]string{"K": "v"}, Onstart: "echo"})
			if err := rentalstore.InsertRegistryAuth(db.W, &models.RentalRegistryAuth{RentalID: id, Username: "u", SealedPassword: "x", CreatedAt: w.now}); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Tx(w.ctx, func(tx *gorm.DB) error { return rentalstore.ForgetLaunchSecrets(tx, gone) }); err != nil {
			t.Fatal(err)
		}
		shown, err := launchstore.ShownOf(w.ctx, db, []int64{gone, kept})
		if err != nil {
			t.Fatal(err)
		}
		if s := shown[gone]; s.Name != "job" || s.Labels["cluster"] != "c1" || s.EnvSet || s.OnstartSet {
			t.Errorf("forgotten: %+v, want the name and labels only", s)
		}
		if s := shown[kept]; !s.EnvSet || !s.OnstartSet {
			t.Errorf("another rental's secrets went: %+v", s)
		}
		for id, want := range map[int64]bool{gone: false, kept: true} {
			if _, found, err := rentalstore.RegistryAuthOf(db.R, id); err != nil || found != want {
				t.Errorf("rental %d's registry credential: found %v (%v), want %v", id, found, err, want)
			}
		}
	})
}
