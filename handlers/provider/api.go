package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
	"suanli/models"
	"suanli/providers"
)

// The provider API: datacentres, nodes and offers of the caller's
// provider, JSON in and out, authenticated by the same API tokens as the
// rest of /api/v1. Authorisation is the market's (providers.Service): any
// id of another provider answers 404, exactly like a missing one.

// Validation problems (apperr.Fields) go to the central error handler
// like every other error: it answers them 422 with every field's problem
// (web.Status), as the forms show them.

// badBody is the answer to a body that is not the JSON object wanted.
// A value of the wrong JSON type is named by its field (a string where
// fen are wanted, say).
func badBody(err error, want string) error {
	msg := "want JSON " + want
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return &apperr.Error{Code: apperr.EINVALID, Field: te.Field, Message: fmt.Sprintf("%s: want %s, not a JSON %s", te.Field, te.Type, te.Value)}
	}
	if err != nil && strings.Contains(err.Error(), "unknown field") {
		msg = err.Error() + "; " + msg
	}
	return &apperr.Error{Code: apperr.EINVALID, Field: "body", Message: msg}
}

// callerProvider picks the provider an API call acts for: the one named,
// else the one the id of the thing named belongs to (from), else the
// caller's only provider.
func (h *Handler) callerProvider(c echo.Context, named int64, from func() (int64, error)) (int64, error) {
	if named > 0 {
		return named, nil
	}
	if from != nil {
		if id, err := from(); err == nil {
			return id, nil
		} else if apperr.Code(err) != apperr.ENOTFOUND {
			return 0, err
		}
	}
	mine, err := h.Providers.Mine(c.Request().Context(), handlers.CurrentUser(c))
	if err != nil {
		return 0, err
	}
	switch len(mine) {
	case 0:
		return 0, apperr.NotFound("provider (you are not a member of any provider)")
	case 1:
		return mine[0].Provider.ID, nil
	}
	return 0, &apperr.Error{Code: apperr.EINVALID, Field: "provider_id",
		Message: fmt.Sprintf("you belong to %d providers: give provider_id", len(mine))}
}

// queryProvider is the provider of a GET list: ?provider_id= or the caller's only one.
func (h *Handler) queryProvider(c echo.Context) (int64, error) {
	var named int64
	if s := c.QueryParam("provider_id"); s != "" {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id <= 0 {
			return 0, &apperr.Error{Code: apperr.EINVALID, Field: "provider_id", Message: "provider_id must be a positive integer"}
		}
		named = id
	}
	return h.callerProvider(c, named, nil)
}

type apiLatencyIn struct {
	FromCity string  `json:"from_city"`
	RTTms    float64 `json:"rtt_ms"`
}

type datacenterBody struct {
	ProviderID int64          `json:"provider_id"`
	Name       string         `json:"name"`
	NameEN     string         `json:"name_en"`
	City       string         `json:"city"`
	District   string         `json:"district"`
	DistrictEN string         `json:"district_en"`
	Tier       string         `json:"tier"`
	UplinkGbps int            `json:"uplink_gbps"`
	Latencies  []apiLatencyIn `json:"latencies"`
	Storage    string         `json:"storage"`
}

// input is the datacentre as the use case takes it, from a create or an
// update.
func (b datacenterBody) input() providers.DatacenterInput {
	lats := make([]providers.DeclaredLatency, len(b.Latencies))
	for i, l := range b.Latencies {
		lats[i] = providers.DeclaredLatency{FromCity: l.FromCity, RTTms: l.RTTms}
	}
	// One "district" serves both languages unless district_en is given.
	districtEN := b.DistrictEN
	if districtEN == "" {
		districtEN = b.District
	}
	return providers.DatacenterInput{NameZH: b.Name, NameEN: b.NameEN, City: b.City, DistrictZH: b.District, DistrictEN: districtEN,
		Tier: b.Tier, UplinkGbps: b.UplinkGbps, Latencies: lats, Storage: b.Storage}
}

