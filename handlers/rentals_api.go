package handlers

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/agent"
	"suanli/apperr"
	"suanli/gpu"
	"suanli/images"
	"suanli/models"
	"suanli/pricing"
	"suanli/rentals"
	"suanli/volumes"
)

// APIRental is a rental in the JSON API.
type APIRental struct {
	ID                 int64          `json:"id"`
	Status             string         `json:"status"`
	OrgID              int64          `json:"org_id"`
	OfferID            int64          `json:"offer_id"`
	GPUModel           string         `json:"gpu_model"`
	GPUs               int            `json:"gpus"`
	GPUUUIDs           []string       `json:"gpu_uuids"`
	Node               *APIRentalNode `json:"node"`
	SLA                string         `json:"sla"`
	Term               string         `json:"term"`
	AutoRenew          bool           `json:"auto_renew"`
	PricePerGPUHourFen int64          `json:"price_per_gpu_hour_fen"`
	StudentDiscountPct int            `json:"student_discount_pct"`
	OffpeakDiscountPct int            `json:"offpeak_discount_pct"`
	SLASurchargePct    int            `json:"sla_surcharge_pct"`
	TermPriceFen       *int64         `json:"term_price_fen"`
	Access             *APIAccess     `json:"access"`
	Image              string         `json:"image"`
	// RegistryAuth: the custom image's registry username, never the password.
	RegistryAuth *images.RegistryAuthShown `json:"registry_auth"`
	Volume       *APIVolume                `json:"volume"`
	// NoGPU: it runs (or last ran) in no-GPU mode, billed
	// NoGPUPricePerHourFen an hour instead of its GPU price.
	NoGPU                bool  `json:"no_gpu"`
	NoGPUPricePerHourFen int64 `json:"no_gpu_price_per_hour_fen"`
	// FilesLeft is the local volume it left on another node when it moved
	// without its files (nil when none).
	FilesLeft *APIFilesLeft `json:"files_left"`
	// Startable: a stopped rental that POST …/start would start again.
	Startable  bool       `json:"startable"`
	ReleasedAt *time.Time `json:"released_at"`
	Checks     *APIChecks `json:"checks"`
	// CostFen is the cost so far (posted plus accrued since the last meter pass).
	CostFen        int64  `json:"cost_so_far_fen"`
	BilledFen      int64  `json:"billed_fen"`
	RateFenPerHour int64  `json:"rate_fen_per_hour"`
	Free           bool   `json:"free"`
	DowntimeSecs   int64  `json:"downtime_seconds"`
	Failure        string `json:"failure,omitempty"`
	StopReason     string `json:"stop_reason,omitempty"`
	Simulated      bool   `json:"simulated"`
	// IdleStop is the rental's own idle-stop setting, IdleStopLabPolicy
	// its lab's policy, IdleStopEffective what the watch applies (the
	// stricter of the two); nil when off or none.
	IdleStop          *APIIdleStop `json:"idle_stop"`
	IdleStopLabPolicy *APIIdleStop `json:"idle_stop_lab_policy"`
	IdleStopEffective *APIIdleStop `json:"idle_stop_effective"`
	Events            []APIEvent   `json:"events"`
	CreatedAt         time.Time    `json:"created_at"`
	RunningSince      *time.Time   `json:"running_since"`
	EndsAt            *time.Time   `json:"ends_at"`
	StoppedAt         *time.Time   `json:"stopped_at"`
	Currency          string       `json:"currency"`
}

// APIAccess is how the renter reaches a rental's container: the flat
// fields as before, and the same SSH details under ssh.
type APIAccess struct {
	agent.Access
	SSH APISSH `json:"ssh"`
}

// APISSH is a rental's SSH endpoint.
type APISSH struct {
	Host    string `json:"host"`
	Port    int    `json:"port"`
	User    string `json:"user"`
	Command string `json:"command"`
}

// APIVolume is a volume in the JSON API.
type APIVolume struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	SizeGB  int    `json:"size_gb"`
	Storage string `json:"storage"`
	// NodeID is the node that holds its files (local storage), or the
	// node it was last mounted on (shared).
	NodeID             *int64     `json:"node_id"`
	DatacenterID       int64      `json:"datacenter_id"`
	OfferID            int64      `json:"offer_id"`
	Status             string     `json:"status"`
	PricePerGBMonthFen int64      `json:"price_per_gb_month_fen"`
	FenPerDay          int64      `json:"fen_per_day"`
	BilledFen          int64      `json:"billed_fen"`
	RentalID           *int64     `json:"rental_id"`
	DeleteAfter        *time.Time `json:"delete_after"`
	CreatedAt          time.Time  `json:"created_at"`
}

