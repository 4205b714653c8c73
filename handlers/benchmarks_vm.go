package handlers

import (
	"suanli/agent"
	"suanli/benchmarks"
	"suanli/models"
	"suanli/models/supply"
	"suanli/views/pages"
)

// benchmarkRead is a stored report as the report page and the API read
// it: the record, its nominal snapshot and the agent's run, decoded, and
// the node it is about.
type benchmarkRead struct {
	Report  *models.BenchmarkReport
	Nominal agent.Nominal
	Run     agent.BenchmarkReport
	Subject *supply.BenchmarkSubject
	// Witnesses is what witnesses other than the node's agent measured
	// on the node over the witness window: the report's status is
	// judged with it.
	Witnesses benchmarks.Independent
}

// benchmarkVM maps a report to its page, names in lang: each load's
// measured figure and the run's peak temperature.
func benchmarkVM(b *benchmarkRead, lang string) pages.BenchmarkVM {
	vm := pages.BenchmarkVM{Report: benchReportVM(b.Report, b.Witnesses), Nominal: b.Nominal, Run: b.Run, Subject: benchSubjectVM(b.Subject, lang)}
	vm.Measured = make([]pages.BenchMeasured, len(b.Run.Loads))
	for i, l := range b.Run.Loads {
		vm.Measured[i].Value, vm.Measured[i].OK = benchmarks.LoadMeasured(l)
	}
	hl := benchmarks.HeadlineOf(b.Run, b.Nominal)
	vm.PeakTempC, vm.PeakTempGPU = hl.PeakTempC, hl.PeakTempGPU
	return vm
}

// nodeBenchmarksVM maps a node's report history, newest first.
func nodeBenchmarksVM(s *supply.BenchmarkSubject, rs []models.BenchmarkReport, ind benchmarks.Independent, lang string) pages.NodeBenchmarksVM {
	vm := pages.NodeBenchmarksVM{Subject: benchSubjectVM(s, lang), Reports: make([]pages.BenchReport, len(rs))}
	for i := range rs {
		vm.Reports[i] = benchReportVM(&rs[i], ind)
	}
	return vm
}

// benchReportVM maps a report's headline, its status judged with the
// node's witnesses ind; its GPU model is named from the nominal snapshot
// (the slug when the snapshot has no name).
func benchReportVM(r *models.BenchmarkReport, ind benchmarks.Independent) pages.BenchReport {
	out := pages.BenchReport{
		ID: r.ID, NodeID: r.NodeID, GPUs: r.GPUs, Trigger: r.Trigger, Simulated: r.Simulated,
		BF16TFLOPS: r.BF16TFLOPS, MemBWGBps: r.MemBWGBps, PctOfNominal: r.PctOfNominal, PeakTempC: r.PeakTempC,
		MeasuredAt: r.MeasuredAt, GPUName: r.GPUModel,
		Status: string(benchmarks.ReportStatus(r, ind)), RefusedReason: r.RefusedReason,
	}
	if n, err := r.NominalFigures(); err == nil && n.Name != "" {
		out.GPUName = n.Name
	}
	return out
}

// benchSubjectVM maps the node a report is about, named in lang.
func benchSubjectVM(s *supply.BenchmarkSubject, lang string) pages.BenchSubject {
	return pages.BenchSubject{
		NodeID: s.Node.ID, NodeName: s.Node.Name, NodeGPUModel: s.Node.GPUModel, NodeSimulated: s.Node.Simulated,
		DCSlug: s.Datacenter.Slug, DCName: s.Datacenter.Name(lang), DCCity: s.Datacenter.City, ProviderName: s.Provider.Name(lang),
	}
}
