package rentals_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"suanli/agent"
	"suanli/benchmarks"
	"suanli/dbtest"
	"suanli/models"
	"suanli/models/supply"
)

// The H100 SXM's nominal dense BF16 rate in the catalogue.
const h100BF16 = 989.0

// realRun is the fixture of a real run: 8×H100 SXM (driver 550.54.15,
// CUDA 12.4), PyTorch 2.5.1+cu124 measuring 794 TFLOPS BF16 per GPU,
// nvbandwidth and nccl-tests not installed.
func realRun(t *testing.T) agent.BenchmarkReport {
	t.Helper()
	b, err := os.ReadFile("testdata/bench-h100-real.json")
	if err != nil {
		t.Fatal(err)
	}
	var run agent.BenchmarkReport
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	return run
}

// benchNode makes the demo's first 8×H100 SXM node ready to benchmark as
// its agent would (healthy, every GPU free and healthy) and returns its
// id, with its GPUs' UUIDs set to the fixture's. The node stands for a
// real provider's: its provider and it are not simulated (simulation is
// the platform's flag, issue 17).
func (r *rig) benchNode(run agent.BenchmarkReport) int64 {
	r.t.Helper()
	o := r.offer("demo-jinghu-ai", "bj-yizhuang", "h100-sxm")
	if err := r.db.W.Model(&models.Node{}).Where("id = ?", o.NodeID).Updates(map[string]any{"health": models.NodeHealthy, "simulated": false}).Error; err != nil {
		r.t.Fatal(err)
	}
	if err := r.db.W.Model(&models.Provider{}).Where("id = ?", o.ProviderID).Update("simulated", false).Error; err != nil {
		r.t.Fatal(err)
	}
	for i, u := range run.GPUUUIDs {
		if err := r.db.W.Model(&models.GPU{}).Where("node_id = ? AND idx = ?", o.NodeID, i).
			Updates(map[string]any{"uuid": u, "state": models.GPUFree, "health": models.GPUHealthy}).Error; err != nil {
			r.t.Fatal(err)
		}
	}
	return o.NodeID
}

