package launch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"suanli/apperr"
	"suanli/benchmarks"
	"suanli/catalog"
	"suanli/offers"
	"suanli/pricing"
)

// Entry is one offer in the launch catalogue: compact, flat, every
// figure a launcher's optimizer compares. Prices are per GPU-hour in fen
// before the SLA surcharge; per-GPU figures say so in their names.
type Entry struct {
	OfferID int64 `json:"offer_id"`
	// GPU is the catalogue slug; an offer serves the instance types
	// GPU.1x to GPU.<MaxGPUs>x.
	GPU           string `json:"gpu"`
	MaxGPUs       int    `json:"max_gpus"`
	AvailableGPUs int    `json:"available_gpus"`
	VRAMGB        int    `json:"vram_gb"`
	VCPUPerGPU    int    `json:"vcpu_per_gpu"`
	RAMGBPerGPU   int    `json:"ram_gb_per_gpu"`
	DiskGB        int    `json:"disk_gb"`
	Interconnect  string `json:"interconnect"`
	// PriceFen is the on-demand price; OffpeakPriceFen the same in the
	// off-peak hours (22:00–08:00 Asia/Shanghai and weekends);
	// StudentPriceFen a verified lab member's.
	PriceFen        int64 `json:"price_fen"`
	OffpeakPriceFen int64 `json:"offpeak_price_fen"`
	StudentPriceFen int64 `json:"student_price_fen"`
	// InterruptibleFloorFen and InterruptibleClearingFen are the lowest bid
	// the offer takes and what a bid must reach to run now; null for an
	// offer that takes no bids.
	InterruptibleFloorFen    *int64 `json:"interruptible_floor_fen"`
	InterruptibleClearingFen *int64 `json:"interruptible_clearing_fen"`
	City                     string `json:"city"`
	Region                   string `json:"region"`
	Datacenter               string `json:"datacenter"`
	// Storage is the datacentre's: local or shared (a stopped rental
	// starts again on any of its nodes).
	Storage string `json:"storage"`
	NodeID  int64  `json:"node_id"`
	// LatencyMS is the published round trip from the catalogue's "from"
	// city; null without one, or when none is published.
	LatencyMS *float64 `json:"latency_ms"`
	// Verified: an independent witness confirmed the node's benchmark.
	Verified bool `json:"verified"`
	// Reliability is the node's uptime over 30 days in percent; null
	// until it is computed.
	Reliability *float64 `json:"reliability"`
	// Simulated: the node runs simulated GPUs (the demo's, test providers').
	Simulated bool `json:"simulated"`
}

// CatalogueQuery narrows the catalogue; the zero value is the whole market.
type CatalogueQuery struct {
	// From is the city the latencies are from ("": none).
	From string
	// GPUs keeps only these catalogue models (none: all).
	GPUs []string
	// Available keeps only offers with a GPU free.
	Available bool
}

// ParseCatalogueQuery reads the catalogue's parameters (from, gpu
// repeated, available); a bad one is an EINVALID error naming it.
func ParseCatalogueQuery(v url.Values) (CatalogueQuery, error) {
	var q CatalogueQuery
	if q.From = v.Get("from"); q.From != "" {
		if _, ok := catalog.CityBySlug(q.From); !ok {
			return q, apperr.Invalid("from", "unknown city "+strconv.Quote(clip(q.From)))
		}
	}
	for _, g := range v["gpu"] {
		if _, ok := catalog.GPUModelBySlug(g); !ok {
			return q, apperr.Invalid("gpu", "unknown GPU model "+strconv.Quote(clip(g)))
		}
		if !slices.Contains(q.GPUs, g) {
			q.GPUs = append(q.GPUs, g)
		}
	}
	slices.Sort(q.GPUs)
	switch v.Get("available") {
	case "", "0", "false":
	case "1", "true":
		q.Available = true
	default:
		return q, apperr.Invalid("available", "available is 1 or 0")
	}
	return q, nil
}

// key is the query in one canonical spelling, for the ETag.
func (q CatalogueQuery) key() string {
	return fmt.Sprintf("from=%s&gpu=%s&available=%t", q.From, strings.Join(q.GPUs, ","), q.Available)
}

// Catalogue is the market's offers in the compact form, cheapest first,
// with the offers version they were read at.
type Catalogue struct {
	Version int64
	// ETag names this answer: the version and the query, so that an
	// unchanged market answers If-None-Match with 304.
	ETag    string
	Entries []Entry
}

// ETagOf is the catalogue's weak entity tag (W/"cat-…") for the offers
// version and query: a client that holds it has the answer. Weak, as it
// names the content, not the bytes: the answer is sent plain or
// compressed (gzip), and a strong tag would have to differ between them.
func ETagOf(version int64, q CatalogueQuery) string {
	sum := sha256.Sum256([]byte(q.key()))
	return `W/"cat-` + strconv.FormatInt(version, 10) + "-" + hex.EncodeToString(sum[:6]) + `"`
}

