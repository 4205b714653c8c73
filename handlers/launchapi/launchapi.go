// Package launchapi holds the handlers of the API as launchers (SkyPilot,
// dstack, the suanli CLI) drive it: the compact catalogue of the whole
// market and its instance types, the create that launches by offer or by
// instance type with a launch spec, and the rental list filtered by
// label and name. The rules are package launch's.
package launchapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/handlers"
	"suanli/handlers/rentaljson"
	"suanli/launch"
	"suanli/models"
	"suanli/models/launchstore"
	"suanli/rentals"
)

// Handler serves the launch endpoints.
type Handler struct {
	*handlers.Handler
}

// launcher is the launch use case on the handler's services.
func (h *Handler) launcher() *launch.Service {
	return &launch.Service{DB: h.DB, Index: h.Index, Renter: h.IdleStop(), Box: h.Rentals.Credentials}
}

// Catalog is GET /api/v1/catalog (?from=CITY, gpu repeated,
// available=1): every listed offer in the compact form, cheapest first.
// Its weak ETag (W/"…": the gzip middleware outside may compress the
// answer, and a strong tag would have to differ between the encodings)
// names the offers version and the query, so a client that sends it back
// in If-None-Match gets 304 with no body until the market changes.
func (h *Handler) Catalog(c echo.Context) error {
	q, err := launch.ParseCatalogueQuery(c.QueryParams())
	if err != nil {
		return err
	}
	hdr := c.Response().Header()
	// Always ask again (no-cache), cheaply: the ETag answers 304.
	hdr.Set("Cache-Control", "no-cache")
	if etag := launch.ETagOf(h.Index.Version(), q); etagMatches(c.Request().Header.Get("If-None-Match"), etag) {
		hdr.Set("ETag", etag)
		return c.NoContent(http.StatusNotModified)
	}
	cat := launch.ReadCatalogue(h.Index, q)
	hdr.Set("ETag", cat.ETag)
	return c.JSON(http.StatusOK, map[string]any{"version": cat.Version, "currency": "cny", "offers": cat.Entries})
}

// InstanceTypes is GET /api/v1/instance-types: the instance types the
// market serves now, with how many could launch and their prices.
func (h *Handler) InstanceTypes(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"instance_types": launch.InstanceTypes(h.Index), "currency": "cny"})
}

// createBody is what POST /api/v1/rentals takes: an offer_id, or an
// instance_type with its filters; the rent's fields as ever; and the
// launch spec.
type createBody struct {
	handlers.RentFields
	InstanceType string            `json:"instance_type"`
	Region       string            `json:"region"`
	City         string            `json:"city"`
	ExcludeNodes []int64           `json:"exclude_nodes"`
	MaxPriceFen  *int64            `json:"max_price_fen"`
	Name         string            `json:"name"`
	Labels       map[string]string `json:"labels"`
	Env          map[string]string `json:"env"`
	Onstart      string            `json:"onstart"`
}

// MaxCreateBytes is the largest body POST /api/v1/rentals takes (the
// web layer's limit for the route; a larger one is 413 too_large): a
// spec at every limit of package launch fits, however its JSON escapes.
// A byte of an environment value or the script is at most 6 bytes
// escaped (\u0001; Go's encoder writes <, > and & so too): 6 × 32 KiB of
// env and 6 × 16 KiB of script; a character of a label or the name at
// most 12 (a character outside the BMP as two \u escapes): 20 labels ×
// 255 characters, about 62 KiB; a registry password (4096 bytes) at
// most 24 KiB. About 375 KiB in all, and the rest of the body is small.
const MaxCreateBytes = 512 << 10

// bodyShape is the create's body, said when it does not parse.
const bodyShape = `want JSON {"offer_id":N | "instance_type":"h100-sxm.2x","gpus":N,"sla":"standard"|"premium","term":"on_demand"|"week"|"month"|"interruptible",` +
	`"ssh_public_key":"ssh-ed25519 …","name":"…","labels":{"k":"v"},"env":{"NAME":"value"},"onstart":"…"}`

