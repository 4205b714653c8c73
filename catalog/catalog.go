// Package catalog holds the reference data compiled into the binary: the
// GPU models with their nominal specifications (copied, with their sources,
// from the project's shared catalogue) and the cities the market knows.
package catalog

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"fmt"
	"strconv"
)

//go:embed gpus.csv
var gpusCSV []byte

// GPUModel is one GPU model's nominal specification. TFLOPS figures are
// dense tensor rates from the vendor's datasheet; Source says where.
type GPUModel struct {
	Slug             string
	Name             string
	Arch             string
	FormFactor       string
	VRAMGB           int
	MemBWGBps        int
	BF16TFLOPS       float64 // 0 when the model has no BF16 (V100)
	FP16TFLOPS       float64
	FP32TFLOPS       float64
	TDPW             int
	NVLinkGBps       float64
	NVMLNameContains string
	Confirmed        string // yes, partly or no: how well the figures are sourced
	Source           string
	// BoostClockMHz is the SM clock the datasheet's dense tensor rates are
	// computed at (rate = SMs × FLOP per SM per clock × this clock), so
	// that a rate at another clock scales by the clock's ratio; 0 where
	// the rate does not follow from the clock (the H20's is capped).
	BoostClockMHz int
	// ExpectedPct is the share of the dense tensor rate, in percent, that
	// a GEMM really reaches on this model (its maximum achievable matmul
	// FLOPS); ExpectedSource says where the figure comes from, or that it
	// is a conservative default.
	ExpectedPct    float64
	ExpectedSource string
}

// TensorTFLOPS is the figure used for price per TFLOPS: BF16, or FP16 for
// models without BF16.
func (m GPUModel) TensorTFLOPS() float64 {
	if m.BF16TFLOPS > 0 {
		return m.BF16TFLOPS
	}
	return m.FP16TFLOPS
}

var models, bySlug = mustParse(gpusCSV)

// GPUModels returns every catalogue model in catalogue order.
func GPUModels() []GPUModel {
	out := make([]GPUModel, len(models))
	copy(out, models)
	return out
}

// GPUModelBySlug returns the model with the given slug.
func GPUModelBySlug(slug string) (GPUModel, bool) {
	m, ok := bySlug[slug]
	return m, ok
}

// GPUName returns the catalogue name of a model, or the slug itself for
// one the catalogue does not know (a report or rental of a model since
// removed), so that a page always shows something.
func GPUName(slug string) string {
	if m, ok := GPUModelBySlug(slug); ok {
		return m.Name
	}
	return slug
}

// Families returns the architectures in catalogue order, each with its models.
func Families() []Family {
	var out []Family
	idx := map[string]int{}
	for _, m := range models {
		i, ok := idx[m.Arch]
		if !ok {
			i = len(out)
			idx[m.Arch] = i
			out = append(out, Family{Name: m.Arch})
		}
		out[i].Models = append(out[i].Models, m)
	}
	return out
}

// Family is one architecture and its models.
type Family struct {
	Name   string
	Models []GPUModel
}

func mustParse(b []byte) ([]GPUModel, map[string]GPUModel) {
	ms, err := parseGPUs(b)
	if err != nil {
		panic("catalog: gpus.csv: " + err.Error())
	}
	by := make(map[string]GPUModel, len(ms))
	for _, m := range ms {
		by[m.Slug] = m
	}
	return ms, by
}

