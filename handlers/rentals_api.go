package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/handlers/rentaljson"
	"suanli/images"
	"suanli/models"
	"suanli/rentals"
)

// RentFields are a rent's fields, from the rent page's form or embedded
// in the body of the API's POST /api/v1/rentals (handlers/launchapi).
type RentFields struct {
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
	Ports        []int                `json:"ports"` // container ports to open in the browser
	// IdleStop: {"gpu_util_below_pct":N,"minutes":M}, or null (off).
	IdleStop json.RawMessage `json:"idle_stop"`
	// Bid: the term "interruptible"'s bid per GPU-hour (rentaljson.TermIn).
	Bid *int64 `json:"bid_per_gpu_hour_fen"`
}

// Rent authorises the renter for in's organisation and rents with do
// (rentals' Rent or launch's Launch): the term "interruptible" on demand
// at its bid, idle the idle stop as read. It answers the organisation too.
func (h *Handler) Rent(c echo.Context, in RentFields, idle models.IdleStop,
	do func(context.Context, *models.User, *models.Org, *models.Membership, rentals.RentInput) (*models.Rental, error)) (*models.Rental, *models.Org, error) {
	term, bid, err := rentaljson.TermIn(in.Term, in.Bid)
	if err != nil {
		return nil, nil, err
	}
	orgParam := ""
	if in.OrgID != 0 {
		orgParam = strconv.FormatInt(in.OrgID, 10)
	}
	org, err := h.APIOrg(c, accounts.Rent, orgParam)
	if err != nil {
		return nil, nil, err
	}
	u := CurrentUser(c)
	m, err := h.DB.MembershipOf(c.Request().Context(), org.ID, u.ID)
	if err != nil {
		return nil, nil, err
	}
	r, err := do(c.Request().Context(), u, org, m, rentals.RentInput{OrgID: org.ID, OfferID: in.OfferID, GPUs: in.GPUs,
		SLA: in.SLA, Term: term, Bid: bid, SSHPublicKey: in.SSHPublicKey, AutoRenew: in.AutoRenew,
		Image: in.Image, VolumeGB: in.VolumeGB, VolumeID: in.VolumeID, RegistryAuth: in.RegistryAuth, Ports: in.Ports, IdleStop: idle})
	return r, org, err
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
	out := map[string]any{"quote": rentaljson.ChangeQuote{FromOfferID: q.FromOfferID, ToOfferID: q.ToOfferID, FromGPUModel: q.FromModel, ToGPUModel: q.ToModel,
		FromGPUs: q.FromGPUs, ToGPUs: q.ToGPUs, FromFenPerHour: q.FromFenPerHour, ToFenPerHour: q.ToFenPerHour, SameNode: q.SameNode, Currency: "cny"},
		"confirmed": in.Confirm}
	if in.Confirm {
		org, err := h.DB.OrgByID(c.Request().Context(), d.Rental.OrgID)
		if err != nil {
			return err
		}
		if out["rental"], err = rentaljson.WithSpecOne(c.Request().Context(), h.DB, rentaljson.WithIdle(rentaljson.Of(d), d, org)); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, out)
}