// page GETs a path of the rig's server in a language.
func (r *rig) page(path, lang string) (int, string) {
	r.t.Helper()
	req, err := http.NewRequest("GET", r.url+path, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Accept-Language", lang)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func (r *rig) mustPage(path, lang string) string {
	r.t.Helper()
	st, body := r.page(path, lang)
	if st != http.StatusOK {
		r.t.Fatalf("GET %s (%s): %d\n%.400s", path, lang, st, body)
	}
	return body
}

// report returns the report stored for a task.
func (r *rig) report(taskID int64) models.BenchmarkReport {
	r.t.Helper()
	var rs []models.BenchmarkReport
	if err := r.db.R.Where("task_id = ?", taskID).Find(&rs).Error; err != nil {
		r.t.Fatal(err)
	}
	if len(rs) != 1 {
		r.t.Fatalf("task %d has %d reports, want 1", taskID, len(rs))
	}
	return rs[0]
}

func (r *rig) postResult(nodeID, taskID int64, run agent.BenchmarkReport) {
	r.t.Helper()
	detail, _ := json.Marshal(run)
	if err := r.rentals.TaskResult(r.ctx, nodeID, taskID, agent.Result{OK: true, Detail: detail}); err != nil {
		r.t.Fatal(err)
	}
}

func wantContains(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s does not contain %q", what, w)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// A real run (NVML + PyTorch output) is stored with the catalogue's
// nominal figures beside it, once however often its result is posted;
// the page and the API show the right percentages in both languages; and
// the report does not change when the catalogue does.
func TestBenchmarkReportOfARealRun(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{})
		run := realRun(t)
		nodeID := r.benchNode(run)
		before, err := db.OffersVersion(r.ctx)
		if err != nil {
			t.Fatal(err)
		}

		taskID, err := benchmarks.Request(r.ctx, r.rentals.Fleet(), nodeID, models.BenchVerified)
		if err != nil {
			t.Fatal(err)
		}
		var task models.AgentTask
		if err := db.R.First(&task, taskID).Error; err != nil {
			t.Fatal(err)
		}
		var sent agent.Task
		if err := json.Unmarshal([]byte(task.Payload), &sent); err != nil {
			t.Fatal(err)
		}
		if sent.Kind != agent.TaskBenchmark || len(sent.GPUUUIDs) != 8 || sent.Nominal == nil || sent.Nominal.BF16TFLOPS != h100BF16 {
			t.Fatalf("the task sent: %+v (nominal %+v), want a benchmark of 8 GPUs with the H100 SXM's nominal figures", sent, sent.Nominal)
		}
		// Asked again while it is out, the same task answers.
		again, err := benchmarks.Request(r.ctx, r.rentals.Fleet(), nodeID, models.BenchOnDemand)
		if err != nil || again != taskID {
			t.Fatalf("a second request while the first is out: task %d (%v), want %d", again, err, taskID)
		}

		r.postResult(nodeID, taskID, run)
		r.postResult(nodeID, taskID, run) // a repeated result stores nothing more
		rep := r.report(taskID)
		if rep.PctOfNominal == nil || !near(*rep.PctOfNominal, 794/h100BF16*100) {
			t.Errorf("pct_of_nominal %v, want 794/989×100 = %v", rep.PctOfNominal, 794/h100BF16*100)
		}
		if rep.BF16TFLOPS == nil || *rep.BF16TFLOPS != 794 || rep.FP16TFLOPS == nil || *rep.FP16TFLOPS != 790 ||
			rep.MemBWGBps == nil || *rep.MemBWGBps != 2950 || rep.PeakTempC == nil || *rep.PeakTempC != 71 {
			t.Errorf("headline figures: bf16 %v fp16 %v mem %v peak %v, want 794, 790, 2950, 71 °C",
				rep.BF16TFLOPS, rep.FP16TFLOPS, rep.MemBWGBps, rep.PeakTempC)
		}
		if rep.Simulated || rep.Trigger != models.BenchVerified || rep.GPUs != 8 || rep.GPUModel != "h100-sxm" {
			t.Errorf("report: simulated %v trigger %s gpus %d model %s", rep.Simulated, rep.Trigger, rep.GPUs, rep.GPUModel)
		}
		var node models.Node
		if err := db.R.First(&node, nodeID).Error; err != nil || node.LatestReportID == nil || *node.LatestReportID != rep.ID {
			t.Errorf("the node's latest report: %v (%v), want %d", node.LatestReportID, err, rep.ID)
		}
		if after, _ := db.OffersVersion(r.ctx); after <= before {
			t.Errorf("offers version %d → %d: the offer index would not reload", before, after)
		}
		latest, err := supply.LatestReports(r.ctx, db, []int64{nodeID, nodeID + 1000})
		if err != nil || len(latest) != 1 || latest[nodeID].ID != rep.ID || latest[nodeID].PctOfNominal == nil {
			t.Errorf("LatestReports: %+v %v", latest, err)
		}

		path := fmt.Sprintf("/benchmarks/%d", rep.ID)
		en := r.mustPage(path, "en")
		wantContains(t, "the English report page", en,
			"BF16 GEMM 794 TFLOPS = 80% of 989", "FP16 GEMM 790 TFLOPS = 80% of 989", "Memory bandwidth 2,950 GB/s = 88% of 3,350",
			`id="bench-unverified"`, "agent-reported", "550.54.15", "12.4", "pytorch 2.5.1+cu124", "Gen 5 x16", "Peak temperature 71 °C (GPU 3)",
			"SW power cap", "<svg", "<polyline")
		zh := r.mustPage(path, "zh-CN")
		wantContains(t, "the Chinese report page", zh,
			"BF16 GEMM 实测 794 TFLOPS = 标称 989 的 80%", "显存带宽 实测 2,950 GB/s = 标称 3,350 的 88%", "代理自报", "最高温度 71 °C（GPU 3）")
		for name, body := range map[string]string{"en": en, "zh-CN": zh} {
			if strings.Contains(body, `id="bench-simulated"`) {
				t.Errorf("the %s page of a real run has the simulated banner", name)
			}
			if strings.Contains(body, "<script>") || strings.Contains(body, " style=") {
				t.Errorf("the %s page has inline script or style", name)
			}
		}
		// Absent tools are said to be absent, never given a figure.
		absent := regexp.MustCompile(`(?s)<tr data-metric="([a-z0-9_]+)" data-status="absent">(.*?)</tr>`).FindAllStringSubmatch(en, -1)
		if len(absent) != 4 {
			t.Errorf("%d absent loads on the page, want 4 (nvbandwidth ×3, nccl-tests)", len(absent))
		}
		for _, m := range absent {
			if !strings.Contains(m[2], "not installed on this host") || regexp.MustCompile(`\d+(\.\d+)? (GB/s|TFLOPS)`).MatchString(m[2]) {
				t.Errorf("absent load %s: %q, want \"not installed on this host\" and no figure", m[1], m[2])
			}
		}

		var api struct {
			Simulated    bool          `json:"simulated"`
			PctOfNominal float64       `json:"pct_of_nominal"`
			BF16         float64       `json:"bf16_tflops"`
			Nominal      agent.Nominal `json:"nominal"`
			Run          struct {
				Loads []agent.Load `json:"loads"`
			} `json:"run"`
		}
		if err := json.Unmarshal([]byte(r.mustPage(fmt.Sprintf("/api/v1/benchmarks/%d", rep.ID), "en")), &api); err != nil {
			t.Fatal(err)
		}
		if api.Simulated || api.BF16 != 794 || !near(api.PctOfNominal, 794/h100BF16*100) || api.Nominal.BF16TFLOPS != h100BF16 || len(api.Run.Loads) != 10 {
			t.Errorf("API: %+v", api)
		}

		// The catalogue changes (say, to the sparse figure): the report keeps
		// the figures it was stored with; a new run is sent the new ones.
		if err := db.W.Exec(`UPDATE gpu_models SET bf16_tflops = 1979 WHERE slug = 'h100-sxm'`).Error; err != nil {
			t.Fatal(err)
		}
		en = r.mustPage(path, "en")
		wantContains(t, "the report page after a catalogue change", en, "BF16 GEMM 794 TFLOPS = 80% of 989")
		if strings.Contains(en, "1,979") || strings.Contains(en, "1979") {
			t.Error("the report page shows the catalogue's new figure")
		}
		rep = r.report(taskID)
		if nom, err := rep.NominalFigures(); err != nil || nom.BF16TFLOPS != h100BF16 || !near(*rep.PctOfNominal, 794/h100BF16*100) {
			t.Errorf("stored nominal after a catalogue change: %+v %v, pct %v", nom, err, *rep.PctOfNominal)
		}
		next, err := benchmarks.Request(r.ctx, r.rentals.Fleet(), nodeID, models.BenchOnDemand)
		if err != nil {
			t.Fatal(err)
		}
		var nextTask models.AgentTask
		if err := db.R.First(&nextTask, next).Error; err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(nextTask.Payload, `"bf16_tflops":1979`) {
			t.Errorf("a new run's task %s, want the catalogue's figure as it is now", nextTask.Payload)
		}

		// A run without PyTorch: no GEMM figure at all, shown as absent.
		noTorch := run
		noTorch.Loads = nil
		for _, l := range run.Loads {
			if l.Tool == "pytorch" {
				l = agent.Load{Metric: l.Metric, Tool: "pytorch", Status: agent.LoadAbsent, Detail: "PyTorch is not installed for /usr/bin/python3: ModuleNotFoundError: No module named 'torch'"}
			}
			noTorch.Loads = append(noTorch.Loads, l)
		}
		r.postResult(nodeID, next, noTorch)
		bare := r.report(next)
		if bare.BF16TFLOPS != nil || bare.PctOfNominal != nil || bare.MemBWGBps != nil || bare.Trigger != models.BenchOnDemand {
			t.Errorf("a run without PyTorch: bf16 %v pct %v mem %v trigger %s, want no figures", bare.BF16TFLOPS, bare.PctOfNominal, bare.MemBWGBps, bare.Trigger)
		}
		en = r.mustPage(fmt.Sprintf("/benchmarks/%d", bare.ID), "en")
		wantContains(t, "the page of a run without PyTorch", en, "This run has no figure to set against a nominal one.",
			"not installed on this host", "No module named")
		if strings.Contains(en, "TFLOPS =") || strings.Contains(en, "0 TFLOPS") {
			t.Error("the page of a run without PyTorch shows a GEMM figure")
		}
		if body := r.mustPage(fmt.Sprintf("/api/v1/benchmarks/%d", bare.ID), "en"); !strings.Contains(body, `"bf16_tflops":null`) {
			t.Errorf("API of a run without PyTorch: want bf16_tflops null, got %.300s", body)
		}

		// The node's history lists both, newest first, with the trend.
		hist := r.mustPage(fmt.Sprintf("/nodes/%d/benchmarks", nodeID), "en")
		wantContains(t, "the node's history", hist, fmt.Sprintf(">#%d<", rep.ID), fmt.Sprintf(">#%d<", bare.ID), "80%", `id="bench-trend"`, "<circle")
		if i, j := strings.Index(hist, fmt.Sprintf(">#%d<", bare.ID)), strings.Index(hist, fmt.Sprintf(">#%d<", rep.ID)); i > j {
			t.Error("the history does not list the newest report first")
		}
	})
}

