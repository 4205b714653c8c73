// Package benchmarks asks node agents for benchmark runs (after a node is
// first verified, weekly, and on demand) and keeps their reports next to
// the catalogue's nominal figures.
package benchmarks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/apperr"
	"suanli/catalog"
	"suanli/fleet"
	"suanli/locales"
	"suanli/models"
	"suanli/models/supply"
)

// Benchmarks run on a node's idle, healthy GPUs: after its GPUs first
// passed their checks (no report yet), then weekly, and on demand. The
// agent measures; the server keeps the report beside a snapshot of the
// catalogue's nominal figures.

// WeeklyAfter is how old a node's latest report may get before
// the weekly benchmark runs again.
const WeeklyAfter = 7 * 24 * time.Hour

// openBenchmarkFor is how long a benchmark task handed out without a
// result keeps a node from getting another: a run takes minutes, and an
// agent that came back later still answers the old one.
const openBenchmarkFor = time.Hour

// ErrNoIdleGPUs is a benchmark requested for a node with no GPU that is
// both free and healthy (or whose agent is not heard from).
var ErrNoIdleGPUs = &apperr.Error{Code: apperr.ECONFLICT, Message: "the node has no idle healthy GPU to benchmark"}

// Request queues a benchmark task (agent.TaskBenchmark) for the
// node's idle healthy GPUs, with the catalogue's nominal figures for its
// GPU model, and returns the task's id. trigger is models.BenchVerified,
// BenchWeekly or BenchOnDemand; a verified run is asked for at most once
// a day and a weekly one once per ISO week, and while a benchmark of the
// node is still out its id is returned instead of a second one. Errors:
// ENOTFOUND (no node), EINVALID (trigger), ECONFLICT (ErrNoIdleGPUs).
func Request(ctx context.Context, s *fleet.Fleet, nodeID int64, trigger string) (int64, error) {
	now := s.DB.Now().UTC()
	var id int64
	err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		var err error
		id, err = request(tx, nodeID, trigger, now)
		return err
	})
	if err != nil {
		return 0, err
	}
	s.Hub.Signal(fleet.NodeKey(nodeID))
	return id, nil
}

func request(tx *gorm.DB, nodeID int64, trigger string, now time.Time) (int64, error) {
	var period string
	switch trigger {
	case models.BenchVerified:
		period = now.Format("2006-01-02")
	case models.BenchWeekly:
		y, w := now.ISOWeek()
		period = fmt.Sprintf("%d-W%02d", y, w)
	case models.BenchOnDemand:
		period = now.Format("20060102T150405.000000")
	default:
		return 0, apperr.Invalid("trigger", "unknown benchmark trigger "+trigger)
	}
	n, err := supply.NodeByIDTx(tx, nodeID)
	if err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return 0, apperr.NotFound(fmt.Sprintf("node %d", nodeID))
		}
		return 0, err
	}
	if n.Health != models.NodeHealthy {
		return 0, ErrNoIdleGPUs
	}
	open, err := supply.OpenBenchmarkTask(tx, nodeID, now.Add(-openBenchmarkFor))
	if err == nil {
		return open.ID, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return 0, err
	}
	uuids, err := supply.IdleHealthyGPUUUIDs(tx, nodeID)
	if err != nil {
		return 0, err
	}
	if len(uuids) == 0 {
		return 0, ErrNoIdleGPUs
	}
	nom, err := nominalOf(tx, n.GPUModel)
	if err != nil {
		return 0, err
	}
	key := fmt.Sprintf("bench/n%d/%s/%s", nodeID, trigger, period)
	return fleet.EnqueueTask(tx, nodeID, nil, key, agent.Task{Kind: agent.TaskBenchmark, GPUUUIDs: uuids, Nominal: &nom}, now)
}

// nominalOf reads the catalogue's nominal figures for a GPU model as the
// database has them (the gpu_models table, kept equal to the catalogue
// compiled into the binary), or from the catalogue itself.
func nominalOf(tx *gorm.DB, slug string) (agent.Nominal, error) {
	// The realistic share is the compiled catalogue's (the table keeps
	// the datasheet figures only); simulated agents stay below it.
	c, ok := catalog.GPUModelBySlug(slug)
	m, err := supply.GPUModelRecordBySlug(tx, slug)
	if err == nil {
		return agent.Nominal{Model: m.Slug, Name: m.Name, BF16TFLOPS: m.BF16TFLOPS, FP16TFLOPS: m.FP16TFLOPS,
			MemBWGBps: float64(m.MemBWGBps), NVLinkGBps: m.NVLinkGBps, TDPW: m.TDPW, RealisticFraction: c.ExpectedPct / 100}, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return agent.Nominal{}, err
	}
	if !ok {
		return agent.Nominal{Model: slug, Name: slug}, nil
	}
	return agent.Nominal{Model: c.Slug, Name: c.Name, BF16TFLOPS: c.BF16TFLOPS, FP16TFLOPS: c.FP16TFLOPS,
		MemBWGBps: float64(c.MemBWGBps), NVLinkGBps: c.NVLinkGBps, TDPW: c.TDPW, RealisticFraction: c.ExpectedPct / 100}, nil
}