// APIVolumeOf maps a volume (attached to rentalID, 0 for none) to the
// API; nil for none.
func APIVolumeOf(v *models.Volume, rentalID int64) *APIVolume {
	if v == nil {
		return nil
	}
	out := &APIVolume{ID: v.ID, Name: v.Name, SizeGB: v.SizeGB, Storage: string(v.Storage), NodeID: v.NodeID, DatacenterID: v.DatacenterID,
		OfferID: v.OfferID, Status: string(v.Status), PricePerGBMonthFen: v.PricePerGBMonthFen, FenPerDay: volumes.FenPerDay(v),
		BilledFen: v.BilledFen, DeleteAfter: v.DeleteAfter, CreatedAt: v.CreatedAt}
	if rentalID != 0 {
		out.RentalID = &rentalID
	}
	return out
}

// APIFilesLeft is where a rental's earlier files are (local storage):
// POST …/start with volume_id starts it there once NodeBack.
type APIFilesLeft struct {
	VolumeID int64  `json:"volume_id"`
	NodeID   *int64 `json:"node_id"`
	NodeBack bool   `json:"node_back"`
}

// APIRentalNode is the node a rental runs on.
type APIRentalNode struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	Health    string `json:"health"`
	Simulated bool   `json:"simulated"`
}

// APIChecks are the NVML checks that passed before the GPUs were handed over.
type APIChecks struct {
	NodeID int64                  `json:"node_id"`
	At     time.Time              `json:"at"`
	Passed int                    `json:"passed"`
	Total  int                    `json:"total"`
	GPUs   map[string]gpu.Verdict `json:"gpus"`
}

// APIEvent is one line of a rental's timeline.
type APIEvent struct {
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"`
	Detail string    `json:"detail,omitempty"`
}

func apiRental(d *rentals.RentalDetail) APIRental {
	r := d.Rental
	out := APIRental{ID: r.ID, Status: d.PublicStatus(), Image: r.Image, RegistryAuth: d.RegistryAuth(), Startable: d.Startable(), NoGPU: r.NoGPU, NoGPUPricePerHourFen: r.NoGPUPricePerHourFen, ReleasedAt: r.ReleasedAt, OrgID: r.OrgID, OfferID: r.OfferID, GPUModel: d.Offer.Offer.GPUModel, GPUs: r.GPUs,
		GPUUUIDs: []string{}, SLA: r.SLA, Term: string(r.Term), AutoRenew: r.AutoRenew, PricePerGPUHourFen: r.PricePerGPUHourFen,
		StudentDiscountPct: r.StudentPct, OffpeakDiscountPct: r.OffpeakPct, SLASurchargePct: r.SLASurchargePct, TermPriceFen: r.TermPriceFen,
		CostFen: d.CostFen, BilledFen: r.BilledFen, RateFenPerHour: d.RateFenPerHour, Free: r.Free,
		DowntimeSecs: r.DowntimeSecs, Failure: r.Failure, StopReason: r.StopReason, Simulated: d.Simulated(), Events: []APIEvent{},
		CreatedAt: r.CreatedAt, RunningSince: r.RunningSince, EndsAt: r.EndsAt, StoppedAt: r.StoppedAt, Currency: "cny"}
	for _, g := range d.GPUs {
		out.GPUUUIDs = append(out.GPUUUIDs, g.UUID)
	}
	if a := d.Access; a != nil && r.Status == models.RentalRunning {
		out.Access = &APIAccess{Access: *a, SSH: APISSH{Host: a.Host, Port: a.Port, User: a.User, Command: a.Command}}
	}
	if lv := d.LeftVolume; lv != nil {
		out.FilesLeft = &APIFilesLeft{VolumeID: lv.ID, NodeID: lv.NodeID, NodeBack: d.LeftNodeUp}
	}
	if d.Volume != nil {
		out.Volume = APIVolumeOf(d.Volume, r.ID)
	}
	if d.Node != nil {
		out.Node = &APIRentalNode{ID: d.Node.ID, Name: d.Node.Name, Health: string(d.Node.Health), Simulated: d.Node.Simulated}
	}
	if d.Checks != nil {
		p, t := d.Checks.Passed()
		out.Checks = &APIChecks{NodeID: d.Checks.NodeID, At: d.Checks.At, Passed: p, Total: t, GPUs: d.Checks.Verdicts}
	}
	for _, e := range d.Events {
		out.Events = append(out.Events, APIEvent{At: e.At, Kind: e.Kind, Detail: e.Detail})
	}
	return out
}