// APIProviderDatacenter is a datacentre in the provider API.
type APIProviderDatacenter struct {
	ID         int64             `json:"id"`
	Slug       string            `json:"slug"`
	ProviderID int64             `json:"provider_id"`
	Name       string            `json:"name"`
	NameEN     string            `json:"name_en"`
	City       string            `json:"city"`
	District   string            `json:"district"`
	DistrictEN string            `json:"district_en"`
	Region     string            `json:"region"`
	Tier       string            `json:"tier"`
	UplinkGbps int               `json:"uplink_gbps"`
	Storage    string            `json:"storage"`
	Nodes      *int              `json:"nodes,omitempty"`
	Latencies  []apiLatencyShown `json:"latencies,omitempty"`
}

type apiLatencyShown struct {
	FromCity string  `json:"from_city"`
	RTTms    float64 `json:"rtt_ms"`
	Source   string  `json:"source"`
}

func apiDatacenter(d models.Datacenter) APIProviderDatacenter {
	out := APIProviderDatacenter{ID: d.ID, Slug: d.Slug, Name: d.NameZH, NameEN: d.NameEN, City: d.City, District: d.DistrictZH,
		DistrictEN: d.DistrictEN, Region: d.Region, Tier: d.Tier, UplinkGbps: d.UplinkGbps, Storage: string(d.Storage)}
	if d.ProviderID != nil {
		out.ProviderID = *d.ProviderID
	}
	return out
}

// APIProviderDatacenterCreate is POST /api/v1/provider/datacenters.
func (h *Handler) APIProviderDatacenterCreate(c echo.Context) error {
	var in datacenterBody
	if err := handlers.JSONDecoder(c).Decode(&in); err != nil {
		return badBody(err, `{"provider_id"?:N,"name":"…","name_en"?:"…","city":"chengdu","district"?:"…","tier"?:"Tier III","uplink_gbps"?:N,"storage"?:"local"|"shared"}`)
	}
	pid, err := h.callerProvider(c, in.ProviderID, nil)
	if err != nil {
		return err
	}
	dc, err := h.Providers.CreateDatacenter(c.Request().Context(), handlers.CurrentUser(c), pid, in.input())
	if err != nil {
		return err
	}
	c.Response().Header().Set("Location", "/api/v1/provider/datacenters/"+strconv.FormatInt(dc.ID, 10))
	return c.JSON(http.StatusCreated, apiDatacenter(*dc))
}

// APIProviderDatacentersList is GET /api/v1/provider/datacenters.
func (h *Handler) APIProviderDatacentersList(c echo.Context) error {
	pid, err := h.queryProvider(c)
	if err != nil {
		return err
	}
	pg, err := handlers.PageParams(c)
	if err != nil {
		return err
	}
	all, err := h.Providers.Datacenters(c.Request().Context(), handlers.CurrentUser(c), pid)
	if err != nil {
		return err
	}
	// A provider has few datacentres: the page is cut from all of them.
	if err := pg.Within(int64(len(all))); err != nil {
		return err
	}
	lo, hi := pg.Slice(len(all))
	dcs := all[lo:hi]
	out := make([]APIProviderDatacenter, len(dcs))
	for i, d := range dcs {
		out[i] = apiDatacenter(d.Datacenter)
		n := d.Nodes
		out[i].Nodes = &n
		for _, l := range d.Latencies {
			out[i].Latencies = append(out[i].Latencies, apiLatencyShown{FromCity: l.FromCity, RTTms: l.RTTms, Source: l.Source})
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"provider_id": pid, "datacenters": out, "total": len(all), "page": pg.Page, "per_page": pg.PerPage})
}

// APIProviderGPU is one GPU of a node as its agent last reported it.
type APIProviderGPU struct {
	Index     int             `json:"index"`
	UUID      string          `json:"uuid"`
	Name      string          `json:"name"`
	Model     string          `json:"model"`
	State     string          `json:"state"`
	Health    string          `json:"health"`
	Reasons   []string        `json:"reasons"`
	MemoryMiB int64           `json:"memory_mib"`
	PCIBusID  string          `json:"pci_bus_id"`
	Telemetry json.RawMessage `json:"telemetry,omitempty"`
	CheckedAt *time.Time      `json:"checked_at"`
}

