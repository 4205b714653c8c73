package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/dbtest"
	"suanli/handlers/rentaljson"
	"suanli/models"
	"suanli/models/supply"
	"suanli/routenames"
)

// volumeKeys numbers the workspace keys ownVolume makes (keys are unique).
var volumeKeys atomic.Int64

// ownVolume stores an active local volume of the organisation on the
// offer's node, made by the user, with a workspace key of its own.
func ownVolume(t *testing.T, db *models.DB, orgID, userID int64, o models.Offer) int64 {
	t.Helper()
	now := db.Now().UTC()
	v := &models.Volume{OrgID: orgID, UserID: userID, OfferID: o.ID, ProviderID: o.ProviderID, DatacenterID: o.DatacenterID, NodeID: &o.NodeID,
		Storage: models.StorageLocal, WorkspaceKey: fmt.Sprintf("ws-start-modes-%d", volumeKeys.Add(1)), SizeGB: 10, PricePerGBMonthFen: 30,
		Status: models.VolumeActive, BilledUntil: &now, CreatedAt: now}
	if err := db.W.Create(v).Error; err != nil {
		t.Fatal(err)
	}
	return v.ID
}

// stoppedRentalWithVolume stores an on-demand rental of the offer that
// ran and stopped, with an active local volume on the offer's node, for
// the user's organisation.
func stoppedRentalWithVolume(t *testing.T, db *models.DB, orgID, userID int64, o models.Offer) (rentalID, volumeID int64) {
	t.Helper()
	now := db.Now().UTC()
	volumeID = ownVolume(t, db, orgID, userID, o)
	r := &models.Rental{OrgID: orgID, UserID: userID, OfferID: o.ID, ProviderID: o.ProviderID, NodeID: &o.NodeID, GPUs: 1, SLA: "standard", Term: "on_demand",
		Status: models.RentalStopped, SSHPublicKey: testSSHKey(t), WorkspaceID: fmt.Sprintf("ws-start-modes-r%d", volumeKeys.Add(1)), Image: "suanli-test/sshd:bookworm",
		PricePerGPUHourFen: o.PricePerGPUHourFen, OffpeakPct: o.OffpeakDiscountPct, RunningSince: &now, BilledUntil: &now, StoppedAt: &now,
		VolumeID: &volumeID, CreatedAt: now, UpdatedAt: now}
	if err := db.W.Create(r).Error; err != nil {
		t.Fatal(err)
	}
	return r.ID, volumeID
}