func parseGPUs(b []byte) ([]GPUModel, error) {
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) < 2 {
		return nil, fmt.Errorf("no rows")
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, h := range []string{"slug", "name", "arch", "form_factor", "vram_gb", "mem_bw_gbps", "bf16_dense_tflops", "fp16_dense_tflops", "fp32_tflops", "tdp_w", "nvlink_gbps", "nvml_name_contains", "confirmed", "source", "boost_clock_mhz", "expected_pct", "expected_source"} {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("missing column %q", h)
		}
	}
	var out []GPUModel
	for line, r := range recs[1:] {
		var perr error
		num := func(h string) float64 {
			v, err := strconv.ParseFloat(r[col[h]], 64)
			if err != nil && perr == nil {
				perr = fmt.Errorf("row %d column %s: %w", line+2, h, err)
			}
			return v
		}
		m := GPUModel{
			Slug: r[col["slug"]], Name: r[col["name"]], Arch: r[col["arch"]], FormFactor: r[col["form_factor"]],
			VRAMGB: int(num("vram_gb")), MemBWGBps: int(num("mem_bw_gbps")),
			BF16TFLOPS: num("bf16_dense_tflops"), FP16TFLOPS: num("fp16_dense_tflops"), FP32TFLOPS: num("fp32_tflops"),
			TDPW: int(num("tdp_w")), NVLinkGBps: num("nvlink_gbps"),
			NVMLNameContains: r[col["nvml_name_contains"]], Confirmed: r[col["confirmed"]], Source: r[col["source"]],
			BoostClockMHz: int(num("boost_clock_mhz")), ExpectedPct: num("expected_pct"), ExpectedSource: r[col["expected_source"]],
		}
		if perr != nil {
			return nil, perr
		}
		out = append(out, m)
	}
	return out, nil
}

// City is a place latency is measured from and datacentres are located in.
type City struct {
	Slug   string
	NameZH string
	NameEN string
}

// Name returns the city's name in the given language ("zh-CN" or "en").
func (c City) Name(lang string) string {
	if lang == "en" {
		return c.NameEN
	}
	return c.NameZH
}

var cities = []City{
	{"chengdu", "成都", "Chengdu"},
	{"chongqing", "重庆", "Chongqing"},
	{"xian", "西安", "Xi'an"},
	{"beijing", "北京", "Beijing"},
	{"shanghai", "上海", "Shanghai"},
	{"guangzhou", "广州", "Guangzhou"},
	{"shenzhen", "深圳", "Shenzhen"},
	{"frankfurt", "法兰克福", "Frankfurt"},
}

var citiesBySlug = func() map[string]City {
	m := map[string]City{}
	for _, c := range cities {
		m[c.Slug] = c
	}
	return m
}()

// Cities returns the known cities, west China first.
func Cities() []City { return append([]City(nil), cities...) }

// CityBySlug returns the city with the slug.
func CityBySlug(slug string) (City, bool) {
	c, ok := citiesBySlug[slug]
	return c, ok
}

// Region is a market region (a group of cities).
type Region struct {
	Slug   string
	NameZH string
	NameEN string
}

// Name returns the region's name in the given language.
func (r Region) Name(lang string) string {
	if lang == "en" {
		return r.NameEN
	}
	return r.NameZH
}

var regions = []Region{
	{"cn-southwest", "西南", "China Southwest"},
	{"cn-north", "华北", "China North"},
	{"cn-east", "华东", "China East"},
	{"cn-south", "华南", "China South"},
	{"eu-central", "欧洲中部", "Europe Central"},
}

// Regions returns the known regions.
func Regions() []Region { return append([]Region(nil), regions...) }

// RegionBySlug returns the region with the slug.
func RegionBySlug(slug string) (Region, bool) {
	for _, r := range regions {
		if r.Slug == slug {
			return r, true
		}
	}
	return Region{}, false
}

// Interconnect kinds an offer can declare.
const (
	InterconnectPCIe   = "pcie"
	InterconnectNVLink = "nvlink"
	// InterconnectNVLinkIB is NVLink inside the node plus InfiniBand between nodes.
	InterconnectNVLinkIB = "nvlink-ib"
)

// Interconnects lists the filter values for interconnect, in display order.
// "infiniband" matches offers with InfiniBand; "nvlink" matches any offer
// whose GPUs are joined by NVLink.
var Interconnects = []string{"nvlink", "infiniband", "pcie"}

// InterconnectMatches reports whether an offer's interconnect satisfies the
// filter value.
func InterconnectMatches(offer, filter string) bool {
	switch filter {
	case "nvlink":
		return offer == InterconnectNVLink || offer == InterconnectNVLinkIB
	case "infiniband":
		return offer == InterconnectNVLinkIB
	case "pcie":
		return offer == InterconnectPCIe
	}
	return false
}