// APIProviderNode is a node in the provider API.
type APIProviderNode struct {
	ID              int64      `json:"id"`
	Name            string     `json:"name"`
	DatacenterID    int64      `json:"datacenter_id"`
	Status          string     `json:"status"`
	Health          string     `json:"health"`
	Simulated       bool       `json:"simulated"`
	GPUModel        *string    `json:"gpu_model"`
	LastHeartbeatAt *time.Time `json:"last_heartbeat_at"`
	CreatedAt       time.Time  `json:"created_at"`
	Registered      bool       `json:"registered"`
	GPUCount        int        `json:"gpu_count"`
	Free            *int       `json:"free,omitempty"`
	Rented          *int       `json:"rented,omitempty"`
	Unhealthy       *int       `json:"unhealthy,omitempty"`
	LiveRentals     *int       `json:"live_rentals,omitempty"`
	// Detail only.
	GPUs      []APIProviderGPU   `json:"gpus,omitempty"`
	Incidents []apiIncident      `json:"incidents,omitempty"`
	Offers    []APIProviderOffer `json:"offers,omitempty"`
	AgentInfo json.RawMessage    `json:"agent_info,omitempty"`
}

type apiIncident struct {
	ID       int64      `json:"id"`
	Kind     string     `json:"kind"`
	GPUID    int64      `json:"gpu_id,omitempty"`
	Reasons  string     `json:"reasons"`
	OpenedAt time.Time  `json:"opened_at"`
	ClosedAt *time.Time `json:"closed_at"`
}

func apiNode(n models.Node) APIProviderNode {
	out := APIProviderNode{ID: n.ID, Name: n.Name, DatacenterID: n.DatacenterID, Status: string(n.Status), Health: string(n.Health), Simulated: n.Simulated,
		LastHeartbeatAt: n.LastHeartbeatAt, CreatedAt: n.CreatedAt, Registered: n.CredHash != nil}
	if n.GPUModel != "" {
		m := n.GPUModel
		out.GPUModel = &m
	}
	return out
}

func rawJSON(s string) json.RawMessage {
	if s == "" || !json.Valid([]byte(s)) {
		return nil
	}
	return json.RawMessage(s)
}

type nodeBody struct {
	ProviderID   int64  `json:"provider_id"`
	DatacenterID int64  `json:"datacenter_id"`
	Name         string `json:"name"`
}

// APIProviderNodeCreate is POST /api/v1/provider/nodes: the node, its
// one-time registration token and the commands that start its agent.
func (h *Handler) APIProviderNodeCreate(c echo.Context) error {
	var in nodeBody
	if err := handlers.JSONDecoder(c).Decode(&in); err != nil {
		return badBody(err, `{"datacenter_id":N,"name":"gpu-host-1"}`)
	}
	ctx := c.Request().Context()
	pid, err := h.callerProvider(c, in.ProviderID, func() (int64, error) { return h.Providers.ProviderOfDatacenter(ctx, in.DatacenterID) })
	if err != nil {
		return err
	}
	n, tok, err := h.Providers.AddNode(ctx, handlers.CurrentUser(c), pid, providers.NodeInput{DatacenterID: in.DatacenterID, Name: in.Name})
	if err != nil {
		return err
	}
	ic := h.Providers.InstallCommands(n, tok)
	c.Response().Header().Set("Location", "/api/v1/provider/nodes/"+strconv.FormatInt(n.ID, 10))
	return c.JSON(http.StatusCreated, map[string]any{
		"id": n.ID, "name": n.Name, "datacenter_id": n.DatacenterID, "status": n.Status, "token": tok,
		"install": map[string]string{"shell": ic.Shell, "systemd": ic.Systemd, "docker": ic.Docker},
	})
}