// A stopped rental starts in no-GPU mode through the API (documented
// fields, no GPUs held), its page offers no-GPU mode at the offer's
// price, and one that moved without its files shows where they are and
// offers to start there once the node is back; bad start bodies are 400
// and change nothing.
func TestStartInNoGPUModeAndOnTheNodeHoldingTheFiles(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		u, org := fundedRenter(t, db, "nogpu@example.com", testPassword, 100_00)
		token, _, err := (&accounts.Service{DB: db}).CreateAPIToken(context.Background(), u, "laptop")
		must(t, err == nil, "token: %v", err)
		var o models.Offer
		must(t, db.R.Where("datacenter_id = (SELECT id FROM datacenters WHERE slug = 'cd-hitech')").Order("id").First(&o).Error == nil, "find offer")
		err = db.Tx(t.Context(), func(tx *gorm.DB) error {
			return supply.RecordNodeHeartbeat(tx, o.NodeID, supply.NodeHeartbeat{At: db.Now().UTC(), Health: models.NodeHealthy, AgentInfo: "{}"})
		})
		must(t, err == nil, "heartbeat: %v", err)
		id, vol := stoppedRentalWithVolume(t, db, org, u.ID, o)
		start := a.url(routenames.APIRentalsStart, id)

		// The page offers both starts, the no-GPU one at the offer's price.
		ac := loginWith(a, "renter", "nogpu@example.com", testPassword)
		res, body := ac.do("GET", a.url(routenames.RentalsShow, id), nil)
		must(t, res.StatusCode == 200 && strings.Contains(body, `id="rental-start"`) && strings.Contains(body, `id="rental-start-no-gpu"`) &&
			strings.Contains(body, fmt.Sprintf("¥0.%02d", o.NoGPUPricePerHourFen)), "stopped rental page: %d %s", res.StatusCode, body)

		for in, want := range map[string]int{`{"no_gpu":"yes"}`: 400, `{"volume_id":-1}`: 400, `{"volume_id":999999}`: 400, `{"gpus":2}`: 400} {
			res, body := a.apiPost(start, token, in)
			must(t, res.StatusCode == want && strings.Contains(body, `"error"`), "start %s: %d %s", in, res.StatusCode, body)
		}
		var cur models.Rental
		must(t, db.R.First(&cur, id).Error == nil && cur.Status == models.RentalStopped && !cur.NoGPU, "a refused start changed the rental: %+v", cur)

		res, body = a.apiPost(start, token, `{"no_gpu":true}`)
		must(t, res.StatusCode == 200, "no-GPU start: %d %s", res.StatusCode, body)
		got := decode[rentaljson.Rental](t, body)
		must(t, got.NoGPU && got.NoGPUPricePerHourFen == o.NoGPUPricePerHourFen && got.Status == "provisioning" && len(got.GPUUUIDs) == 0 &&
			got.Volume != nil && got.Volume.ID == vol && got.FilesLeft == nil, "no-GPU start answer: %s", body)
		var held int64
		must(t, db.R.Model(&models.RentalGPU{}).Where("rental_id = ? AND released_at IS NULL", id).Count(&held).Error == nil && held == 0, "a no-GPU start holds %d GPUs", held)

		// Moved without its files: the volume left on another node, whose
		// agent is silent, then back.
		id2, _ := stoppedRentalWithVolume(t, db, org, u.ID, o)
		left := ownVolume(t, db, org, u.ID, o)
		must(t, db.W.Model(&models.Volume{}).Where("id = ?", left).Update("left_by_rental_id", id2).Error == nil, "mark left")
		must(t, db.W.Model(&models.Node{}).Where("id = ?", o.NodeID).Update("health", models.NodeSilent).Error == nil, "silence node")
		_, body = a.get(a.url(routenames.APIRentalsShow, id2), "Authorization", "Bearer "+token)
		got = decode[rentaljson.Rental](t, body)
		must(t, got.FilesLeft != nil && got.FilesLeft.VolumeID == left && !got.FilesLeft.NodeBack, "files_left while the node is down: %s", body)
		res, body = ac.do("GET", a.url(routenames.RentalsShow, id2), nil)
		must(t, res.StatusCode == 200 && strings.Contains(body, `id="rental-files-left"`) && !strings.Contains(body, `id="rental-start-left"`), "page while the node is down: %s", body)

		must(t, db.W.Model(&models.Node{}).Where("id = ?", o.NodeID).Update("health", models.NodeHealthy).Error == nil &&
			db.W.Model(&models.GPU{}).Where("node_id = ?", o.NodeID).Updates(map[string]any{"health": models.GPUHealthy, "checked_at": db.Now().UTC()}).Error == nil, "node back")
		_, body = a.get(a.url(routenames.APIRentalsShow, id2), "Authorization", "Bearer "+token)
		got = decode[rentaljson.Rental](t, body)
		must(t, got.FilesLeft != nil && got.FilesLeft.NodeBack, "files_left once the node is back: %s", body)
		res, body = ac.do("GET", a.url(routenames.RentalsShow, id2), nil)
		must(t, res.StatusCode == 200 && strings.Contains(body, `id="rental-start-left"`) && strings.Contains(body, fmt.Sprintf(`name="volume_id" value="%d"`, left)),
			"page once the node is back: %s", body)

		// The page's form starts it there with the left volume.
		res, body = ac.post(a.url(routenames.RentalsStart, id2), url.Values{"volume_id": {fmt.Sprint(left)}})
		must(t, res.StatusCode == http.StatusSeeOther, "start on the old node: %d %s", res.StatusCode, snippet(body))
		var after models.Rental
		must(t, db.R.First(&after, id2).Error == nil && after.Status == models.RentalProvisioning && *after.VolumeID == left, "after the start: %+v", after)
	})
}
