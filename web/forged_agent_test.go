package web_test

import (
	"bytes"
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
	"suanli/benchmarks"
	"suanli/dbtest"
	"suanli/fleet"
	"suanli/gpu"
	"suanli/models"
	"suanli/providers"
)

// agentCall posts (or, without a body, gets) an agent API path with a
// bearer, through the real router, and returns the status and body.
func (a *app) agentCall(path, bearer string, body any) (int, string) {
	a.t.Helper()
	method, rd := "GET", io.Reader(nil)
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		method, rd = "POST", bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.srv.URL+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "application/json")
	res, err := a.c.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// forgedHost is what an agent of its own making reports: two "H100 SXM"
// read from go-nvml's mock server, claimed real (simulated false) unless
// simulated.
func forgedHost(t *testing.T, prefix string, simulated bool) gpu.Host {
	t.Helper()
	uuids := []string{prefix + "-0000-0000-0000-000000000000", prefix + "-0000-0000-0000-000000000001"}
	sim, err := gpu.SimulateCatalog("h100-sxm", 2, gpu.WithUUIDs(uuids))
	if err != nil {
		t.Fatal(err)
	}
	r, err := gpu.Open(sim, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h := r.Read()
	if !simulated {
		h.Simulated, h.Model = false, ""
	}
	return h
}

// takeTask long-polls the node's tasks until one of the kind comes.
func (a *app) takeTask(cred, kind string) agent.Task {
	a.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		st, body := a.agentCall("/agent/v1/tasks?wait=2", cred, nil)
		if st != http.StatusOK {
			a.t.Fatalf("poll: %d %s", st, body)
		}
		var ts agent.Tasks
		if err := json.Unmarshal([]byte(body), &ts); err != nil {
			a.t.Fatal(err)
		}
		for _, t := range ts.Tasks {
			if t.Kind == kind {
				return t
			}
		}
	}
	a.t.Fatalf("no %s task within 20 s", kind)
	return agent.Task{}
}

// absurdRun is the review's forged benchmark: 1e9 TFLOPS, −273 °C, 1e9 W.
func absurdRun(uuids []string) agent.BenchmarkReport {
	now := time.Now().UTC()
	run := agent.BenchmarkReport{GPUUUIDs: uuids, StartedAt: now.Add(-time.Minute), FinishedAt: now,
		Loads: []agent.Load{{Metric: agent.MetricBF16GEMM, Tool: "pytorch", Status: agent.LoadOK, Value: 1e9}}}
	for i := range uuids {
		run.Telemetry = append(run.Telemetry, agent.Sample{Index: i, T: gpu.Telemetry{TemperatureC: -273, PowerW: 1e9, SMClockMHz: 1980}})
	}
	return run
}

// honestRun is a plausible run: 794 TFLOPS BF16 per H100 at 1980 MHz.
func honestRun(uuids []string) agent.BenchmarkReport {
	run := absurdRun(uuids)
	run.Loads[0].Value = 794
	for i := range run.Telemetry {
		run.Telemetry[i].T = gpu.Telemetry{TemperatureC: 70, PowerW: 690, PowerLimitW: 700, SMClockMHz: 1980}
	}
	return run
}

