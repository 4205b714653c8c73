// Package demo seeds the demo market (believable providers, nodes and
// offers in the demo datacentres, every record marked demo) and synthetic
// offers for load tests (marked synthetic).
package demo

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/csv"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"

	"suanli/catalog"
	"suanli/models"
	"suanli/models/demodata"
)

//go:embed datacentres.csv
var datacentresCSV []byte

//go:embed city_rtt_ms.csv
var rttCSV []byte

// LatencySource labels the demo latency figures wherever they are shown.
const LatencySource = "demo: typical published city-to-city RTT"

// SharedStorageDatacenter is the demo datacentre whose storage is shared
// (its nodes mount one volume root); the others' is local.
const SharedStorageDatacenter = "cd-science-city"

// Datacenters returns the demo datacentres and their latency tables (by
// slug), parsed from the embedded copies of the shared demo data.
func Datacenters() ([]models.Datacenter, map[string][]models.DatacenterLatency, error) {
	recs, err := readCSV(datacentresCSV)
	if err != nil {
		return nil, nil, fmt.Errorf("datacentres.csv: %w", err)
	}
	var dcs []models.Datacenter
	for _, r := range recs {
		uplink, err := strconv.Atoi(r["uplink_gbps"])
		if err != nil {
			return nil, nil, fmt.Errorf("datacentres.csv %s: uplink: %w", r["slug"], err)
		}
		dcs = append(dcs, models.Datacenter{
			Slug: r["slug"], NameZH: r["name_zh"], NameEN: r["name_en"], City: r["city"],
			DistrictZH: r["district_zh"], DistrictEN: r["district_en"], Region: r["region"],
			Tier: r["tier"], UplinkGbps: uplink, Demo: true, Storage: models.StorageLocal,
		})
		if r["slug"] == SharedStorageDatacenter {
			dcs[len(dcs)-1].Storage = models.StorageShared
		}
	}
	rtts, err := readCSV(rttCSV)
	if err != nil {
		return nil, nil, fmt.Errorf("city_rtt_ms.csv: %w", err)
	}
	// The published figures are symmetric city pairs.
	rtt := map[[2]string]float64{}
	for _, r := range rtts {
		ms, err := strconv.ParseFloat(r["rtt_ms"], 64)
		if err != nil {
			return nil, nil, fmt.Errorf("city_rtt_ms.csv: %w", err)
		}
		rtt[[2]string{r["from"], r["to"]}] = ms
		rtt[[2]string{r["to"], r["from"]}] = ms
	}
	lat := map[string][]models.DatacenterLatency{}
	for _, d := range dcs {
		for _, c := range catalog.Cities() {
			if ms, ok := rtt[[2]string{c.Slug, d.City}]; ok {
				lat[d.Slug] = append(lat[d.Slug], models.DatacenterLatency{FromCity: c.Slug, RTTms: ms, Source: LatencySource})
			}
		}
	}
	return dcs, lat, nil
}