// retryBenchmarkAfter is how long the schedule leaves a node alone after
// it was sent a benchmark that brought no report (it failed, or is still
// running): one automatic attempt a day at most.
const retryBenchmarkAfter = 24 * time.Hour

// Schedule asks for the benchmarks that are due: a verified run
// for every healthy node with idle healthy GPUs and no report yet, and a
// weekly one where the latest report is older than WeeklyAfter;
// not for a node sent a benchmark in the last day. It returns how many
// nodes were asked.
func Schedule(ctx context.Context, s *fleet.Fleet) (int, error) {
	now := s.DB.Now().UTC()
	nodes, err := supply.NodesDueForBenchmark(ctx, s.DB, now.Add(-WeeklyAfter), now.Add(-retryBenchmarkAfter))
	if err != nil {
		return 0, err
	}
	asked := 0
	for _, n := range nodes {
		if _, err := Request(ctx, s, n.ID, scheduledTrigger(n)); err != nil {
			if apperr.Code(err) == apperr.ECONFLICT {
				continue // its GPUs were taken (or it went quiet) meanwhile
			}
			return asked, err
		}
		asked++
	}
	return asked, nil
}

// scheduledTrigger is why the schedule asks a node for a run: its first
// (after its GPUs were verified) or its weekly one.
func scheduledTrigger(n supply.BenchmarkDue) string {
	if n.LatestReportID == nil {
		return models.BenchVerified
	}
	return models.BenchWeekly
}

// Store keeps the report of a benchmark task that succeeded, in
// the transaction that records its result: the run as the agent reported
// it, a snapshot of the nominal figures, and the headline figures. The
// node's latest report moves to it. A failed run stores nothing; a result
// whose report cannot be read is recorded as failed.
//
// A run outside the bounds (CheckBounds), or one that says it is
// simulated from a node the platform does not run simulated, is stored as
// refused, with the reason and no headline figure, the task is recorded
// as failed, and the node is flagged for review (an open
// IncidentBenchmarkRefused, listed on the admin console); refused is then
// the reason, for the caller to answer the agent with (Refusal) once the
// transaction committed. Whether a report is simulated is the node's
// server-side flag, never the agent's word.
func Store(tx *gorm.DB, t *models.AgentTask, res agent.Result, now time.Time) (refused string, err error) {
	if !res.OK {
		return "", nil
	}
	var run agent.BenchmarkReport
	if err := json.Unmarshal(res.Detail, &run); err != nil || len(res.Detail) == 0 {
		slog.Warn("benchmark result without a readable report", "task", t.ID, "node", t.NodeID, "err", err)
		return "", supply.FailAgentTaskResult(tx, t.ID)
	}
	n, err := supply.NodeByIDTx(tx, t.NodeID)
	if err != nil {
		return "", err
	}
	nom, err := nominalOf(tx, n.GPUModel)
	if err != nil {
		return "", err
	}
	var task agent.Task
	_ = json.Unmarshal([]byte(t.Payload), &task)
	m, _ := catalog.GPUModelBySlug(n.GPUModel)
	refused = CheckBounds(run, nom, m, task.GPUUUIDs)
	if refused == "" && ReportSimulated(run) && !n.Simulated {
		refused = "the run says it is simulated, but the platform does not run this node simulated"
	}
	gpus := len(run.GPUUUIDs)
	if gpus == 0 || refused != "" {
		gpus = len(task.GPUUUIDs)
	}
	measured := run.FinishedAt.UTC().Truncate(time.Microsecond)
	if measured.IsZero() || measured.After(now) || refused != "" {
		measured = now
	}
	nomJSON, _ := json.Marshal(nom)
	runJSON, _ := json.Marshal(run)
	r := &models.BenchmarkReport{
		NodeID: n.ID, GPUModel: n.GPUModel, GPUs: gpus, Trigger: triggerOfKey(t.IdemKey),
		Simulated: n.Simulated, TaskID: &t.ID, Nominal: string(nomJSON), Report: string(runJSON),
		RefusedReason: refused, MeasuredAt: measured, CreatedAt: now,
	}
	if refused == "" {
		h := HeadlineOf(run, nom)
		r.BF16TFLOPS, r.FP16TFLOPS, r.MemBWGBps, r.PctOfNominal, r.PeakTempC = h.BF16TFLOPS, h.FP16TFLOPS, h.MemBWGBps, h.PctOfNominal, h.PeakTempC
	}
	if err := supply.InsertReport(tx, r); err != nil {
		return "", err
	}
	if refused == "" {
		return "", nil
	}
	slog.Warn("benchmark report refused; node flagged for review", "task", t.ID, "node", n.ID, "report", r.ID, "reason", refused)
	if err := supply.FailAgentTaskResult(tx, t.ID); err != nil {
		return "", err
	}
	reason := fmt.Sprintf("benchmark report %d refused: %s", r.ID, refused)
	if _, err := fleet.OpenIncident(tx, n.ID, 0, models.IncidentBenchmarkRefused, reason, now,
		locales.M("trust.refused_incident", r.ID, fleet.Verbatim(refused))); err != nil {
		return "", err
	}
	return refused, nil
}