// rentInput reads what both the API and the page send to rent.
type rentBody struct {
	OfferID      int64  `json:"offer_id"`
	GPUs         int    `json:"gpus"`
	SLA          string `json:"sla"`
	Term         string `json:"term"`
	SSHPublicKey string `json:"ssh_public_key"`
	OrgID        int64  `json:"org_id"`
	AutoRenew    bool   `json:"auto_renew"`
	Image        string `json:"image"`
	VolumeGB     int    `json:"volume_gb"`
	VolumeID     int64  `json:"volume_id"`
	// RegistryAuth: {"username":…,"password":…} for a custom image.
	RegistryAuth *images.RegistryAuth `json:"registry_auth"`
	// IdleStop: {"gpu_util_below_pct":N,"minutes":M}, or null (off).
	IdleStop json.RawMessage `json:"idle_stop"`
	// idle is IdleStop as read (bindIdleStop), or from the form.
	idle models.IdleStop
}

// rent authorises the renter for the organisation and rents.
func (h *Handler) rent(c echo.Context, in rentBody) (*models.Rental, error) {
	orgParam := ""
	if in.OrgID != 0 {
		orgParam = strconv.FormatInt(in.OrgID, 10)
	}
	org, err := h.APIOrg(c, accounts.Rent, orgParam)
	if err != nil {
		return nil, err
	}
	u := CurrentUser(c)
	m, err := h.DB.MembershipOf(c.Request().Context(), org.ID, u.ID)
	if err != nil {
		return nil, err
	}
	return h.IdleStop().Rent(c.Request().Context(), u, org, m, rentals.RentInput{OrgID: org.ID, OfferID: in.OfferID, GPUs: in.GPUs,
		SLA: in.SLA, Term: pricing.Term(in.Term), SSHPublicKey: in.SSHPublicKey, AutoRenew: in.AutoRenew,
		Image: in.Image, VolumeGB: in.VolumeGB, VolumeID: in.VolumeID, RegistryAuth: in.RegistryAuth, IdleStop: in.idle})
}

// APIRentalCreate is POST /api/v1/rentals.
func (h *Handler) APIRentalCreate(c echo.Context) error {
	var in rentBody
	if err := JSONDecoder(c).Decode(&in); err != nil {
		return &apperr.Error{Code: apperr.EINVALID, Field: "body",
			Message: `want JSON {"offer_id":N,"gpus":N,"sla":"standard"|"premium","term":"on_demand"|"week"|"month","ssh_public_key":"ssh-ed25519 …"}`}
	}
	if in.OfferID <= 0 {
		return &apperr.Error{Code: apperr.EINVALID, Field: "offer_id", Message: "offer_id is required"}
	}
	var err error
	if in.idle, err = bindIdleStop(in.IdleStop); err != nil {
		return err
	}
	r, err := h.rent(c, in)
	if err != nil {
		return err
	}
	d, err := h.Rentals.Detail(c.Request().Context(), r.ID)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Location", "/api/v1/rentals/"+strconv.FormatInt(r.ID, 10))
	return h.rentalJSON(c, http.StatusCreated, d)
}

// RentalFor is rentalFor, for the handlers' area packages.
func (h *Handler) RentalFor(c echo.Context) (*rentals.RentalDetail, *models.Membership, error) {
	return h.rentalFor(c)
}

// rentalFor loads a rental the caller may see: a member of its
// organisation (or a platform admin). Others get 404, as for a rental
// that does not exist.
func (h *Handler) rentalFor(c echo.Context) (*rentals.RentalDetail, *models.Membership, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return nil, nil, apperr.NotFound("rental")
	}
	ctx := c.Request().Context()
	d, err := h.Rentals.Detail(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	_, m, err := h.Accounts.Authorize(ctx, CurrentUser(c), d.Rental.OrgID, accounts.ViewRentals)
	if err != nil {
		if apperr.Code(err) == apperr.ENOTFOUND {
			return nil, nil, apperr.NotFound("rental")
		}
		return nil, nil, err
	}
	return d, m, nil
}

// APIRentalShow is GET /api/v1/rentals/{id}.
func (h *Handler) APIRentalShow(c echo.Context) error {
	d, _, err := h.rentalFor(c)
	if err != nil {
		return err
	}
	return h.rentalJSON(c, http.StatusOK, d)
}

// stopRental stops a rental the caller may stop.
func (h *Handler) stopRental(c echo.Context) (*rentals.RentalDetail, error) {
	d, _, err := h.ownRental(c, "stop")
	if err != nil {
		return nil, err
	}
	if _, err := h.Rentals.Stop(c.Request().Context(), d.Rental.ID, rentals.StopByUser); err != nil {
		return nil, err
	}
	return h.Rentals.Detail(c.Request().Context(), d.Rental.ID)
}

