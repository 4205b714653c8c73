package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/models"
	"suanli/routenames"
	"suanli/witness"
)

// The verifier's endpoint through the real router: the rental's own
// token only (401 without one or with an unknown one, 403 with another
// rental's), exactly its GPUs (422 naming gpus), a JSON body (400), and
// a good report is recorded (201) and counted on the offer's
// renter_measured in the API.
func TestWitnessResultsEndpoint(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	ctx := context.Background()
	var o models.Offer
	if err := a.db.R.Where("demo").Order("id").First(&o).Error; err != nil {
		t.Fatal(err)
	}
	var gs []models.GPU
	if err := a.db.R.Where("node_id = ?", o.NodeID).Order("idx").Limit(2).Find(&gs).Error; err != nil || len(gs) < 2 {
		t.Fatalf("GPUs of node %d: %v %v", o.NodeID, gs, err)
	}
	u := mustUser(t, a.db, "witness-renter@suanli.example", "Wen Renter", false)
	var orgID int64
	if err := a.db.Tx(ctx, func(tx *gorm.DB) (err error) { orgID, err = models.PersonalOrgOf(tx, u.ID); return err }); err != nil {
		t.Fatal(err)
	}
	var ids [2]int64
	var tokens [2]string
	for i := range 2 {
		now := time.Now().UTC()
		r := &models.Rental{OrgID: orgID, UserID: u.ID, OfferID: o.ID, ProviderID: o.ProviderID, NodeID: &o.NodeID, GPUs: 1, SLA: "standard", Term: "on_demand",
			Status: models.RentalRunning, SSHPublicKey: testSSHKey(t), WorkspaceID: fmt.Sprintf("ws-witness-%d", i),
			PricePerGPUHourFen: o.PricePerGPUHourFen, RunningSince: &now, BilledUntil: &now, CreatedAt: now, UpdatedAt: now}
		if err := a.db.W.Create(r).Error; err != nil {
			t.Fatal(err)
		}
		ids[i] = r.ID
		err := a.db.Tx(ctx, func(tx *gorm.DB) error {
			if err := tx.Create(&models.RentalGPU{RentalID: ids[i], GPUID: gs[i].ID, NodeID: o.NodeID, AttachedAt: time.Now().UTC()}).Error; err != nil {
				return err
			}
			task := agent.Task{Kind: agent.TaskLaunch, RentalID: ids[i], GPUUUIDs: []string{gs[i].UUID}}
			if err := witness.LaunchVerify(tx, &task, a.srv.URL, time.Now().UTC()); err != nil {
				return err
			}
			tokens[i] = task.Verify.Token
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	report := func(uuid string) string {
		return fmt.Sprintf(`{"version":1,"simulated":true,"nvml":"unavailable","gemm":"not run","gpus":[{"uuid":%q,"name":"x","health":"unread","bf16_tflops":null}]}`, uuid)
	}
	post := func(id int64, token, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", a.srv.URL+a.url(routenames.WitnessResults, id), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, c := range []struct {
		name   string
		id     int64
		token  string
		body   string
		status int
		in     string
	}{
		{"no token", ids[0], "", report(gs[0].UUID), 401, `"unauthorised"`},
		{"an unknown token", ids[0], witness.TokenPrefix + "deadbeef", report(gs[0].UUID), 401, `"unauthorised"`},
		{"another rental's token", ids[0], tokens[1], report(gs[0].UUID), 403, `"forbidden"`},
		{"a rental that does not exist", 999999, tokens[0], report(gs[0].UUID), 403, `"forbidden"`},
		{"another rental's GPU", ids[0], tokens[0], report(gs[1].UUID), 422, `"gpus"`},
		{"no GPU", ids[0], tokens[0], `{"version":1,"gpus":[]}`, 422, `"gpus"`},
		{"not JSON", ids[0], tokens[0], `gpus=1`, 400, `"body"`},
		{"a bad rental id", 0, tokens[0], report(gs[0].UUID), 404, `"not_found"`},
	} {
		if st, body := post(c.id, c.token, c.body); st != c.status || !strings.Contains(body, c.in) {
			t.Errorf("%s: %d %s, want %d with %s", c.name, st, body, c.status, c.in)
		}
	}
	st, body := post(ids[0], tokens[0], report(gs[0].UUID))
	if st != http.StatusCreated || !strings.Contains(body, `"simulated":true`) || !strings.Contains(body, `"source":"renter"`) {
		t.Fatalf("a good report: %d %s", st, body)
	}
	res, body := a.get(a.url(routenames.APIOffersShow, o.ID))
	var got struct {
		RenterMeasured *struct {
			Runs             int      `json:"runs"`
			MedianBF16TFLOPS *float64 `json:"median_bf16_tflops"`
			Simulated        bool     `json:"simulated"`
		} `json:"renter_measured"`
		PlatformAudited any `json:"platform_audited"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || res.StatusCode != 200 {
		t.Fatalf("GET the offer: %d %v %s", res.StatusCode, err, body)
	}
	if rm := got.RenterMeasured; rm == nil || rm.Runs != 1 || !rm.Simulated || rm.MedianBF16TFLOPS != nil || got.PlatformAudited != nil {
		t.Fatalf("renter_measured %+v, platform_audited %v", rm, got.PlatformAudited)
	}
	_, page := a.get(a.url(routenames.OffersShow, o.ID))
	contains(t, page, `id="witness-renter"`, `id="witness-audit"`, "1 次运行")
}