// APIProviderNodesList is GET /api/v1/provider/nodes.
func (h *Handler) APIProviderNodesList(c echo.Context) error {
	pid, err := h.queryProvider(c)
	if err != nil {
		return err
	}
	pg, err := handlers.PageParams(c)
	if err != nil {
		return err
	}
	all, err := h.Providers.Nodes(c.Request().Context(), handlers.CurrentUser(c), pid)
	if err != nil {
		return err
	}
	if err := pg.Within(int64(len(all))); err != nil {
		return err
	}
	lo, hi := pg.Slice(len(all))
	nodes := all[lo:hi]
	out := make([]APIProviderNode, len(nodes))
	for i, s := range nodes {
		out[i] = apiNode(s.Node)
		out[i].GPUCount = s.GPUs
		free, rented, unhealthy, live := s.Free, s.Rented, s.Unhealthy, s.LiveRentals
		out[i].Free, out[i].Rented, out[i].Unhealthy, out[i].LiveRentals = &free, &rented, &unhealthy, &live
	}
	return c.JSON(http.StatusOK, map[string]any{"provider_id": pid, "nodes": out, "total": len(all), "page": pg.Page, "per_page": pg.PerPage})
}

// APIProviderNodeShow is GET /api/v1/provider/nodes/{id}: live status,
// GPUs with their NVML verdicts, incidents and offers.
func (h *Handler) APIProviderNodeShow(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "node")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	pid, err := h.Providers.ProviderOfNode(ctx, id)
	if err != nil {
		return err
	}
	d, err := h.Providers.Node(ctx, handlers.CurrentUser(c), pid, id)
	if err != nil {
		return err
	}
	out := apiNode(d.Node)
	out.AgentInfo = rawJSON(d.Node.AgentInfo)
	out.GPUCount = len(d.GPUs)
	out.GPUs = make([]APIProviderGPU, len(d.GPUs))
	for i, g := range d.GPUs {
		reasons := []string{}
		for _, r := range strings.Split(g.Reasons, "\n") {
			if r = strings.TrimSpace(r); r != "" {
				reasons = append(reasons, r)
			}
		}
		out.GPUs[i] = APIProviderGPU{Index: g.Idx, UUID: g.UUID, Name: g.Name, Model: g.GPUModel, State: string(g.State), Health: string(g.Health),
			Reasons: reasons, MemoryMiB: g.MemoryMiB, PCIBusID: g.PCIBusID, Telemetry: rawJSON(g.Telemetry), CheckedAt: g.CheckedAt}
	}
	for _, inc := range d.Incidents {
		out.Incidents = append(out.Incidents, apiIncident{ID: inc.ID, Kind: inc.Kind, GPUID: inc.GPUID, Reasons: inc.Reasons, OpenedAt: inc.OpenedAt, ClosedAt: inc.ClosedAt})
	}
	for _, o := range d.Offers {
		out.Offers = append(out.Offers, apiProviderOffer(o))
	}
	live := 0
	for _, r := range d.Rentals {
		for _, s := range models.LiveRentalStatuses {
			if r.Status == s {
				live++
			}
		}
	}
	out.LiveRentals = &live
	return c.JSON(http.StatusOK, out)
}