// ReadCatalogue builds the catalogue from the offer index.
func ReadCatalogue(ix *offers.Index, q CatalogueQuery) Catalogue {
	version, list := ix.ByPrice(false)
	out := Catalogue{Version: version, ETag: ETagOf(version, q), Entries: make([]Entry, 0, len(list))}
	for _, o := range list {
		if len(q.GPUs) > 0 && !slices.Contains(q.GPUs, o.GPUModel()) || q.Available && o.AvailableGPUs() == 0 {
			continue
		}
		out.Entries = append(out.Entries, entryOf(o, q.From))
	}
	return out
}

// entryOf is one listed offer in the catalogue.
func entryOf(o *offers.Listed, from string) Entry {
	e := Entry{OfferID: o.ID, GPU: o.GPUModel(), MaxGPUs: o.MaxGPUs(), AvailableGPUs: o.AvailableGPUs(), VRAMGB: o.GPU.VRAMGB,
		VCPUPerGPU: o.VCPUPerGPU(), RAMGBPerGPU: o.RAMGBPerGPU(), DiskGB: o.DiskGB(), Interconnect: o.Interconnect(),
		PriceFen: o.PricePerGPUHourFen(), OffpeakPriceFen: pricing.Discounted(o.PricePerGPUHourFen(), o.OffpeakDiscountPct()),
		StudentPriceFen: o.PriceFen(true), NodeID: o.NodeID, Reliability: o.Uptime30dPct(), Verified: verified(o)}
	if i := o.Interruptible; i != nil {
		e.InterruptibleFloorFen, e.InterruptibleClearingFen = new(i.FloorFen), new(i.ClearingFen)
	}
	if dc := o.Datacenter; dc != nil {
		e.City, e.Region, e.Datacenter, e.Storage = dc.City, dc.Region, dc.Slug, string(dc.Storage)
	}
	if p := o.Provider; p != nil {
		e.Simulated = p.Simulated
	}
	if from != "" {
		if ms, ok := o.LatencyFrom(from); ok {
			e.LatencyMS = &ms
		}
	}
	return e
}

// verified reports whether an independent witness confirmed the offer's
// benchmark: its status judged with the node's witnesses (the index's),
// else the report's own.
func verified(o *offers.Listed) bool {
	st := o.WitnessStatus()
	if st == "" {
		st = string(benchmarks.HeadlineStatus(o.GPUModel(), o.Report, benchmarks.Independent{}))
	}
	return st == string(benchmarks.StatusVerified)
}

// TypeSummary is one instance type on the market now.
type TypeSummary struct {
	Name    string `json:"name"`
	GPU     string `json:"gpu"`
	GPUName string `json:"gpu_name"`
	GPUs    int    `json:"gpus"`
	VRAMGB  int    `json:"vram_gb"`
	// Offers is how many offers serve the type (MaxGPUs at least GPUs);
	// AvailableInstances how many instances of it could launch now (each
	// offer's free GPUs, GPUs at a time).
	Offers             int `json:"offers"`
	AvailableInstances int `json:"available_instances"`
	// MinPriceFen is the cheapest on-demand price per GPU-hour among the
	// offers serving it; MinAvailablePriceFen among those with the GPUs
	// free now (null: none is).
	MinPriceFen          int64    `json:"min_price_fen"`
	MinAvailablePriceFen *int64   `json:"min_available_price_fen"`
	Regions              []string `json:"regions"`
	Cities               []string `json:"cities"`
}

// InstanceTypes lists every instance type some listed offer serves, in
// the catalogue's model order, then by GPU count.
func InstanceTypes(ix *offers.Index) []TypeSummary {
	_, list := ix.ByPrice(false) // cheapest first: each type's first offer sets its prices
	byName := map[string]*TypeSummary{}
	for _, o := range list {
		for n := 1; n <= min(o.MaxGPUs(), MaxTypeGPUs); n++ {
			name := InstanceType{GPU: o.GPUModel(), GPUs: n}.String()
			t := byName[name]
			if t == nil {
				t = &TypeSummary{Name: name, GPU: o.GPUModel(), GPUName: o.GPU.Name, GPUs: n, VRAMGB: o.GPU.VRAMGB,
					MinPriceFen: o.PricePerGPUHourFen(), Regions: []string{}, Cities: []string{}}
				byName[name] = t
			}
			t.Offers++
			if o.AvailableGPUs() >= n {
				t.AvailableInstances += o.AvailableGPUs() / n
				if t.MinAvailablePriceFen == nil {
					t.MinAvailablePriceFen = new(o.PricePerGPUHourFen())
				}
			}
			if dc := o.Datacenter; dc != nil {
				if !slices.Contains(t.Regions, dc.Region) {
					t.Regions = append(t.Regions, dc.Region)
				}
				if !slices.Contains(t.Cities, dc.City) {
					t.Cities = append(t.Cities, dc.City)
				}
			}
		}
	}
	order := map[string]int{}
	for i, m := range catalog.GPUModels() {
		order[m.Slug] = i
	}
	out := make([]TypeSummary, 0, len(byName))
	for _, t := range byName {
		slices.Sort(t.Regions)
		slices.Sort(t.Cities)
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b TypeSummary) int {
		if a.GPU != b.GPU {
			return order[a.GPU] - order[b.GPU]
		}
		return a.GPUs - b.GPUs
	})
	return out
}
