package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/agent"
	"suanli/benchmarks"
	"suanli/models"
	"suanli/models/supply"
	"suanli/routenames"
	"suanli/views/pages"
	"suanli/witness"
)

// nodeReportsShown is how many reports a node's history shows.
const nodeReportsShown = 100

// BenchmarkShow is GET /benchmarks/{id}: one report, public.
func (h *Handler) BenchmarkShow(c echo.Context) error {
	b, err := h.benchmarkFromPath(c)
	if err != nil {
		return err
	}
	return Render(c, http.StatusOK, pages.BenchmarkPage(ViewCtx(c), benchmarkVM(b, Lang(c))))
}

// benchmarkFromPath reads the report the path names, decoded, with the
// node it is about.
func (h *Handler) benchmarkFromPath(c echo.Context) (*benchmarkRead, error) {
	id, err := ParseID(c, "id", "benchmark report")
	if err != nil {
		return nil, err
	}
	ctx := c.Request().Context()
	r, err := supply.ReportByID(ctx, h.DB, id)
	if err != nil {
		return nil, err
	}
	b := &benchmarkRead{Report: r}
	if b.Nominal, err = r.NominalFigures(); err != nil {
		return nil, err
	}
	if b.Run, err = r.Run(); err != nil {
		return nil, err
	}
	if b.Subject, err = supply.BenchmarkSubjectOf(ctx, h.DB, r.NodeID); err != nil {
		return nil, err
	}
	if b.Witnesses, err = h.nodeWitnesses(ctx, r.NodeID); err != nil {
		return nil, err
	}
	return b, nil
}

// NodeBenchmarks is GET /nodes/{id}/benchmarks: a node's report history
// with its trend, public.
func (h *Handler) NodeBenchmarks(c echo.Context) error {
	id, err := ParseID(c, "id", "node")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	s, err := supply.BenchmarkSubjectOf(ctx, h.DB, id)
	if err != nil {
		return err
	}
	rs, err := supply.ReportsOfNode(ctx, h.DB, id, nodeReportsShown)
	if err != nil {
		return err
	}
	ind, err := h.nodeWitnesses(ctx, id)
	if err != nil {
		return err
	}
	return Render(c, http.StatusOK, pages.NodeBenchmarksPage(ViewCtx(c), nodeBenchmarksVM(s, rs, ind, Lang(c))))
}

// APIBenchmark is a benchmark report in the JSON API: the headline
// figures (per GPU, null where the load was absent), the nominal figures
// as they were when the report was stored, and the agent's whole run.
type APIBenchmark struct {
	ID           int64    `json:"id"`
	NodeID       int64    `json:"node_id"`
	GPUModel     string   `json:"gpu_model"`
	GPUs         int      `json:"gpus"`
	Trigger      string   `json:"trigger"`
	Simulated    bool     `json:"simulated"`
	SimFactor    *float64 `json:"sim_factor,omitempty"`
	BF16TFLOPS   *float64 `json:"bf16_tflops"`
	FP16TFLOPS   *float64 `json:"fp16_tflops"`
	MemBWGBps    *float64 `json:"mem_bw_gbps"`
	PctOfNominal *float64 `json:"pct_of_nominal"`
	PeakTempC    *int     `json:"peak_temp_c"`
	// Status is the report's benchmark status (see APIOfferBenchmark);
	// RefusedReason says why a refused one was ("" otherwise).
	Status        string `json:"status"`
	RefusedReason string `json:"refused_reason,omitempty"`
	// Nominal is the catalogue's figures snapshotted with the report.
	Nominal    agent.Nominal          `json:"nominal"`
	MeasuredAt time.Time              `json:"measured_at"`
	URL        string                 `json:"url"`
	Run        *agent.BenchmarkReport `json:"run,omitempty"`
}

// nodeWitnesses is what the node's witnesses (renter-measured and
// platform-audited runs) measured over the witness window, for judging
// its reports' status.
func (h *Handler) nodeWitnesses(ctx context.Context, nodeID int64) (benchmarks.Independent, error) {
	sm, err := (&witness.Service{DB: h.DB}).NodeSummary(ctx, nodeID)
	return benchmarks.IndependentOf(sm), err
}

func apiBenchmark(c echo.Context, r models.BenchmarkReport, nom agent.Nominal, run *agent.BenchmarkReport, ind benchmarks.Independent) APIBenchmark {
	a := APIBenchmark{ID: r.ID, NodeID: r.NodeID, GPUModel: r.GPUModel, GPUs: r.GPUs, Trigger: r.Trigger, Simulated: r.Simulated,
		BF16TFLOPS: r.BF16TFLOPS, FP16TFLOPS: r.FP16TFLOPS, MemBWGBps: r.MemBWGBps, PctOfNominal: r.PctOfNominal, PeakTempC: r.PeakTempC,
		Status: string(benchmarks.ReportStatus(&r, ind)), RefusedReason: r.RefusedReason,
		Nominal: nom, MeasuredAt: r.MeasuredAt.UTC(), URL: c.Echo().Reverse(routenames.BenchmarksShow, r.ID), Run: run}
	if run != nil && run.Simulated && run.SimFactor > 0 {
		a.SimFactor = &run.SimFactor
	}
	return a
}

// APIBenchmarkShow is GET /api/v1/benchmarks/{id}.
func (h *Handler) APIBenchmarkShow(c echo.Context) error {
	b, err := h.benchmarkFromPath(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiBenchmark(c, *b.Report, b.Nominal, &b.Run, b.Witnesses))
}

// APINodeBenchmarks is GET /api/v1/nodes/{id}/benchmarks: a node's
// reports, newest first, without their runs, a page at a time.
func (h *Handler) APINodeBenchmarks(c echo.Context) error {
	id, err := ParseID(c, "id", "node")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := supply.BenchmarkSubjectOf(ctx, h.DB, id); err != nil {
		return err
	}
	pg, err := PageParams(c)
	if err != nil {
		return err
	}
	rs, total, err := h.DB.ReportsOfNodePage(ctx, id, pg.Offset(), pg.PerPage)
	if err != nil {
		return err
	}
	if err := pg.Within(total); err != nil {
		return err
	}
	ind, err := h.nodeWitnesses(ctx, id)
	if err != nil {
		return err
	}
	out := struct {
		NodeID  int64          `json:"node_id"`
		Reports []APIBenchmark `json:"reports"`
		Total   int64          `json:"total"`
		Page    int            `json:"page"`
		PerPage int            `json:"per_page"`
	}{NodeID: id, Reports: make([]APIBenchmark, 0, len(rs)), Total: total, Page: pg.Page, PerPage: pg.PerPage}
	for _, r := range rs {
		nom, err := r.NominalFigures()
		if err != nil {
			return err
		}
		out.Reports = append(out.Reports, apiBenchmark(c, r, nom, nil, ind))
	}
	return c.JSON(http.StatusOK, out)
}

// APIRequestBenchmark is POST /api/v1/nodes/{id}/benchmarks (platform
// admins): run the benchmark on the node's idle GPUs now. 202 with the
// agent task's id; 409 when the node has no idle healthy GPU.
func (h *Handler) APIRequestBenchmark(c echo.Context) error {
	id, err := ParseID(c, "id", "node")
	if err != nil {
		return err
	}
	taskID, err := benchmarks.Request(c.Request().Context(), h.Rentals.Fleet(), id, models.BenchOnDemand)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]int64{"task_id": taskID})
}