// APIProviderOffer is an offer in the provider API. Listed says whether
// the public list shows it; ListingNote why not, when it is listed but
// does not show.
type APIProviderOffer struct {
	ID                    int64     `json:"id"`
	ProviderID            int64     `json:"provider_id"`
	NodeID                int64     `json:"node_id"`
	DatacenterID          int64     `json:"datacenter_id"`
	GPU                   string    `json:"gpu"`
	GPUs                  int       `json:"gpus"`
	VCPUPerGPU            int       `json:"vcpu_per_gpu"`
	RAMGBPerGPU           int       `json:"ram_gb_per_gpu"`
	DiskGB                int       `json:"disk_gb"`
	Interconnect          string    `json:"interconnect"`
	PricePerGPUHourFen    int64     `json:"price_per_gpu_hour_fen"`
	WeeklyPricePerGPUFen  *int64    `json:"weekly_price_per_gpu_fen"`
	MonthlyPricePerGPUFen *int64    `json:"monthly_price_per_gpu_fen"`
	OffpeakDiscountPct    int       `json:"offpeak_discount_pct"`
	StudentDiscountPct    int       `json:"student_discount_pct"`
	MinDurationS          int       `json:"min_duration_s"`
	SLATiers              []string  `json:"sla_tiers"`
	AvailableGPUs         int       `json:"available_gpus"`
	Status                string    `json:"status"`
	Listed                bool      `json:"listed"`
	AwaitingNode          bool      `json:"awaiting_node"`
	ListingNote           string    `json:"listing_note"`
	CreatedAt             time.Time `json:"created_at"`
	UpdatedAt             time.Time `json:"updated_at"`
	CustomImages          bool      `json:"custom_images"`
	// StoragePricePerGBMonthFen is the volume price per GB and month;
	// NoGPUPricePerHourFen the container's hourly price without GPUs.
	StoragePricePerGBMonthFen int64 `json:"storage_price_per_gb_month_fen"`
	NoGPUPricePerHourFen      int64 `json:"no_gpu_price_per_hour_fen"`
	// Images are the catalogue slugs the offer offers; empty: every
	// catalogue image.
	Images []string `json:"images"`
	// InterruptibleFloorPerGPUHourFen is the lowest bid per GPU-hour the
	// offer takes for interruptible rentals (竞价实例); null: none.
	InterruptibleFloorPerGPUHourFen *int64 `json:"interruptible_floor_per_gpu_hour_fen"`
}

func apiProviderOffer(o models.Offer) APIProviderOffer {
	images := append([]string{}, o.Images...)
	tiers := []string{}
	for _, t := range strings.Split(o.SLATiers, ",") {
		if t = strings.TrimSpace(t); t != "" {
			tiers = append(tiers, t)
		}
	}
	return APIProviderOffer{ID: o.ID, ProviderID: o.ProviderID, NodeID: o.NodeID, DatacenterID: o.DatacenterID, GPU: o.GPUModel, GPUs: o.MaxGPUs,
		VCPUPerGPU: o.VCPUPerGPU, RAMGBPerGPU: o.RAMGBPerGPU, DiskGB: o.DiskGB, Interconnect: o.Interconnect,
		PricePerGPUHourFen: o.PricePerGPUHourFen, WeeklyPricePerGPUFen: o.WeeklyPricePerGPUFen, MonthlyPricePerGPUFen: o.MonthlyPricePerGPUFen,
		OffpeakDiscountPct: o.OffpeakDiscountPct, StudentDiscountPct: o.StudentDiscountPct, MinDurationS: o.MinDurationS, SLATiers: tiers,
		AvailableGPUs: o.AvailableGPUs, Status: o.Status, Listed: providers.OfferPublic(&o), AwaitingNode: o.AwaitingNode, ListingNote: o.ListingNote,
		CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt, CustomImages: o.CustomImages,
		StoragePricePerGBMonthFen: o.StoragePricePerGBMonthFen, NoGPUPricePerHourFen: o.NoGPUPricePerHourFen, Images: images,
		InterruptibleFloorPerGPUHourFen: o.InterruptibleFloorPerGPUHourFen}
}

type offerBody struct {
	ProviderID            int64    `json:"provider_id"`
	NodeID                int64    `json:"node_id"`
	GPU                   string   `json:"gpu"`
	GPUs                  int      `json:"gpus"`
	VCPUPerGPU            int      `json:"vcpu_per_gpu"`
	RAMGBPerGPU           int      `json:"ram_gb_per_gpu"`
	DiskGB                int      `json:"disk_gb"`
	Interconnect          string   `json:"interconnect"`
	PricePerGPUHourFen    int64    `json:"price_per_gpu_hour_fen"`
	WeeklyPricePerGPUFen  *int64   `json:"weekly_price_per_gpu_fen"`
	MonthlyPricePerGPUFen *int64   `json:"monthly_price_per_gpu_fen"`
	OffpeakDiscountPct    int      `json:"offpeak_discount_pct"`
	StudentDiscountPct    int      `json:"student_discount_pct"`
	MinDurationS          int      `json:"min_duration_s"`
	SLATiers              []string `json:"sla_tiers"`
	Status                string   `json:"status"`
	CustomImages          bool     `json:"custom_images"`
	// Absent: the defaults (models.DefaultStoragePricePerGBMonthFen, …).
	StoragePricePerGBMonthFen *int64   `json:"storage_price_per_gb_month_fen"`
	NoGPUPricePerHourFen      *int64   `json:"no_gpu_price_per_hour_fen"`
	Images                    []string `json:"images"`
	// Absent or null: not interruptible.
	InterruptibleFloorPerGPUHourFen *int64 `json:"interruptible_floor_per_gpu_hour_fen"`
}

