package offers

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"

	"suanli/catalog"
	"suanli/models"
)

// syntheticRows makes n offers in memory, spread over the catalogue's
// models and cities, with the demo's mix of student discounts; every
// other node has a benchmark report and an uptime.
func syntheticRows(n int) []models.OfferRow {
	rng := rand.New(rand.NewPCG(1, 2))
	gpus, cities := catalog.GPUModels(), catalog.Cities()
	var dcs []*models.Datacenter
	for i, c := range cities {
		for j := range 3 {
			dcs = append(dcs, &models.Datacenter{ID: int64(i*3 + j + 1), City: c.Slug, Slug: c.Slug + "-" + strconv.Itoa(j)})
		}
	}
	lat := map[string]float64{cities[0].Slug: 3, cities[len(cities)-1].Slug: 40}
	rows := make([]models.OfferRow, n)
	for i := range rows {
		r := &rows[i]
		r.ID, r.NodeID = int64(i+1), int64(i/2+1)
		r.GPUModel = gpus[i%len(gpus)].Slug
		r.PricePerGPUHourFen = 1000 + rng.Int64N(5000)
		r.StudentDiscountPct = []int{0, 0, 10, 20}[rng.IntN(4)]
		r.MaxGPUs, r.AvailableGPUs = 8, rng.IntN(9)
		r.Datacenter = dcs[rng.IntN(len(dcs))]
		r.DatacenterID = r.Datacenter.ID
		r.Latency = lat
		if i%4 < 2 {
			f, up := 100+float64(i%700), 99+float64(i%100)/100
			r.Report, r.Uptime30dPct = &models.ReportHeadline{ID: int64(i), BF16TFLOPS: &f, FP16TFLOPS: &f}, &up
		}
	}
	return rows
}

// BenchmarkIndexBuild100k is the in-memory part of a reload (every
// pre-sorted list) over 100,000 offers, without the database read.
func BenchmarkIndexBuild100k(b *testing.B) {
	rows := syntheticRows(100_000)
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	var keep *snapshot
	for b.Loop() {
		b.StopTimer()
		keep = nil
		runtime.GC()
		runtime.ReadMemStats(&ms0)
		b.StartTimer()
		keep = build(rows, 1, nil, nil)
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&ms1)
		b.StartTimer()
	}
	// The live heap the index holds per offer (records, partitions, sort
	// slots, id map), beside the rows it was built from.
	b.ReportMetric(float64(int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc))/float64(keep.n), "heap-B/offer")
	runtime.KeepAlive(keep)
}