func readCSV(b []byte) ([]map[string]string, error) {
	// Comment lines start with '#'.
	r := csv.NewReader(bytes.NewReader(b))
	r.Comment = '#'
	recs, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("empty")
	}
	var out []map[string]string
	for _, rec := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			if i < len(rec) {
				m[h] = strings.TrimSpace(rec[i])
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// listing describes one demo node and its offer, prices in yuan.
type listing struct {
	provider, dc, gpu string
	gpus, busy        int
	interconnect      string
	hourly, monthly   float64 // yuan per GPU
	offpeak, student  int     // percent
}

var demoProviders = []models.Provider{
	{Slug: "demo-tianfu-compute", NameZH: "天府算力", NameEN: "Tianfu Compute", Demo: true, Simulated: true},
	{Slug: "demo-rongcheng-ai", NameZH: "蓉城智算", NameEN: "Rongcheng AI Cloud", Demo: true, Simulated: true},
	{Slug: "demo-bashu-gpu", NameZH: "巴蜀GPU云", NameEN: "Bashu GPU Cloud", Demo: true, Simulated: true},
	{Slug: "demo-jinghu-ai", NameZH: "京沪智算", NameEN: "Jinghu AI Compute", Demo: true, Simulated: true},
	{Slug: "demo-rhein-compute", NameZH: "莱茵算力", NameEN: "Rhein Compute GmbH", Demo: true, Simulated: true},
}

const (
	pcie = catalog.InterconnectPCIe
	nvl  = catalog.InterconnectNVLink
	nvib = catalog.InterconnectNVLinkIB
)

// demoListings: prices in line with the Chinese market in 2026 (RTX 4090
// around ¥3,000/month, A100 80GB around ¥18,000, H100 around ¥20,000), with
// the on-demand rate × 730 h above the monthly price.
var demoListings = []listing{
	// Chengdu Tianfu Software Park
	{"demo-tianfu-compute", "cd-tianfu-swpark", "h100-sxm", 8, 3, nvib, 34.00, 20500, 20, 10},
	{"demo-tianfu-compute", "cd-tianfu-swpark", "rtx-4090", 8, 2, pcie, 4.98, 2980, 30, 20},
	{"demo-tianfu-compute", "cd-tianfu-swpark", "a100-80g-sxm", 8, 4, nvl, 29.50, 18200, 20, 10},
	{"demo-rongcheng-ai", "cd-tianfu-swpark", "l40s", 4, 1, pcie, 10.20, 6200, 25, 15},
	{"demo-rongcheng-ai", "cd-tianfu-swpark", "h200-sxm", 8, 5, nvib, 48.00, 29500, 15, 0},
	// Chengdu Hi-tech Zone
	{"demo-rongcheng-ai", "cd-hitech", "h100-sxm", 8, 6, nvib, 33.20, 19800, 15, 0},
	{"demo-rongcheng-ai", "cd-hitech", "rtx-4090", 4, 0, pcie, 5.20, 3050, 30, 20},
	{"demo-rongcheng-ai", "cd-hitech", "a100-40g-pcie", 4, 1, pcie, 18.50, 11400, 20, 15},
	{"demo-tianfu-compute", "cd-hitech", "v100-32g-sxm2", 8, 2, nvl, 3.20, 1800, 30, 30},
	{"demo-tianfu-compute", "cd-hitech", "l40s", 8, 8, pcie, 9.80, 5900, 20, 10},
	// Chengdu Science City
	{"demo-bashu-gpu", "cd-science-city", "h100-sxm", 8, 0, nvib, 35.50, 21200, 10, 20},
	{"demo-bashu-gpu", "cd-science-city", "h200-sxm", 8, 2, nvib, 46.80, 28800, 10, 20},
	{"demo-bashu-gpu", "cd-science-city", "a100-80g-sxm", 8, 3, nvl, 28.60, 17600, 20, 25},
	{"demo-bashu-gpu", "cd-science-city", "rtx-4090", 8, 5, pcie, 4.80, 2900, 35, 25},
	{"demo-tianfu-compute", "cd-science-city", "h20", 8, 2, nvl, 13.80, 8400, 20, 20},
	// Tianfu International Finance Center
	{"demo-tianfu-compute", "cd-tifc", "rtx-4090", 2, 0, pcie, 5.60, 3200, 20, 0},
	{"demo-tianfu-compute", "cd-tifc", "l40s", 2, 1, pcie, 11.00, 6500, 20, 0},
	{"demo-rongcheng-ai", "cd-tifc", "h100-pcie", 4, 1, pcie, 26.00, 15900, 15, 10},
	{"demo-rongcheng-ai", "cd-tifc", "rtx-4090", 1, 0, pcie, 5.40, 3100, 25, 10},
	// Chongqing Liangjiang
	{"demo-bashu-gpu", "cq-liangjiang", "h100-sxm", 8, 2, nvl, 32.60, 19500, 20, 10},
	{"demo-bashu-gpu", "cq-liangjiang", "rtx-4090", 8, 3, pcie, 4.70, 2850, 35, 20},
	{"demo-bashu-gpu", "cq-liangjiang", "a100-80g-sxm", 4, 0, nvl, 28.00, 17400, 20, 15},
	{"demo-bashu-gpu", "cq-liangjiang", "v100-32g-sxm2", 4, 1, nvl, 3.00, 1700, 30, 30},
	{"demo-rongcheng-ai", "cq-liangjiang", "l40s", 8, 2, pcie, 9.60, 5800, 25, 10},
	// Beijing Yizhuang
	{"demo-jinghu-ai", "bj-yizhuang", "h100-sxm", 8, 4, nvib, 31.80, 19200, 10, 0},
	{"demo-jinghu-ai", "bj-yizhuang", "h200-sxm", 8, 1, nvib, 45.50, 28000, 10, 0},
	{"demo-jinghu-ai", "bj-yizhuang", "a100-80g-sxm", 8, 2, nvib, 27.80, 17200, 15, 10},
	{"demo-jinghu-ai", "bj-yizhuang", "h20", 8, 0, nvl, 13.50, 8200, 15, 10},
	{"demo-jinghu-ai", "bj-yizhuang", "rtx-4090", 4, 1, pcie, 5.10, 3000, 25, 15},
	// Shanghai Jiading
	{"demo-jinghu-ai", "sh-jiading", "h100-sxm", 8, 3, nvib, 33.00, 20000, 15, 0},
	{"demo-jinghu-ai", "sh-jiading", "l40s", 8, 3, pcie, 10.00, 6000, 20, 10},
	{"demo-jinghu-ai", "sh-jiading", "a100-40g-pcie", 8, 2, pcie, 19.00, 11600, 20, 10},
	{"demo-jinghu-ai", "sh-jiading", "rtx-4090", 8, 4, pcie, 5.00, 3000, 30, 15},
	{"demo-jinghu-ai", "sh-jiading", "v100-32g-sxm2", 8, 0, nvl, 3.30, 1850, 30, 30},
	// Guangzhou Nansha
	{"demo-jinghu-ai", "gz-nansha", "h100-sxm", 8, 1, nvl, 33.80, 20300, 15, 0},
	{"demo-jinghu-ai", "gz-nansha", "h200-sxm", 8, 3, nvib, 47.00, 29000, 10, 0},
	{"demo-jinghu-ai", "gz-nansha", "rtx-4090", 8, 2, pcie, 4.90, 2950, 30, 20},
	{"demo-jinghu-ai", "gz-nansha", "l40s", 4, 0, pcie, 9.90, 6000, 20, 10},
	// Frankfurt
	{"demo-rhein-compute", "eu-frankfurt", "h100-sxm", 8, 2, nvib, 38.00, 22800, 0, 0},
	{"demo-rhein-compute", "eu-frankfurt", "h200-sxm", 8, 4, nvib, 52.00, 31000, 0, 0},
	{"demo-rhein-compute", "eu-frankfurt", "b200", 8, 3, nvib, 85.00, 52000, 0, 0},
	{"demo-rhein-compute", "eu-frankfurt", "l40s", 4, 1, pcie, 11.50, 6900, 10, 0},
	{"demo-rhein-compute", "eu-frankfurt", "a100-80g-sxm", 8, 0, nvl, 30.00, 18500, 0, 0},
}

// demoFloorPct opts a few demo offers (datacentre/model) into
// interruptible rentals (竞价实例) with a floor at this share of their
// on-demand price, as spot markets price them (40–60 % of on demand).
var demoFloorPct = map[string]int{
	"cd-tianfu-swpark/rtx-4090":  45,
	"cd-hitech/l40s":             60,
	"cd-science-city/h100-sxm":   55,
	"cq-liangjiang/a100-80g-sxm": 50,
	"bj-yizhuang/h20":            40,
	"sh-jiading/rtx-4090":        50,
}

// DemoProviderSlug is the first demo provider; its presence means the demo
// market has been seeded.
const DemoProviderSlug = "demo-tianfu-compute"

// SeedDemo loads the demo market unless it is already there. It is
// idempotent: a second call changes nothing.
func SeedDemo(ctx context.Context, db *models.DB) error {
	exists, err := demodata.ProviderExists(ctx, db, DemoProviderSlug)
	if err != nil {
		return err
	}
	if exists {
		slog.Info("demo data already present")
		return nil
	}
	dcs, lat, err := Datacenters()
	if err != nil {
		return err
	}
	seed := &demodata.MarketSeed{Providers: append([]models.Provider(nil), demoProviders...), Datacenters: dcs, Latencies: lat}
	perDC := map[string]int{}
	for _, l := range demoListings {
		perDC[l.dc]++
		name := fmt.Sprintf("%s-%s-%02d", l.dc, l.gpu, perDC[l.dc])
		lst := build(l, name, true, false)
		if pct, ok := demoFloorPct[l.dc+"/"+l.gpu]; ok {
			floor := (lst.Offer.PricePerGPUHourFen*int64(pct) + 50) / 100
			lst.Offer.InterruptibleFloorPerGPUHourFen = &floor
		}
		seed.Listings = append(seed.Listings, lst)
	}
	if err := demodata.CreateMarket(ctx, db, seed); err != nil {
		return fmt.Errorf("seed demo: %w", err)
	}
	slog.Info("demo data seeded", "providers", len(seed.Providers), "datacentres", len(dcs), "offers", len(seed.Listings))
	return nil
}

func build(l listing, nodeName string, demo, synthetic bool) demodata.Listing {
	// The demo's and the synthetic nodes are simulated: the platform says so
	// (their providers are), never their agents.
	node := models.Node{Name: nodeName, GPUModel: l.gpu, Status: "active", Demo: demo, Synthetic: synthetic, Simulated: demo || synthetic}
	var gpus []models.GPU
	for i := 0; i < l.gpus; i++ {
		state := models.GPUFree
		if i < l.busy {
			state = models.GPUBusy
		}
		gpus = append(gpus, models.GPU{Idx: i, UUID: gpuUUID(l.provider, nodeName, i), GPUModel: l.gpu, State: state})
	}
	monthly := yuan(l.monthly)
	weekly := yuan(l.monthly * 0.27)
	vcpu, ram := 16, 120
	if l.gpu == "rtx-4090" || l.gpu == "rtx-3090" || l.gpu == "v100-32g-sxm2" {
		vcpu, ram = 12, 60
	}
	offer := models.Offer{
		GPUModel: l.gpu, MaxGPUs: l.gpus, VCPUPerGPU: vcpu, RAMGBPerGPU: ram, DiskGB: 500 * l.gpus,
		Interconnect: l.interconnect, PricePerGPUHourFen: yuan(l.hourly),
		WeeklyPricePerGPUFen: &weekly, MonthlyPricePerGPUFen: &monthly,
		OffpeakDiscountPct: l.offpeak, StudentDiscountPct: l.student,
		AvailableGPUs: l.gpus - l.busy, Status: models.OfferListed, Demo: demo, Synthetic: synthetic,
	}
	return demodata.Listing{ProviderSlug: l.provider, DatacenterSlug: l.dc, Node: node, GPUs: gpus, Offer: offer}
}

// yuan converts a price in yuan to fen, rounding to the nearest fen.
func yuan(y float64) int64 { return int64(y*100 + 0.5) }

// gpuUUID makes a stable NVML-style UUID for a seeded GPU.
func gpuUUID(provider, node string, idx int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/%s/%d", provider, node, idx)))
	x := fmt.Sprintf("%x", h[:16])
	return fmt.Sprintf("GPU-%s-%s-%s-%s-%s", x[0:8], x[8:12], x[12:16], x[16:20], x[20:32])
}

// basePrices are typical per-GPU prices in yuan (hourly, monthly) that the
// synthetic offers vary around.
var basePrices = map[string][2]float64{
	"rtx-3090": {3.2, 1900}, "rtx-4090": {5.0, 3000}, "l40s": {10, 6000},
	"v100-32g-sxm2": {3.2, 1800}, "a100-40g-pcie": {19, 11500}, "a100-40g-sxm": {21, 12500},
	"a100-80g-sxm": {29, 18000}, "h100-pcie": {26, 16000}, "h100-sxm": {34, 20000},
	"h200-sxm": {48, 29000}, "h20": {14, 8500}, "b200": {85, 52000},
}

// SeedScale adds n synthetic offers (one node each, from synthetic
// providers of up to 1,000 offers) spread over every catalogue model and
// demo datacentre. Repeated calls add more.
func SeedScale(ctx context.Context, db *models.DB, n int) error {
	if n <= 0 {
		return fmt.Errorf("--scale must be positive, got %d", n)
	}
	dcs, lat, err := Datacenters()
	if err != nil {
		return err
	}
	first, err := demodata.CountSyntheticProviders(ctx, db)
	if err != nil {
		return err
	}
	models_ := catalog.GPUModels()
	rng := rand.New(rand.NewPCG(uint64(first), uint64(n)))
	const perProvider = 1000
	const chunk = 10000 // offers per transaction, to bound memory and lock time
	seed := &demodata.MarketSeed{Datacenters: dcs, Latencies: lat}
	flush := func() error {
		if len(seed.Listings) == 0 && len(seed.Providers) == 0 {
			return nil
		}
		if err := demodata.CreateMarket(ctx, db, seed); err != nil {
			return err
		}
		seed = &demodata.MarketSeed{}
		return nil
	}
	var prov string
	for i := 0; i < n; i++ {
		if i%perProvider == 0 {
			k := first + int64(i/perProvider) + 1
			prov = fmt.Sprintf("synthetic-%d", k)
			seed.Providers = append(seed.Providers, models.Provider{
				Slug: prov, NameZH: fmt.Sprintf("合成提供方 %d", k), NameEN: fmt.Sprintf("Synthetic provider %d", k), Synthetic: true, Simulated: true,
			})
		}
		m := models_[i%len(models_)]
		dc := dcs[(i/len(models_)+rng.IntN(len(dcs)))%len(dcs)]
		base := basePrices[m.Slug]
		f := 0.85 + rng.Float64()*0.4
		gpus := []int{1, 2, 4, 8}[rng.IntN(4)]
		ic := pcie
		if strings.HasPrefix(m.FormFactor, "SXM") {
			ic = []string{nvl, nvib}[rng.IntN(2)]
		}
		l := listing{
			provider: prov, dc: dc.Slug, gpu: m.Slug, gpus: gpus, busy: rng.IntN(gpus + 1), interconnect: ic,
			hourly: base[0] * f, monthly: base[1] * f * (0.95 + rng.Float64()*0.1),
			offpeak: []int{0, 10, 20, 30}[rng.IntN(4)], student: []int{0, 0, 10, 20}[rng.IntN(4)],
		}
		seed.Listings = append(seed.Listings, build(l, fmt.Sprintf("syn-%s-%06d", prov, i), false, true))
		if len(seed.Listings) == chunk {
			if err := flush(); err != nil {
				return err
			}
			slog.Info("synthetic offers", "added", i+1, "of", n)
		}
	}
	if err := flush(); err != nil {
		return err
	}
	slog.Info("synthetic offers seeded", "offers", n)
	return nil
}
