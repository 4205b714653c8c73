package offers

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"suanli/catalog"
	"suanli/models"
	"suanli/pricing"
)

// randomRow is an offer row with random figures within the providers'
// validated ranges, each optional field present or not; wild also puts
// figures beyond the compact fields' ranges, odd times and images.
func randomRow(rng *rand.Rand, wild bool) models.OfferRow {
	gpus := catalog.GPUModels()
	m := gpus[rng.IntN(len(gpus))]
	dc := &models.Datacenter{ID: rng.Int64N(50) + 1, City: catalog.Cities()[rng.IntN(len(catalog.Cities()))].Slug, Slug: "dc"}
	prov := &models.Provider{ID: rng.Int64N(20) + 1, Slug: "p"}
	opt := func(lo, hi int64) *int64 {
		if rng.IntN(2) == 0 {
			return nil
		}
		return new(lo + rng.Int64N(hi-lo+1))
	}
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	updated := []time.Time{{}, time.Unix(rng.Int64N(2e9), rng.Int64N(1e9)).UTC(), time.Unix(rng.Int64N(2e9), 0)}[rng.IntN(3)]
	r := models.OfferRow{
		Offer: models.Offer{
			ID: rng.Int64N(1e9) + 1, ProviderID: prov.ID, NodeID: rng.Int64N(1e6) + 1, DatacenterID: dc.ID, GPUModel: m.Slug,
			MaxGPUs: 1 + rng.IntN(64), VCPUPerGPU: 1 + rng.IntN(256), RAMGBPerGPU: 1 + rng.IntN(4096), DiskGB: rng.IntN(1_000_001),
			Interconnect:       pick(catalog.InterconnectPCIe, catalog.InterconnectNVLink, catalog.InterconnectNVLinkIB),
			PricePerGPUHourFen: 1 + rng.Int64N(1_000_000), WeeklyPricePerGPUFen: opt(1, 1e8), MonthlyPricePerGPUFen: opt(1, 1e9),
			OffpeakDiscountPct: rng.IntN(91), StudentDiscountPct: rng.IntN(91), AvailableGPUs: rng.IntN(65),
			Status: pick(models.OfferListed, "paused"), Demo: rng.IntN(2) == 0, Synthetic: rng.IntN(2) == 0, UpdatedAt: updated,
			MinDurationS: 60 + rng.IntN(30*24*3600), SLATiers: pick("standard,premium", "standard", "premium"),
			AwaitingNode: rng.IntN(4) == 0, ListingNote: pick("", "", "not shown: the provider is suspended"),
			CustomImages: rng.IntN(2) == 0, StoragePricePerGBMonthFen: rng.Int64N(1001), NoGPUPricePerHourFen: rng.Int64N(10001),
			InterruptibleFloorPerGPUHourFen: opt(1, 1_000_000),
		},
		Datacenter: dc, Provider: prov,
	}
	if rng.IntN(2) == 0 {
		r.Latency = map[string]float64{"beijing": rng.Float64() * 100}
	}
	if rng.IntN(2) == 0 {
		f := rng.Float64() * 1000
		r.Report = &models.ReportHeadline{ID: rng.Int64N(1e6), BF16TFLOPS: &f, FP16TFLOPS: &f, Simulated: rng.IntN(2) == 0}
	}
	if rng.IntN(2) == 0 {
		r.Uptime30dPct = new(rng.Float64() * 100)
	}
	if !wild {
		return r
	}
	switch rng.IntN(9) {
	case 0:
		r.MaxGPUs = math.MaxInt16 + 1 + rng.IntN(10)
	case 1:
		r.DiskGB = math.MaxInt32 + 1
	case 2:
		r.StudentDiscountPct = -200
	case 3:
		r.UpdatedAt = time.Unix(rng.Int64N(2e9), 0).In(time.FixedZone("CST", 8*3600))
	case 4:
		r.Images = []string{"pytorch"}
	case 5:
		r.ProviderID, r.Provider = r.ProviderID+1, nil
	case 6:
		r.DatacenterID++
	case 7:
		r.ListingNote = "unique note " + time.Now().String()
	case 8:
		r.CreatedAt = time.Unix(rng.Int64N(2e9), 0).UTC()
	}
	return r
}