// APIProviderOfferCreate is POST /api/v1/provider/offers. An offer for
// another GPU model than the node's agent reports is refused with 422.
func (h *Handler) APIProviderOfferCreate(c echo.Context) error {
	var in offerBody
	if err := handlers.JSONDecoder(c).Decode(&in); err != nil {
		return badBody(err, `{"node_id":N,"gpu":"<catalogue slug>","gpus":N,"price_per_gpu_hour_fen":N,…}`)
	}
	if in.Status != "" && in.Status != models.OfferListed && in.Status != models.OfferPaused {
		return apperr.Fields{{Code: apperr.EINVALID, Field: "status", Message: `status is "listed" or "paused"`}}
	}
	ctx := c.Request().Context()
	pid, err := h.callerProvider(c, in.ProviderID, func() (int64, error) { return h.Providers.ProviderOfNode(ctx, in.NodeID) })
	if err != nil {
		return err
	}
	o, err := h.Providers.CreateOffer(ctx, handlers.CurrentUser(c), pid, providers.OfferInput{NodeID: in.NodeID, GPU: in.GPU, MaxGPUs: in.GPUs,
		VCPUPerGPU: in.VCPUPerGPU, RAMGBPerGPU: in.RAMGBPerGPU, DiskGB: in.DiskGB, Interconnect: in.Interconnect,
		PricePerGPUHourFen: in.PricePerGPUHourFen, WeeklyPricePerGPUFen: in.WeeklyPricePerGPUFen, MonthlyPricePerGPUFen: in.MonthlyPricePerGPUFen,
		OffpeakDiscountPct: in.OffpeakDiscountPct, StudentDiscountPct: in.StudentDiscountPct, MinDurationS: in.MinDurationS,
		SLATiers: in.SLATiers, Paused: in.Status == models.OfferPaused, CustomImages: in.CustomImages,
		StoragePricePerGBMonthFen: in.StoragePricePerGBMonthFen, NoGPUPricePerHourFen: in.NoGPUPricePerHourFen, Images: in.Images,
		InterruptibleFloorPerGPUHourFen: in.InterruptibleFloorPerGPUHourFen})
	if err != nil {
		return err
	}
	c.Response().Header().Set("Location", "/api/v1/provider/offers/"+strconv.FormatInt(o.ID, 10))
	return c.JSON(http.StatusCreated, apiProviderOffer(*o))
}

// APIProviderOffersList is GET /api/v1/provider/offers.
func (h *Handler) APIProviderOffersList(c echo.Context) error {
	pid, err := h.queryProvider(c)
	if err != nil {
		return err
	}
	pg, err := handlers.PageParams(c)
	if err != nil {
		return err
	}
	all, err := h.Providers.Offers(c.Request().Context(), handlers.CurrentUser(c), pid)
	if err != nil {
		return err
	}
	if err := pg.Within(int64(len(all))); err != nil {
		return err
	}
	lo, hi := pg.Slice(len(all))
	offers := all[lo:hi]
	out := make([]APIProviderOffer, len(offers))
	for i, o := range offers {
		out[i] = apiProviderOffer(o)
	}
	return c.JSON(http.StatusOK, map[string]any{"provider_id": pid, "offers": out, "total": len(all), "page": pg.Page, "per_page": pg.PerPage})
}

// APIProviderOfferShow is GET /api/v1/provider/offers/{id}.
func (h *Handler) APIProviderOfferShow(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "offer")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	pid, err := h.Providers.ProviderOfOffer(ctx, id)
	if err != nil {
		return err
	}
	o, err := h.Providers.Offer(ctx, handlers.CurrentUser(c), pid, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiProviderOffer(*o))
}