// The review's forged agent: its own real credential (a node of a real
// provider), real GPUs claimed, absurd figures posted. The report is a
// 422, stored as refused with the node flagged for review, shown nowhere
// as verified or measured, and not ranked before an honest node under
// sort=measured; a verify without its checks is a 422 that fails the
// checks; and the same agent claiming to be simulated is refused at
// registration.
func TestForgedAgentIsNotBelieved(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		ctx := context.Background()
		owner := mustUser(t, db, "owner@forged.example", "Owner", false)
		p := &providers.Service{DB: db}
		acc, err := p.CreateVerified(ctx, owner, "Forged Compute")
		if err != nil {
			t.Fatal(err)
		}
		dc, err := p.CreateDatacenter(ctx, owner, acc.Provider.ID, providers.DatacenterInput{NameZH: "机房", NameEN: "DC", City: "chengdu"})
		if err != nil {
			t.Fatal(err)
		}
		f := &fleet.Fleet{DB: db, Hub: fleet.NewHub()}

		// register adds a node, checks that a simulated claim is refused
		// with its token, and registers the "real" agent.
		register := func(name, prefix string) (*models.Node, string, gpu.Host) {
			n, tok, err := p.AddNode(ctx, owner, acc.Provider.ID, providers.NodeInput{DatacenterID: dc.ID, Name: name})
			if err != nil {
				t.Fatal(err)
			}
			st, body := a.agentCall("/agent/v1/heartbeat", tok, agent.Heartbeat{AgentVersion: "forged", Launcher: "simulated", Host: forgedHost(t, prefix, true)})
			if st != http.StatusForbidden || !strings.Contains(body, "--simulated") {
				t.Fatalf("a simulated agent of a real provider registering: %d %s, want 403 naming --simulated", st, body)
			}
			host := forgedHost(t, prefix, false)
			st, body = a.agentCall("/agent/v1/heartbeat", tok, agent.Heartbeat{AgentVersion: "forged", Launcher: "simulated", Host: host})
			var reply agent.HeartbeatReply
			if st != http.StatusOK || json.Unmarshal([]byte(body), &reply) != nil || reply.Credential == "" {
				t.Fatalf("registration claiming real GPUs: %d %s", st, body)
			}
			return n, reply.Credential, host
		}
		forged, forgedCred, forgedHostRead := register("forged-1", "GPU-f0a9ed00")
		honest, honestCred, _ := register("honest-1", "GPU-b0ce5700")
		offer := func(n *models.Node, fen int64) int64 {
			o, err := p.CreateOffer(ctx, owner, acc.Provider.ID, providers.OfferInput{NodeID: n.ID, GPU: "h100-sxm", MaxGPUs: 2, PricePerGPUHourFen: fen})
			if err != nil {
				t.Fatal(err)
			}
			return o.ID
		}
		forgedOffer, honestOffer := offer(forged, 115), offer(honest, 2900) // ¥1.15/h against a real price

		// bench asks for a benchmark, takes its task as the agent and posts run.
		bench := func(n *models.Node, cred string, run func([]string) agent.BenchmarkReport) (int, string, int64) {
			if _, err := benchmarks.Request(ctx, f, n.ID, models.BenchOnDemand); err != nil {
				t.Fatal(err)
			}
			task := a.takeTask(cred, agent.TaskBenchmark)
			detail, _ := json.Marshal(run(task.GPUUUIDs))
			st, body := a.agentCall(fmt.Sprintf("/agent/v1/tasks/%d/result", task.ID), cred, agent.Result{OK: true, Detail: detail})
			return st, body, task.ID
		}
		if st, body, _ := bench(honest, honestCred, honestRun); st != http.StatusOK {
			t.Fatalf("a plausible report: %d %s", st, body)
		}
		st, body, taskID := bench(forged, forgedCred, absurdRun)
		if st != http.StatusUnprocessableEntity || !strings.Contains(body, "result refused: GPU 0 read -273 °C") {
			t.Fatalf("1e9 TFLOPS: %d %s, want 422 with the reason", st, body)
		}

		// Stored as refused, with no figure; the task failed; the node flagged.
		var rep models.BenchmarkReport
		if err := db.R.Where("task_id = ?", taskID).First(&rep).Error; err != nil {
			t.Fatalf("the refused report was not kept: %v", err)
		}
		if !rep.Refused() || rep.BF16TFLOPS != nil || rep.PctOfNominal != nil || rep.PeakTempC != nil || rep.Simulated {
			t.Errorf("refused report %+v", rep)
		}
		var task models.AgentTask
		if err := db.R.First(&task, taskID).Error; err != nil || task.OK == nil || *task.OK {
			t.Errorf("the refused run's task: ok %v (%v)", task.OK, err)
		}
		var flags int64
		if err := db.R.Model(&models.Incident{}).Where("node_id = ? AND kind = ? AND closed_at IS NULL", forged.ID, models.IncidentBenchmarkRefused).
			Count(&flags).Error; err != nil || flags != 1 {
			t.Errorf("open review flags on the node: %d (%v), want 1", flags, err)
		}

		// A verify result without its checks fails them, with a 422.
		var verifyID int64
		if err := db.Tx(ctx, func(tx *gorm.DB) error {
			verifyID, err = fleet.EnqueueTask(tx, forged.ID, nil, "forged/verify", agent.Task{Kind: agent.TaskVerify,
				GPUUUIDs: []string{forgedHostRead.GPUs[0].UUID, forgedHostRead.GPUs[1].UUID}}, db.Now().UTC())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		verdicts := map[string]gpu.Verdict{forgedHostRead.GPUs[0].UUID: {Healthy: true}, forgedHostRead.GPUs[1].UUID: forgedHostRead.GPUs[1].Health}
		st, body = a.agentCall(fmt.Sprintf("/agent/v1/tasks/%d/result", verifyID), forgedCred, agent.Result{OK: true, Verdicts: verdicts})
		if st != http.StatusUnprocessableEntity || !strings.Contains(body, "check is missing") {
			t.Fatalf("a verify without checks: %d %s, want 422", st, body)
		}
		var vt models.AgentTask
		if err := db.R.First(&vt, verifyID).Error; err != nil || vt.OK == nil || *vt.OK || !strings.Contains(vt.Result, "refused by the server") {
			t.Errorf("the incomplete verify: ok %v result %s (%v)", vt.OK, vt.Result, err)
		}

		// Nothing is shown as verified or measured; the honest node leads.
		if _, err := a.index.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		res, body := a.get("/api/v1/offers?gpu=h100-sxm&sort=measured&per_page=200")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("offers: %d %s", res.StatusCode, body)
		}
		var list struct {
			Offers []struct {
				ID        int64 `json:"id"`
				Benchmark *struct {
					MeasuredBF16TFLOPS *float64 `json:"measured_bf16_tflops"`
					Status             string   `json:"status"`
				} `json:"benchmark"`
			} `json:"offers"`
		}
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatal(err)
		}
		pos := map[int64]int{}
		for i, o := range list.Offers {
			pos[o.ID] = i
			if o.Benchmark != nil && o.Benchmark.Status == "verified" {
				t.Errorf("offer %d is verified without any independent witness", o.ID)
			}
			switch o.ID {
			case forgedOffer:
				if o.Benchmark == nil || o.Benchmark.Status != "refused" || o.Benchmark.MeasuredBF16TFLOPS != nil {
					t.Errorf("the forged offer's benchmark: %+v, want refused without figures", o.Benchmark)
				}
			case honestOffer:
				if o.Benchmark == nil || o.Benchmark.Status != "unverified" || o.Benchmark.MeasuredBF16TFLOPS == nil {
					t.Errorf("the honest offer's benchmark: %+v, want unverified with its figure", o.Benchmark)
				}
			}
		}
		fp, fok := pos[forgedOffer]
		hp, hok := pos[honestOffer]
		if !fok || !hok || hp != 0 || fp <= hp {
			t.Errorf("sort=measured: honest at %d, forged at %d (of %d); want the honest first and the forged after it", hp, fp, len(list.Offers))
		}
		// The admin console lists the node for review, with the reason.
		root := loggedIn(a, "root", mustUser(t, db, "root@forged.example", "Root", true))
		console := root.page(t, "/admin", "en", http.StatusOK)
		contains(t, console, "benchmark refused (review)", fmt.Sprintf("Benchmark report %d refused: GPU 0 read -273 °C", rep.ID))
		for _, lang := range []string{"en", "zh-CN"} {
			_, page := a.get(fmt.Sprintf("/offers/%d", forgedOffer), "Accept-Language", lang)
			if strings.Contains(page, "badge verified") || !strings.Contains(page, `id="offer-report-refused"`) || strings.Contains(page, "1000000000") {
				t.Errorf("the forged offer's %s page shows it verified or measured", lang)
			}
			_, page = a.get(fmt.Sprintf("/benchmarks/%d", rep.ID), "Accept-Language", lang)
			if strings.Contains(page, `id="bench-verified"`) || !strings.Contains(page, `id="bench-refused"`) || strings.Contains(page, `id="bench-measured"`) {
				t.Errorf("the refused report's %s page shows it verified or measured", lang)
			}
		}
	})
}