// A failed benchmark stores nothing.
func TestFailedBenchmarkStoresNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t, dbtest.SQLite(t), rigOptions{})
	// The queue's start-up schedule pass is over before the test moves the clock.
	r.eventually("the start-up benchmark schedule", func() bool {
		var n int64
		r.db.R.Raw(`SELECT COUNT(*) FROM river_job WHERE kind = 'schedule_benchmarks' AND state = 'completed'`).Scan(&n)
		return n > 0
	})
	run := realRun(t)
	nodeID := r.benchNode(run)
	taskID, err := benchmarks.Request(r.ctx, r.rentals.Fleet(), nodeID, models.BenchWeekly)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.rentals.TaskResult(r.ctx, nodeID, taskID, agent.Result{Error: "benchmark: NVML unavailable"}); err != nil {
		t.Fatal(err)
	}
	var n int64
	r.db.R.Model(&models.BenchmarkReport{}).Count(&n)
	var node models.Node
	r.db.R.First(&node, nodeID)
	if n != 0 || node.LatestReportID != nil {
		t.Errorf("after a failed run: %d reports, latest %v; want none", n, node.LatestReportID)
	}
	// The same week's weekly run is not asked for again.
	again, err := benchmarks.Request(r.ctx, r.rentals.Fleet(), nodeID, models.BenchWeekly)
	if err != nil || again != taskID {
		t.Errorf("the week's weekly run asked again: task %d (%v), want %d", again, err, taskID)
	}
	// Without an idle healthy GPU there is nothing to benchmark.
	r.db.W.Model(&models.GPU{}).Where("node_id = ?", nodeID).Update("state", models.GPUBusy)
	if _, err := benchmarks.Request(r.ctx, r.rentals.Fleet(), nodeID, models.BenchOnDemand); err == nil {
		t.Error("a benchmark was queued on a node whose GPUs are all busy")
	}
	r.db.W.Model(&models.GPU{}).Where("node_id = ?", nodeID).Update("state", models.GPUFree)
	// The schedule leaves the node alone for a day, then tries again.
	if n, err := benchmarks.Schedule(r.ctx, r.rentals.Fleet()); err != nil || n != 0 {
		t.Errorf("the schedule asked %d nodes right after a failed run (%v), want none", n, err)
	}
	r.clock.Advance(25 * time.Hour)
	if n, err := benchmarks.Schedule(r.ctx, r.rentals.Fleet()); err != nil || n != 1 {
		t.Errorf("the schedule asked %d nodes a day after a failed run (%v), want 1", n, err)
	}
}

