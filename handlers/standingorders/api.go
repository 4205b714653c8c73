// Package standingorders holds the handlers of standing orders
// (「有卡就租」): the JSON API (list, place, cancel), the page that lists
// them with the form that places one, and the console's notices.
package standingorders

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/handlers"
	"suanli/locales"
	"suanli/models/orderstore"
	"suanli/standingorders"
)

// Handler serves the standing order endpoints.
type Handler struct {
	*handlers.Handler
	once sync.Once
	svc  *standingorders.Service
}

// orders is the use case on the handler's services, made once (it keeps
// the open orders in memory between passes).
func (h *Handler) orders() *standingorders.Service {
	h.once.Do(func() {
		h.svc = &standingorders.Service{DB: h.DB, Rentals: h.Rentals, Accounts: h.Accounts}
	})
	return h.svc
}

// Filters is an order's filters in the API.
type Filters struct {
	// GPU is a catalogue slug.
	GPU string `json:"gpu"`
	// City is a datacentre's city slug; null: any.
	City *string `json:"city"`
	// From and MaxLatencyMS bound the published latency from a city; null: none.
	From         *string `json:"from"`
	MaxLatencyMS *int    `json:"max_latency_ms"`
	// MaxPriceFen is an on-demand order's highest price per GPU-hour.
	MaxPriceFen *int64 `json:"max_price_fen"`
	// Interruptible orders rent at BidPerGPUHourFen.
	Interruptible    bool   `json:"interruptible"`
	BidPerGPUHourFen *int64 `json:"bid_per_gpu_hour_fen"`
}