// TestListedRoundTrips: a compact record gives back every field of the
// row it was built from, through its methods and as the stored row it
// builds (CreatedAt, which the index serves to no one, excepted), for
// rows with and without the optional fields, and for rows that do not
// fit the compact fields.
func TestListedRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 26))
	compact := 0
	for i := range 4000 {
		r := randomRow(rng, i%2 == 1)
		m := catalogNumbers().gpus[r.GPUModel]
		witness := []string{"", "verified", "disputed"}[rng.IntN(3)]
		o := newListed(&r, m, nil, witness)
		want := r
		if o.whole == nil {
			compact++
			want.CreatedAt = time.Time{}
		} else if i%2 == 0 {
			t.Fatalf("row %d kept whole: %+v", i, r.Offer)
		}
		if got := o.Row(); !reflect.DeepEqual(got, want) {
			t.Fatalf("row %d:\n got %+v\nwant %+v", i, got, want)
		}
		if o.ProviderID() != r.ProviderID || o.DatacenterID() != r.DatacenterID || o.GPUModel() != r.GPUModel ||
			o.MaxGPUs() != r.MaxGPUs || o.AvailableGPUs() != r.AvailableGPUs || o.VCPUPerGPU() != r.VCPUPerGPU ||
			o.RAMGBPerGPU() != r.RAMGBPerGPU || o.DiskGB() != r.DiskGB || o.MaxVolumeGB() != MaxVolumeGBOf(&r.Offer) ||
			o.Interconnect() != r.Interconnect || o.Status() != r.Status || o.WitnessStatus() != witness ||
			o.PricePerGPUHourFen() != r.PricePerGPUHourFen || o.PriceFen(true) != StudentPriceFen(&r.Offer) ||
			!reflect.DeepEqual(o.WeeklyPricePerGPUFen(), r.WeeklyPricePerGPUFen) ||
			!reflect.DeepEqual(o.MonthlyPricePerGPUFen(), r.MonthlyPricePerGPUFen) ||
			o.OffpeakDiscountPct() != r.OffpeakDiscountPct || o.StudentDiscountPct() != r.StudentDiscountPct ||
			o.Demo() != r.Demo || o.Synthetic() != r.Synthetic || o.CustomImages() != r.CustomImages ||
			o.UpdatedAt() != r.UpdatedAt || o.StoragePricePerGBMonthFen() != r.StoragePricePerGBMonthFen ||
			o.NoGPUPricePerHourFen() != r.NoGPUPricePerHourFen || !reflect.DeepEqual(o.Latency(), r.Latency) ||
			!reflect.DeepEqual(o.Uptime30dPct(), r.Uptime30dPct) || o.Report != r.Report ||
			o.Datacenter != r.Datacenter || o.Provider != r.Provider || o.sellsMonth() != (r.MonthlyPricePerGPUFen != nil) {
			t.Fatalf("row %d: a method differs from the row: %+v", i, r.Offer)
		}
		for _, term := range []pricing.Term{pricing.OnDemand, pricing.Week, pricing.Month} {
			for _, student := range []bool{false, true} {
				if got, want := o.UnitPriceFen(term, student), UnitPriceFen(&r.Offer, term, student); got != want {
					t.Fatalf("row %d: UnitPriceFen(%s, %v) = %d, want %d", i, term, student, got, want)
				}
			}
		}
		// What the caller gets is its own: changing it changes no record.
		if p := o.Offer().WeeklyPricePerGPUFen; p != nil {
			*p++
			if *o.WeeklyPricePerGPUFen() != *r.WeeklyPricePerGPUFen {
				t.Fatalf("row %d: the record shares its weekly price", i)
			}
		}
	}
	if compact < 2000 {
		t.Errorf("only %d of 4000 rows compact", compact)
	}
}

// TestListedIsCompact keeps the record in a small size class: the index
// holds one per listed offer.
func TestListedIsCompact(t *testing.T) {
	if n := unsafe.Sizeof(Listed{}); n > 176 {
		t.Errorf("Listed is %d bytes, want at most 176 (a size class)", n)
	}
}