// Refusal is the answer to an agent whose result was refused (422, with
// the reason): what it reported was kept as refused.
// A form's problem list is 422 on every surface, the agent's API too.
func Refusal(reason string) error {
	return apperr.Fields{apperr.Field("body", "trust.err.refused", reason)}
}

// triggerOfKey reads the trigger out of a benchmark task's idempotency key
// ("bench/n12/weekly/2026-W48").
func triggerOfKey(key string) string {
	parts := strings.Split(key, "/")
	if len(parts) >= 3 {
		switch parts[2] {
		case models.BenchVerified, models.BenchWeekly, models.BenchOnDemand:
			return parts[2]
		}
	}
	return models.BenchOnDemand
}

// ReportSimulated says whether a run is simulated: the agent says so, its
// host is a go-nvml mock, or any load is. Simulated figures are never
// shown as measured ones.
func ReportSimulated(run agent.BenchmarkReport) bool {
	if run.Simulated || run.Host.Simulated {
		return true
	}
	for _, l := range run.Loads {
		if l.Status == agent.LoadSimulated || l.Tool == "simulated" {
			return true
		}
	}
	return false
}

// LoadMeasured returns a load's figure when it has one: the load ran (or
// was simulated) and reported a positive value. An absent or failed load
// has no figure, never zero.
func LoadMeasured(l agent.Load) (float64, bool) {
	if l.Status != agent.LoadOK && l.Status != agent.LoadSimulated {
		return 0, false
	}
	if l.Value <= 0 || math.IsInf(l.Value, 0) || math.IsNaN(l.Value) {
		return 0, false
	}
	return l.Value, true
}

// PctOf is measured as a percentage of nominal; false without a nominal
// figure to compare with.
func PctOf(measured, nominal float64) (float64, bool) {
	if nominal <= 0 {
		return 0, false
	}
	return measured / nominal * 100, true
}

// Headline is a run's headline figures, per GPU; nil where the load was
// absent or failed, or nothing was sampled.
type Headline struct {
	BF16TFLOPS, FP16TFLOPS, MemBWGBps *float64
	// PctOfNominal is the measured dense BF16 GEMM rate as a percentage of
	// the nominal one (FP16 for models without BF16, such as the V100).
	PctOfNominal *float64
	// PeakTempC is the highest GPU temperature sampled during the run, on
	// GPU PeakTempGPU (an NVML index).
	PeakTempC   *int
	PeakTempGPU int
}

// HeadlineOf computes a run's headline figures against the nominal ones.
func HeadlineOf(run agent.BenchmarkReport, nom agent.Nominal) Headline {
	var h Headline
	for _, l := range run.Loads {
		v, ok := LoadMeasured(l)
		if !ok {
			continue
		}
		// Two tools may measure one metric (PyTorch and nvbandwidth both
		// copy device memory): the first figure in the report counts.
		switch {
		case l.Metric == agent.MetricBF16GEMM && h.BF16TFLOPS == nil:
			h.BF16TFLOPS = &v
		case l.Metric == agent.MetricFP16GEMM && h.FP16TFLOPS == nil:
			h.FP16TFLOPS = &v
		case l.Metric == agent.MetricD2D && h.MemBWGBps == nil:
			h.MemBWGBps = &v
		}
	}
	switch {
	case nom.BF16TFLOPS > 0 && h.BF16TFLOPS != nil:
		p, _ := PctOf(*h.BF16TFLOPS, nom.BF16TFLOPS)
		h.PctOfNominal = &p
	case nom.BF16TFLOPS == 0 && h.FP16TFLOPS != nil && nom.FP16TFLOPS > 0:
		p, _ := PctOf(*h.FP16TFLOPS, nom.FP16TFLOPS)
		h.PctOfNominal = &p
	}
	for _, smp := range run.Telemetry {
		if t := smp.T.TemperatureC; t > 0 && (h.PeakTempC == nil || t > *h.PeakTempC) {
			h.PeakTempC, h.PeakTempGPU = &t, smp.Index
		}
	}
	return h
}