// APIRentalStop is POST /api/v1/rentals/{id}/stop.
func (h *Handler) APIRentalStop(c echo.Context) error {
	d, err := h.stopRental(c)
	if err != nil {
		return err
	}
	return h.rentalJSON(c, http.StatusOK, d)
}

// APIRentalsList is GET /api/v1/rentals (?org_id=, page, per_page): live
// rentals first, then the rest, newest first.
func (h *Handler) APIRentalsList(c echo.Context) error {
	org, err := h.APIOrg(c, accounts.ViewRentals, c.QueryParam("org_id"))
	if err != nil {
		return err
	}
	pg, err := PageParams(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	rs, total, err := h.DB.RentalsPage(ctx, org.ID, pg.Offset(), pg.PerPage)
	if err != nil {
		return err
	}
	if err := pg.Within(total); err != nil {
		return err
	}
	out := []APIRental{}
	for _, r := range rs {
		d, err := h.Rentals.Detail(ctx, r.ID)
		if err != nil {
			return err
		}
		out = append(out, apiRentalIdle(apiRental(d), d, org))
	}
	return c.JSON(http.StatusOK, map[string]any{"org_id": org.ID, "rentals": out, "total": total, "page": pg.Page, "per_page": pg.PerPage})
}

// APIChangeQuote is the preview of a switch or resize.
type APIChangeQuote struct {
	FromOfferID    int64  `json:"from_offer_id"`
	ToOfferID      int64  `json:"to_offer_id"`
	FromGPUModel   string `json:"from_gpu_model"`
	ToGPUModel     string `json:"to_gpu_model"`
	FromGPUs       int    `json:"from_gpus"`
	ToGPUs         int    `json:"to_gpus"`
	FromFenPerHour int64  `json:"from_fen_per_hour"`
	ToFenPerHour   int64  `json:"to_fen_per_hour"`
	SameNode       bool   `json:"same_node"`
	Currency       string `json:"currency"`
}

// changeRental previews (confirm false) or applies a switch or resize for
// a caller who may change the rental: its renter or an organisation admin.
func (h *Handler) changeRental(c echo.Context, in rentals.ChangeInput, confirm bool) (*rentals.ChangeQuote, *rentals.RentalDetail, error) {
	d, m, err := h.rentalFor(c)
	if err != nil {
		return nil, nil, err
	}
	u := CurrentUser(c)
	if !rentals.CanStop(&d.Rental, u, m) {
		return nil, nil, apperr.Errorf(apperr.EFORBIDDEN, "only the renter or an admin of the organisation may change this rental")
	}
	ctx := c.Request().Context()
	org, _, err := h.Accounts.Authorize(ctx, u, d.Rental.OrgID, accounts.Rent)
	if err != nil {
		return nil, nil, err
	}
	q, err := h.Rentals.QuoteChange(ctx, &d.Rental, org, m, in)
	if err != nil || !confirm {
		return &q, d, err
	}
	if _, err := h.Rentals.Change(ctx, u, org, m, d.Rental.ID, in); err != nil {
		return &q, d, err
	}
	d, err = h.Rentals.Detail(ctx, d.Rental.ID)
	return &q, d, err
}

// APIRentalChange is POST /api/v1/rentals/{id}/change
// {"offer_id":N,"gpus":N,"confirm":bool}: without confirm it only quotes.
func (h *Handler) APIRentalChange(c echo.Context) error {
	var in struct {
		OfferID int64 `json:"offer_id"`
		GPUs    int   `json:"gpus"`
		Confirm bool  `json:"confirm"`
	}
	if err := JSONDecoder(c).Decode(&in); err != nil {
		return &apperr.Error{Code: apperr.EINVALID, Field: "body", Message: `want JSON {"offer_id":N,"gpus":N,"confirm":true|false}`}
	}
	q, d, err := h.changeRental(c, rentals.ChangeInput{OfferID: in.OfferID, GPUs: in.GPUs}, in.Confirm)
	if err != nil {
		return err
	}
	out := map[string]any{"quote": APIChangeQuote{FromOfferID: q.FromOfferID, ToOfferID: q.ToOfferID, FromGPUModel: q.FromModel, ToGPUModel: q.ToModel,
		FromGPUs: q.FromGPUs, ToGPUs: q.ToGPUs, FromFenPerHour: q.FromFenPerHour, ToFenPerHour: q.ToFenPerHour, SameNode: q.SameNode, Currency: "cny"},
		"confirmed": in.Confirm}
	if in.Confirm {
		org, err := h.DB.OrgByID(c.Request().Context(), d.Rental.OrgID)
		if err != nil {
			return err
		}
		out["rental"] = apiRentalIdle(apiRental(d), d, org)
	}
	return c.JSON(http.StatusOK, out)
}
