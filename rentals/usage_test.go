package rentals_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"suanli/dbtest"
	"suanli/models"
)

// usageAnswer is GET /api/v1/rentals/{id}/usage's body.
type usageAnswer struct {
	GPUs []struct {
		UUID    string `json:"uuid"`
		Samples []struct {
			At         time.Time `json:"at"`
			UtilPct    int       `json:"util_pct"`
			MemUsedMiB int64     `json:"mem_used_mib"`
			PowerW     float64   `json:"power_w"`
			TempC      int       `json:"temp_c"`
			SMClockMHz int       `json:"sm_clock_mhz"`
		} `json:"samples"`
	} `json:"gpus"`
	Simulated bool `json:"simulated"`
}

// usage asks for a rental's usage with an API token.
func (r *rig) usage(id int64, token string) (int, usageAnswer) {
	r.t.Helper()
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/v1/rentals/%d/usage", r.url, id), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	var u usageAnswer
	if res.StatusCode == http.StatusOK {
		if err := json.NewDecoder(res.Body).Decode(&u); err != nil {
			r.t.Fatal(err)
		}
	}
	return res.StatusCode, u
}

// samplesOf counts the stored telemetry samples of a GPU.
func (r *rig) samplesOf(gpuID int64) int64 {
	r.t.Helper()
	var n int64
	if err := r.db.R.Model(&models.GPUSample{}).Where("gpu_id = ?", gpuID).Count(&n).Error; err != nil {
		r.t.Fatal(err)
	}
	return n
}

// A running rental's usage is its GPUs' telemetry as the simulated
// agent's go-nvml mocks read it, sampled by the heartbeats on the
// readings' 30 s cadence (the test clock steps it); free GPUs keep no
// history; another organisation gets 404; a stopped rental keeps its
// history, and its released GPUs stop adding to it.
func TestRentalUsageFromAgentTelemetry(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		// The clock steps 30 s at a time: no node is silent for that.
		r := newRig(t, db, rigOptions{SilentAfter: time.Hour})
		r.quiet()
		o := r.rtxOffer()
		node := r.startAgent(o.NodeID)
		// Each GPU runs at its own load, so a sample names its GPU.
		load := func(idx int) int { return 20*idx + 5 }
		for i := range 4 {
			if err := node.Sim.SetUtilization(i, load(i)); err != nil {
				t.Fatal(err)
			}
		}
		r.waitReady(o.NodeID)
		rt := r.mustRent(o.ID, 2)
		r.waitStatus(rt.ID, models.RentalRunning)
		held := r.heldGPUs(rt.ID)
		if len(held) != 2 {
			t.Fatalf("holds %d GPUs", len(held))
		}
		token, _, err := r.accounts.CreateAPIToken(r.ctx, r.user, "usage")
		if err != nil {
			t.Fatal(err)
		}
		rentedAt := r.clock.Now()

		// The first heartbeat 30 s after the GPUs' last reading rewrites it,
		// and for a rented GPU that is a sample.
		r.waitHeartbeat(o.NodeID, r.clock.Advance(31*time.Second))
		status, u := r.usage(rt.ID, token)
		if status != http.StatusOK || len(u.GPUs) != 2 || len(u.GPUs[0].Samples) == 0 || len(u.GPUs[1].Samples) == 0 {
			t.Fatalf("usage after a reading: %d, %+v; want both GPUs with a sample", status, u)
		}
		if !u.Simulated {
			t.Error("usage of a rental on a simulated node is not marked simulated")
		}
		for i, g := range u.GPUs {
			if g.UUID != held[i].UUID {
				t.Errorf("GPU %d is %s, want %s (index order)", i, g.UUID, held[i].UUID)
			}
			s := g.Samples[len(g.Samples)-1]
			if s.UtilPct != load(held[i].Idx) {
				t.Errorf("GPU %s at %d %%, want the simulated load %d %%", g.UUID, s.UtilPct, load(held[i].Idx))
			}
			if s.PowerW <= 0 || s.TempC <= 0 || s.SMClockMHz <= 0 || s.MemUsedMiB < 0 {
				t.Errorf("GPU %s sample %+v: want the mock's power, temperature and clock", g.UUID, s)
			}
			if s.At.Before(rentedAt) || s.At.After(r.clock.Now()) {
				t.Errorf("sample at %s, want between the rent (%s) and now", s.At, rentedAt)
			}
		}
		var free []models.GPU
		if err := db.R.Where("node_id = ? AND state = ?", o.NodeID, models.GPUFree).Find(&free).Error; err != nil || len(free) != 2 {
			t.Fatalf("free GPUs: %d, %v", len(free), err)
		}
		for _, g := range free {
			if n := r.samplesOf(g.ID); n != 0 {
				t.Errorf("free GPU %s has %d samples, want none", g.UUID, n)
			}
		}

		// Another organisation's user: 404, as for no such rental.
		other, err := r.accounts.CreateUser(r.ctx, "outsider@example.com", "outsider-pass-2026", "Outsider", false)
		if err != nil {
			t.Fatal(err)
		}
		otherToken, _, err := r.accounts.CreateAPIToken(r.ctx, other, "peek")
		if err != nil {
			t.Fatal(err)
		}
		if status, _ := r.usage(rt.ID, otherToken); status != http.StatusNotFound {
			t.Errorf("another organisation's usage request: %d, want 404", status)
		}

		// Stopped: the history stays; the released GPUs' later readings
		// are not sampled.
		r.stop(rt.ID)
		before := []int64{r.samplesOf(held[0].ID), r.samplesOf(held[1].ID)}
		after := r.clock.Advance(31 * time.Second)
		r.waitHeartbeat(o.NodeID, after)
		for _, g := range held {
			if c := r.gpu(g.ID).CheckedAt; c == nil || c.Before(after) {
				t.Fatalf("GPU %s last read at %v, want a reading after %s", g.UUID, c, after)
			}
		}
		for i, g := range held {
			if n := r.samplesOf(g.ID); n != before[i] {
				t.Errorf("released GPU %s: %d samples, had %d at the stop", g.UUID, n, before[i])
			}
		}
		status, u2 := r.usage(rt.ID, token)
		if status != http.StatusOK || len(u2.GPUs) != 2 || u2.GPUs[0].UUID != held[0].UUID || len(u2.GPUs[0].Samples) != int(before[0]) {
			t.Errorf("a stopped rental's usage: %d, %+v; want its 2 GPUs with their %d and %d samples", status, u2, before[0], before[1])
		}
	})
}
