package handlers

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/benchmarks"
	"suanli/catalog"
	"suanli/handlers/witnessvm"
	"suanli/models"
	"suanli/offers"
	"suanli/witness"
)

// APIOffer is one offer in the public JSON API.
type APIOffer struct {
	ID  int64       `json:"id"`
	GPU APIGPUModel `json:"gpu"`
	// GPUs is the most GPUs one rental may take, all on one node.
	GPUs               int           `json:"gpus"`
	Datacenter         APIDatacenter `json:"datacenter"`
	Provider           APIProvider   `json:"provider"`
	PricePerGPUHourFen int64         `json:"price_per_gpu_hour_fen"`
	// StudentPricePerGPUHourFen is the on-demand price for verified lab members.
	StudentPricePerGPUHourFen int64 `json:"student_price_per_gpu_hour_fen"`
	// YourPricePerGPUHourFen is what the caller pays on demand: the student
	// price for a confirmed member of an approved lab, else the list price.
	YourPricePerGPUHourFen int64              `json:"your_price_per_gpu_hour_fen"`
	WeeklyPricePerGPUFen   *int64             `json:"weekly_price_per_gpu_fen"`
	MonthlyPricePerGPUFen  *int64             `json:"monthly_price_per_gpu_fen"`
	OffpeakDiscountPct     int                `json:"offpeak_discount_pct"`
	StudentDiscountPct     int                `json:"student_discount_pct"`
	AvailableGPUs          int                `json:"available_gpus"`
	LatencyMS              map[string]float64 `json:"latency_ms"`
	Interconnect           string             `json:"interconnect"`
	VCPUPerGPU             int                `json:"vcpu_per_gpu"`
	RAMGBPerGPU            int                `json:"ram_gb_per_gpu"`
	DiskGB                 int                `json:"disk_gb"`
	Status                 string             `json:"status"`
	Currency               string             `json:"currency"`
	Demo                   bool               `json:"demo"`
	Synthetic              bool               `json:"synthetic"`
	UpdatedAt              time.Time          `json:"updated_at"`
	// Benchmark is the node's latest benchmark report, null without one.
	Benchmark *APIOfferBenchmark `json:"benchmark"`
	// Uptime30dPct is the node's uptime over the last 30 days in percent,
	// null until it has been computed.
	Uptime30dPct *float64 `json:"uptime_30d_pct"`
	// CustomImages: renters may run their own image, besides the
	// catalogue images the offer offers (GET /api/v1/images?offer_id=).
	CustomImages bool `json:"custom_images"`
	// StoragePricePerGBMonthFen is the price of a GB of volume for 30
	// days, billed per second; NoGPUPricePerHourFen the hourly price of
	// the container without GPUs (no-GPU mode).
	StoragePricePerGBMonthFen int64 `json:"storage_price_per_gb_month_fen"`
	NoGPUPricePerHourFen      int64 `json:"no_gpu_price_per_hour_fen"`
	// Storage is the datacentre's: "local" (a volume stays on one node's
	// disk) or "shared" (it follows a rental to any node there).
	Storage string `json:"storage"`
	// RenterMeasured and PlatformAudited are what the verifier measured
	// inside renters' containers and in the platform's audit rentals over
	// the last 30 days (null without runs): witnesses beside the agent's
	// benchmark.
	RenterMeasured  *witnessvm.Figures `json:"renter_measured"`
	PlatformAudited *witnessvm.Figures `json:"platform_audited"`
	// Interruptible is the offer's floor and clearing price for bids per
	// GPU-hour before discounts (offers.Interruptible); null: no bids.
	Interruptible *offers.Interruptible `json:"interruptible"`
}

// APIOfferBenchmark is the headline of an offer's latest benchmark report (the
// whole report is at /benchmarks/{id}). Figures are per GPU; a figure the
// run did not measure is null.
type APIOfferBenchmark struct {
	ID                 int64    `json:"id"`
	MeasuredBF16TFLOPS *float64 `json:"measured_bf16_tflops"`
	PctOfNominal       *float64 `json:"pct_of_nominal"`
	// Simulated is true for a report from a node the platform runs
	// simulated (its provider's flag, not the agent's word).
	Simulated bool `json:"simulated"`
	// Status is what the figures are worth (benchmarks.Status): verified
	// (an independent witness agrees), unverified (the provider's agent
	// only), disputed, refused (outside the bounds; its figures are null)
	// or simulated.
	Status     string    `json:"status"`
	MeasuredAt time.Time `json:"measured_at"`
}

// APIGPUModel is the catalogue model of an offer, nominal figures.
type APIGPUModel struct {
	Slug       string  `json:"slug"`
	Name       string  `json:"name"`
	VRAMGB     int     `json:"vram_gb"`
	MemBWGBps  int     `json:"mem_bw_gbps"`
	BF16TFLOPS float64 `json:"bf16_tflops"`
	FP16TFLOPS float64 `json:"fp16_tflops"`
}

// APIDatacenter is where an offer's node is.
type APIDatacenter struct {
	Slug       string `json:"slug"`
	Name       string `json:"name"`
	NameZH     string `json:"name_zh"`
	City       string `json:"city"`
	District   string `json:"district"`
	DistrictZH string `json:"district_zh"`
	Region     string `json:"region"`
}

// APIProvider is who lists an offer.
type APIProvider struct {
	Slug string `json:"slug"`
	Name string `json:"name"`
}

// APIOfferList is the answer of GET /api/v1/offers.
type APIOfferList struct {
	Offers  []APIOffer `json:"offers"`
	Total   int        `json:"total"`
	Page    int        `json:"page"`
	PerPage int        `json:"per_page"`
}