// A seeded demo node with a simulated agent: the schedule asks for its
// first benchmark once its GPUs pass their checks, on its idle GPUs only;
// the report says "simulated" on the page, in both languages, and in the
// API.
func TestSimulatedNodeBenchmark(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{})
		o := r.offer("demo-jinghu-ai", "bj-yizhuang", "h100-sxm") // 8 GPUs, 4 held by the provider
		r.startAgent(o.NodeID)
		r.waitReady(o.NodeID)
		if _, err := benchmarks.Schedule(r.ctx, r.rentals.Fleet()); err != nil {
			t.Fatal(err)
		}
		var rep models.BenchmarkReport
		r.eventually("the simulated node's first report", func() bool {
			return db.R.Where("node_id = ?", o.NodeID).First(&rep).Error == nil
		})
		if !rep.Simulated || rep.Trigger != models.BenchVerified || rep.GPUs != 4 {
			t.Errorf("report: simulated %v trigger %s gpus %d; want simulated, verified, the 4 idle GPUs", rep.Simulated, rep.Trigger, rep.GPUs)
		}
		if rep.PctOfNominal == nil || math.Abs(*rep.PctOfNominal-agent.DefaultSimFactor*100) > 1e-6 {
			t.Errorf("pct_of_nominal %v, want the simulation factor × 100", rep.PctOfNominal)
		}
		// Its report is there: the schedule does not ask again.
		if n, err := benchmarks.Schedule(r.ctx, r.rentals.Fleet()); err != nil || n != 0 {
			t.Errorf("the schedule asked %d nodes again (%v)", n, err)
		}

		path := fmt.Sprintf("/benchmarks/%d", rep.ID)
		en := r.mustPage(path, "en")
		wantContains(t, "the English page", en, `id="bench-simulated"`, "Simulated report.", "× 0.7", "BF16 GEMM 692 TFLOPS = 70% of 989")
		zh := r.mustPage(path, "zh-CN")
		wantContains(t, "the Chinese page", zh, `id="bench-simulated"`, "模拟报告。", "标称值 × 0.7")
		if strings.Contains(en, `id="bench-verified"`) || strings.Contains(zh, `id="bench-verified"`) {
			t.Error("a simulated report is shown as verified")
		}
		api := r.mustPage(fmt.Sprintf("/api/v1/benchmarks/%d", rep.ID), "en")
		wantContains(t, "the API", api, `"simulated":true`, `"sim_factor":0.7`)
		hist := r.mustPage(fmt.Sprintf("/nodes/%d/benchmarks", o.NodeID), "zh-CN")
		wantContains(t, "the node's history", hist, "模拟", fmt.Sprintf(">#%d<", rep.ID))
	})
}