// nullableFen is a JSON field that may be absent (no change), null
// (clear) or a number of fen.
type nullableFen struct {
	Set bool
	V   *int64
}

// UnmarshalJSON implements json.Unmarshaler; it is called only for a
// field that is present, null included.
func (n *nullableFen) UnmarshalJSON(b []byte) error {
	n.Set = true
	if string(b) == "null" {
		n.V = nil
		return nil
	}
	var v int64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	n.V = &v
	return nil
}

type offerPatchBody struct {
	GPUs                      *int        `json:"gpus"`
	VCPUPerGPU                *int        `json:"vcpu_per_gpu"`
	RAMGBPerGPU               *int        `json:"ram_gb_per_gpu"`
	DiskGB                    *int        `json:"disk_gb"`
	PricePerGPUHourFen        *int64      `json:"price_per_gpu_hour_fen"`
	WeeklyPricePerGPUFen      nullableFen `json:"weekly_price_per_gpu_fen"`
	MonthlyPricePerGPUFen     nullableFen `json:"monthly_price_per_gpu_fen"`
	OffpeakDiscountPct        *int        `json:"offpeak_discount_pct"`
	StudentDiscountPct        *int        `json:"student_discount_pct"`
	MinDurationS              *int        `json:"min_duration_s"`
	SLATiers                  *[]string   `json:"sla_tiers"`
	Status                    *string     `json:"status"`
	CustomImages              *bool       `json:"custom_images"`
	StoragePricePerGBMonthFen *int64      `json:"storage_price_per_gb_month_fen"`
	NoGPUPricePerHourFen      *int64      `json:"no_gpu_price_per_hour_fen"`
	Images                    *[]string   `json:"images"`
	// Absent: unchanged; null: not interruptible any more.
	InterruptibleFloorPerGPUHourFen nullableFen `json:"interruptible_floor_per_gpu_hour_fen"`
}

// APIProviderOfferUpdate is PATCH /api/v1/provider/offers/{id}: a partial
// update; {"status":"paused"} pauses the offer, {"status":"listed"} lists it.
func (h *Handler) APIProviderOfferUpdate(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "offer")
	if err != nil {
		return err
	}
	var in offerPatchBody
	if err := handlers.JSONDecoder(c).Decode(&in); err != nil {
		return badBody(err, `{"price_per_gpu_hour_fen"?:N,"gpus"?:N,"status"?:"listed"|"paused",…}`)
	}
	ctx := c.Request().Context()
	pid, err := h.Providers.ProviderOfOffer(ctx, id)
	if err != nil {
		return err
	}
	patch := providers.OfferPatch{MaxGPUs: in.GPUs, VCPUPerGPU: in.VCPUPerGPU, RAMGBPerGPU: in.RAMGBPerGPU, DiskGB: in.DiskGB,
		PricePerGPUHourFen: in.PricePerGPUHourFen, OffpeakDiscountPct: in.OffpeakDiscountPct, StudentDiscountPct: in.StudentDiscountPct,
		MinDurationS: in.MinDurationS, SLATiers: in.SLATiers, Status: in.Status, CustomImages: in.CustomImages,
		StoragePricePerGBMonthFen: in.StoragePricePerGBMonthFen, NoGPUPricePerHourFen: in.NoGPUPricePerHourFen, Images: in.Images}
	if in.WeeklyPricePerGPUFen.Set {
		patch.WeeklyPricePerGPUFen = &in.WeeklyPricePerGPUFen.V
	}
	if in.MonthlyPricePerGPUFen.Set {
		patch.MonthlyPricePerGPUFen = &in.MonthlyPricePerGPUFen.V
	}
	if in.InterruptibleFloorPerGPUHourFen.Set {
		patch.InterruptibleFloorPerGPUHourFen = &in.InterruptibleFloorPerGPUHourFen.V
	}
	o, err := h.Providers.UpdateOffer(ctx, handlers.CurrentUser(c), pid, id, patch)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiProviderOffer(*o))
}