func apiOffer(o models.OfferRow, student bool) APIOffer {
	m, _ := catalog.GPUModelBySlug(o.GPUModel)
	lat := o.Latency
	if lat == nil {
		lat = map[string]float64{}
	}
	out := APIOffer{
		ID:   o.ID,
		GPU:  APIGPUModel{Slug: m.Slug, Name: m.Name, VRAMGB: m.VRAMGB, MemBWGBps: m.MemBWGBps, BF16TFLOPS: m.BF16TFLOPS, FP16TFLOPS: m.FP16TFLOPS},
		GPUs: o.MaxGPUs,
		Datacenter: APIDatacenter{
			Slug: o.Datacenter.Slug, Name: o.Datacenter.Name("en"), NameZH: o.Datacenter.NameZH,
			City: o.Datacenter.City, District: o.Datacenter.DistrictEN, DistrictZH: o.Datacenter.DistrictZH, Region: o.Datacenter.Region,
		},
		Provider:                  APIProvider{Slug: o.Provider.Slug, Name: o.Provider.Name("en")},
		PricePerGPUHourFen:        o.PricePerGPUHourFen,
		StudentPricePerGPUHourFen: offers.StudentPriceFen(&o.Offer),
		YourPricePerGPUHourFen:    o.PricePerGPUHourFen,
		WeeklyPricePerGPUFen:      o.WeeklyPricePerGPUFen,
		MonthlyPricePerGPUFen:     o.MonthlyPricePerGPUFen,
		OffpeakDiscountPct:        o.OffpeakDiscountPct,
		StudentDiscountPct:        o.StudentDiscountPct,
		AvailableGPUs:             o.AvailableGPUs,
		LatencyMS:                 lat,
		Interconnect:              o.Interconnect,
		VCPUPerGPU:                o.VCPUPerGPU,
		RAMGBPerGPU:               o.RAMGBPerGPU,
		DiskGB:                    o.DiskGB,
		Status:                    o.Status,
		Currency:                  "cny",
		Demo:                      o.Demo,
		Synthetic:                 o.Synthetic,
		UpdatedAt:                 o.UpdatedAt,
		Uptime30dPct:              o.Uptime30dPct,
		CustomImages:              o.CustomImages,
		StoragePricePerGBMonthFen: o.StoragePricePerGBMonthFen,
		NoGPUPricePerHourFen:      o.NoGPUPricePerHourFen,
		Storage:                   string(o.Datacenter.Storage),
	}
	if r := o.Report; r != nil {
		out.Benchmark = &APIOfferBenchmark{ID: r.ID, MeasuredBF16TFLOPS: r.BF16TFLOPS, PctOfNominal: r.PctOfNominal,
			Simulated: r.Simulated, Status: string(benchmarks.HeadlineStatus(o.GPUModel, r, benchmarks.Independent{})), MeasuredAt: r.MeasuredAt.UTC()}
	}
	if student {
		out.YourPricePerGPUHourFen = out.StudentPricePerGPUHourFen
	}
	return out
}

// APIOffersList is GET /api/v1/offers: the same search as the page, plus
// per_page. Any invalid parameter is a 400 naming it.
func (h *Handler) APIOffersList(c echo.Context) error {
	q, errs := offers.ParseQuery(c.QueryParams(), true)
	if len(errs) > 0 {
		return errs[0]
	}
	// The order and max_price use the price the caller pays (your_price_…).
	student := IsStudent(c)
	q.StudentViewer = student
	res, err := h.Index.Search(q)
	if err != nil {
		return err
	}
	out := APIOfferList{Offers: make([]APIOffer, 0, len(res.Offers)), Total: res.Total, Page: q.Page, PerPage: q.PerPage}
	ids := make([]int64, len(res.Offers))
	for i, o := range res.Offers {
		ids[i] = o.ID
	}
	ws := &witness.Service{DB: h.DB}
	sums, err := ws.Summaries(c.Request().Context(), ids)
	if err != nil {
		return err
	}
	for _, o := range res.Offers {
		row := o.Row() // the index's record is compact: the stored offer, built for the answer
		a := apiOfferWitnessed(&row, student, sums[o.ID], witness.Summary{})
		a.Interruptible = o.Interruptible
		if st := o.WitnessStatus(); a.Benchmark != nil && st != "" {
			a.Benchmark.Status = st // judged with the node's witnesses by the index
		}
		out.Offers = append(out.Offers, a)
	}
	return c.JSON(http.StatusOK, out)
}

// APIOfferShow is GET /api/v1/offers/{id}.
func (h *Handler) APIOfferShow(c echo.Context) error {
	row, err := h.offerFromPath(c)
	if err != nil {
		return err
	}
	student := IsStudent(c)
	ws := &witness.Service{DB: h.DB}
	sm, err := ws.Summary(c.Request().Context(), row.ID)
	if err != nil {
		return err
	}
	nodeSm, err := ws.NodeSummary(c.Request().Context(), row.NodeID)
	if err != nil {
		return err
	}
	out := apiOfferWitnessed(&row, student, sm, nodeSm)
	if out.Interruptible, err = offers.InterruptibleOf(c.Request().Context(), h.DB, &row.Offer); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// apiOfferWitnessed is apiOffer with the offer's witnesses sm
// (renter_measured, platform_audited) and its benchmark status judged
// with its node's, nodeSm (the report is the node's).
func apiOfferWitnessed(row *models.OfferRow, student bool, sm, nodeSm witness.Summary) APIOffer {
	out := apiOffer(*row, student)
	out.RenterMeasured, out.PlatformAudited = witnessvm.API(sm.Renter), witnessvm.API(sm.Audit)
	if out.Benchmark != nil {
		out.Benchmark.Status = witnessvm.Status(row, nodeSm)
	}
	return out
}