// Failure is why an order's rent was refused.
type Failure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Order is a standing order in the API.
type Order struct {
	ID      int64   `json:"id"`
	OrgID   int64   `json:"org_id"`
	Filters Filters `json:"filters"`
	GPUs    int     `json:"gpus"`
	Action  string  `json:"action"`
	// StudentPrices: max_price_fen is compared with student prices.
	StudentPrices bool `json:"student_prices"`
	// SLA, Image, VolumeID and VolumeGB are what a rent order rents with
	// (null for a notify order; image "" is each offer's default;
	// volume_gb null with a volume_id, 0 the default size).
	SLA       *string    `json:"sla"`
	Image     *string    `json:"image"`
	VolumeID  *int64     `json:"volume_id"`
	VolumeGB  *int       `json:"volume_gb"`
	ExpiresAt time.Time  `json:"expires_at"`
	Status    string     `json:"status"`
	RentalID  *int64     `json:"rental_id"`
	OfferID   *int64     `json:"offer_id"`
	Failure   *Failure   `json:"failure"`
	CreatedAt time.Time  `json:"created_at"`
	EndedAt   *time.Time `json:"ended_at"`
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// orderJSON is o as the API shows it.
func orderJSON(o *orderstore.Order) Order {
	out := Order{ID: o.ID, OrgID: o.OrgID, GPUs: o.GPUs, Action: o.Action, StudentPrices: o.Student && o.MaxPriceFen != nil,
		Filters: Filters{GPU: o.GPUModel, City: optString(o.City), From: optString(o.FromCity), MaxPriceFen: o.MaxPriceFen,
			Interruptible: o.Interruptible(), BidPerGPUHourFen: o.BidPerGPUHourFen},
		ExpiresAt: o.ExpiresAt.UTC(), Status: string(o.Status), RentalID: o.RentalID, OfferID: o.OfferID, CreatedAt: o.CreatedAt.UTC()}
	if o.MaxLatencyMS > 0 {
		out.Filters.MaxLatencyMS = &o.MaxLatencyMS
	}
	if o.Action == orderstore.ActionRent {
		out.SLA, out.Image, out.VolumeID = &o.SLA, &o.Image, o.VolumeID
		if o.VolumeID == nil {
			out.VolumeGB = &o.VolumeGB
		}
	}
	if o.Status == orderstore.Failed {
		out.Failure = &Failure{Code: o.FailureCode, Message: o.FailureMsg.Or(locales.EN, o.Failure)}
	}
	if o.EndedAt != nil {
		t := o.EndedAt.UTC()
		out.EndedAt = &t
	}
	return out
}

// APIList is GET /api/v1/standing-orders (?org_id=, status=, page,
// per_page): the organisation's orders, open first, then newest first.
func (h *Handler) APIList(c echo.Context) error {
	org, err := h.APIOrg(c, accounts.ViewRentals, c.QueryParam("org_id"))
	if err != nil {
		return err
	}
	status := orderstore.Status(c.QueryParam("status"))
	if status != "" && !isStatus(status) {
		return &apperr.Error{Code: apperr.EINVALID, Field: "status", Message: "status must be open, filled, expired or failed"}
	}
	pg, err := handlers.PageParams(c)
	if err != nil {
		return err
	}
	os, total, err := h.orders().List(c.Request().Context(), []int64{org.ID}, status, pg.Offset(), pg.PerPage)
	if err != nil {
		return err
	}
	if err := pg.Within(total); err != nil {
		return err
	}
	out := []Order{}
	for i := range os {
		out = append(out, orderJSON(&os[i]))
	}
	return c.JSON(http.StatusOK, map[string]any{"org_id": org.ID, "standing_orders": out, "total": total, "page": pg.Page, "per_page": pg.PerPage})
}

func isStatus(s orderstore.Status) bool {
	for _, x := range orderstore.Statuses {
		if s == x {
			return true
		}
	}
	return false
}

// filtersBody is the filters of POST /api/v1/standing-orders.
type filtersBody struct {
	GPU              string `json:"gpu"`
	City             string `json:"city"`
	From             string `json:"from"`
	MaxLatencyMS     int    `json:"max_latency_ms"`
	MaxPriceFen      int64  `json:"max_price_fen"`
	Interruptible    bool   `json:"interruptible"`
	BidPerGPUHourFen int64  `json:"bid_per_gpu_hour_fen"`
}

// body is POST /api/v1/standing-orders.
type body struct {
	OrgID        int64       `json:"org_id"`
	Filters      filtersBody `json:"filters"`
	GPUs         int         `json:"gpus"`
	Action       string      `json:"action"`
	SLA          string      `json:"sla"`
	Image        string      `json:"image"`
	VolumeID     int64       `json:"volume_id"`
	VolumeGB     int         `json:"volume_gb"`
	SSHPublicKey string      `json:"ssh_public_key"`
	ExpiresAt    string      `json:"expires_at"`
}

// APICreate is POST /api/v1/standing-orders: the order is stored and
// matched at once; the answer (201) shows what it came to (open, or
// filled with its rental, or failed with why). Bad input is 422 with
// every problem, and stores nothing.
func (h *Handler) APICreate(c echo.Context) error {
	var in body
	if err := handlers.JSONDecoder(c).Decode(&in); err != nil {
		var te *json.UnmarshalTypeError
		if e := apperr.WrongJSONType(err); e != nil && errors.As(err, &te) {
			// Named by its whole path ("filters.gpus"), among the
			// problems of a 422 as the other fields' are.
			e.Field = te.Field
			return apperr.Fields{e}
		}
		return &apperr.Error{Code: apperr.EINVALID, Field: "body",
			Message: `want JSON {"filters":{"gpu":"h100-sxm","max_price_fen":N},"gpus":N,"action":"rent"|"notify","ssh_public_key":"ssh-ed25519 …","expires_at":"RFC 3339"}`}
	}
	orgParam := ""
	if in.OrgID != 0 {
		orgParam = strconv.FormatInt(in.OrgID, 10)
	}
	org, err := h.APIOrg(c, accounts.Rent, orgParam)
	if err != nil {
		return err
	}
	u := handlers.CurrentUser(c)
	ctx := c.Request().Context()
	m, err := h.DB.MembershipOf(ctx, org.ID, u.ID)
	if err != nil {
		return err
	}
	expires, expErr := parseExpiry(in.ExpiresAt)
	f := in.Filters
	o, err := h.orders().Place(ctx, u, org, m, standingorders.Input{OrgID: org.ID,
		Filters: standingorders.Filters{GPU: f.GPU, City: f.City, From: f.From, MaxLatencyMS: f.MaxLatencyMS, MaxPriceFen: f.MaxPriceFen,
			Interruptible: f.Interruptible, BidPerGPUHourFen: f.BidPerGPUHourFen},
		GPUs: in.GPUs, Action: in.Action, SLA: in.SLA, Image: in.Image, VolumeID: in.VolumeID, VolumeGB: in.VolumeGB,
		SSHPublicKey: in.SSHPublicKey, ExpiresAt: expires})
	if err != nil {
		return withExpiry(err, expErr)
	}
	return c.JSON(http.StatusCreated, orderJSON(o))
}

// parseExpiry reads an RFC 3339 expiry ("" is missing, which Place says).
func parseExpiry(s string) (time.Time, *apperr.Error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, apperr.Field(standingorders.FieldExpiresAt, "so.err.expires_format")
	}
	return t, nil
}

// withExpiry puts an unreadable expiry's problem in place of "missing"
// among err's problems.
func withExpiry(err error, expErr *apperr.Error) error {
	var f apperr.Fields
	if expErr == nil || !errors.As(err, &f) {
		return err
	}
	for i, e := range f {
		if e.Field == standingorders.FieldExpiresAt {
			f[i] = expErr
		}
	}
	return f
}

// APIDelete is DELETE /api/v1/standing-orders/{id}: cancels (deletes)
// the order, for the member who placed it or an admin of its
// organisation; another organisation's order is 404. The answer is the
// order as it stood: open (it will never fire), or what it had done.
func (h *Handler) APIDelete(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return apperr.NotFound("standing order")
	}
	o, err := h.orders().Cancel(c.Request().Context(), handlers.CurrentUser(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, orderJSON(o))
}