// CreateRental is POST /api/v1/rentals: rents the offer offer_id, or
// launches the instance_type on the cheapest offer that takes it (in
// region or city, on no node of exclude_nodes, under max_price_fen),
// with the launch spec stored in the same transaction.
func (h *Handler) CreateRental(c echo.Context) error {
	var in createBody
	dec := handlers.JSONDecoderLimit(c, MaxCreateBytes)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		if e := apperr.WrongJSONType(err); e != nil {
			return e // "ports":"8000" names ports
		}
		return apperr.Invalid("body", bodyShape)
	}
	var target *launch.Target
	switch {
	case in.OfferID != 0 && in.InstanceType != "":
		return apperr.Invalid("instance_type", "give offer_id or instance_type, not both")
	case in.InstanceType != "":
		t, err := launch.ParseInstanceType(in.InstanceType)
		if err != nil {
			return err
		}
		if in.GPUs != 0 && in.GPUs != t.GPUs {
			return apperr.Invalid("gpus", "the instance type "+t.String()+" has "+strconv.Itoa(t.GPUs)+" GPUs: leave gpus out")
		}
		target = &launch.Target{Type: t, Region: in.Region, City: in.City, ExcludeNodes: in.ExcludeNodes, MaxPriceFen: in.MaxPriceFen}
	case in.OfferID <= 0:
		return apperr.Invalid("offer_id", "offer_id (or instance_type) is required")
	case in.Region != "" || in.City != "" || len(in.ExcludeNodes) > 0 || in.MaxPriceFen != nil:
		return apperr.Invalid("instance_type", "region, city, exclude_nodes and max_price_fen choose among the offers of an instance_type: give one")
	}
	idle, err := handlers.BindIdleStop(in.IdleStop)
	if err != nil {
		return err
	}
	spec := launch.Spec{Name: in.Name, Labels: in.Labels, Env: in.Env, Onstart: in.Onstart}
	r, org, err := h.Rent(c, in.RentFields, idle, func(ctx context.Context, u *models.User, org *models.Org, m *models.Membership, ri rentals.RentInput) (*models.Rental, error) {
		return h.launcher().Launch(ctx, u, org, m, ri, spec, target)
	})
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	d, err := h.Rentals.Detail(ctx, r.ID)
	if err != nil {
		return err
	}
	out, err := rentaljson.WithSpecOne(ctx, h.DB, rentaljson.WithIdle(rentaljson.Of(d), d, org))
	if err != nil {
		return err
	}
	c.Response().Header().Set("Location", "/api/v1/rentals/"+strconv.FormatInt(r.ID, 10))
	return c.JSON(http.StatusCreated, out)
}

// ListRentals is GET /api/v1/rentals (?org_id=, label=k=v repeated — all
// must match —, name=, page, per_page): live rentals first, then the
// rest, newest first.
func (h *Handler) ListRentals(c echo.Context) error {
	org, err := h.APIOrg(c, accounts.ViewRentals, c.QueryParam("org_id"))
	if err != nil {
		return err
	}
	labels, err := launch.ParseLabelFilter(c.QueryParams()["label"])
	if err != nil {
		return err
	}
	pg, err := handlers.PageParams(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	rs, total, err := launchstore.RentalsPage(ctx, h.DB, org.ID, launchstore.Filter{Labels: labels, Name: c.QueryParam("name")}, pg.Offset(), pg.PerPage)
	if err != nil {
		return err
	}
	if err := pg.Within(total); err != nil {
		return err
	}
	out := []rentaljson.Rental{}
	for _, r := range rs {
		d, err := h.Rentals.Detail(ctx, r.ID)
		if err != nil {
			return err
		}
		out = append(out, rentaljson.WithIdle(rentaljson.Of(d), d, org))
	}
	if out, err = rentaljson.WithSpec(ctx, h.DB, out...); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"org_id": org.ID, "rentals": out, "total": total, "page": pg.Page, "per_page": pg.PerPage})
}

// etagMatches reports whether an If-None-Match header names etag: "*",
// or a list of tags one of which matches it in the weak comparison
// RFC 9110 (§13.1.2) prescribes for If-None-Match: the opaque tags equal,
// whether either is weak (W/"…") or not.
func etagMatches(header, etag string) bool {
	want := strings.TrimPrefix(etag, "W/")
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == want {
			return true
		}
	}
	return false
}
