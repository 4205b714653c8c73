package handlers

import (
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/models"
	"suanli/rentals"
)

// decodeOptional reads an optional JSON body into v: an empty body
// leaves v as it is.
func decodeOptional(c echo.Context, v any, want string) error {
	if err := JSONDecoder(c).Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return &apperr.Error{Code: apperr.EINVALID, Field: "body", Message: "want JSON " + want}
	}
	return nil
}

// ownRental loads a rental the caller may stop, start or release: its
// renter or an admin of its organisation.
func (h *Handler) ownRental(c echo.Context, verb string) (*rentals.RentalDetail, *models.Org, error) {
	d, m, err := h.rentalFor(c)
	if err != nil {
		return nil, nil, err
	}
	u := CurrentUser(c)
	if !rentals.CanStop(&d.Rental, u, m) {
		return nil, nil, apperr.Errorf(apperr.EFORBIDDEN, "only the renter or an admin of the organisation may %s this rental", verb)
	}
	org, err := h.DB.OrgByID(c.Request().Context(), d.Rental.OrgID)
	if err != nil {
		return nil, nil, err
	}
	return d, org, nil
}

// startBody is POST /api/v1/rentals/{id}/start's optional body.
type startBody struct {
	NoGPU bool `json:"no_gpu"`
}

// startRental starts a stopped rental again for a caller who may.
func (h *Handler) startRental(c echo.Context, in startBody) (*rentals.RentalDetail, error) {
	d, org, err := h.ownRental(c, "start")
	if err != nil {
		return nil, err
	}
	if in.NoGPU {
		return nil, &apperr.Error{Code: apperr.EINVALID, Field: "no_gpu", Message: "no-GPU mode is not available yet", Key: "err.no_gpu_unavailable"}
	}
	if _, err := h.Rentals.Start(c.Request().Context(), CurrentUser(c), org, d.Rental.ID); err != nil {
		return nil, err
	}
	return h.Rentals.Detail(c.Request().Context(), d.Rental.ID)
}

// APIRentalStart is POST /api/v1/rentals/{id}/start.
func (h *Handler) APIRentalStart(c echo.Context) error {
	var in startBody
	if err := decodeOptional(c, &in, `{"no_gpu":false}`); err != nil {
		return err
	}
	d, err := h.startRental(c, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiRental(d))
}

// releaseBody is POST /api/v1/rentals/{id}/release's optional body.
type releaseBody struct {
	DeleteVolume bool `json:"delete_volume"`
}

// releaseRental releases a rental for a caller who may.
func (h *Handler) releaseRental(c echo.Context, in releaseBody) (*rentals.RentalDetail, error) {
	d, _, err := h.ownRental(c, "release")
	if err != nil {
		return nil, err
	}
	if _, err := h.Rentals.Release(c.Request().Context(), d.Rental.ID, in.DeleteVolume); err != nil {
		return nil, err
	}
	return h.Rentals.Detail(c.Request().Context(), d.Rental.ID)
}

// APIRentalRelease is POST /api/v1/rentals/{id}/release.
func (h *Handler) APIRentalRelease(c echo.Context) error {
	var in releaseBody
	if err := decodeOptional(c, &in, `{"delete_volume":false}`); err != nil {
		return err
	}
	d, err := h.releaseRental(c, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiRental(d))
}

// APIVolumesList is GET /api/v1/volumes (?org_id=).
func (h *Handler) APIVolumesList(c echo.Context) error {
	org, err := h.APIOrg(c, accounts.ViewRentals, c.QueryParam("org_id"))
	if err != nil {
		return err
	}
	out, err := h.orgVolumes(c, org.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"org_id": org.ID, "volumes": out})
}

// orgVolumes is the organisation's volumes with the rentals they are
// attached to.
func (h *Handler) orgVolumes(c echo.Context, orgID int64) ([]*APIVolume, error) {
	ctx := c.Request().Context()
	vs, err := h.Rentals.Volumes(ctx, orgID)
	if err != nil {
		return nil, err
	}
	attached, err := h.Rentals.VolumeRentals(ctx, vs)
	if err != nil {
		return nil, err
	}
	out := []*APIVolume{}
	for i := range vs {
		out = append(out, apiVolume(&vs[i], attached[vs[i].ID]))
	}
	return out, nil
}

// volumeBody is POST /api/v1/volumes.
type volumeBody struct {
	OrgID   int64  `json:"org_id"`
	OfferID int64  `json:"offer_id"`
	SizeGB  int    `json:"size_gb"`
	Name    string `json:"name"`
}

// APIVolumeCreate is POST /api/v1/volumes: a volume in an offer's
// datacentre, billed from now.
func (h *Handler) APIVolumeCreate(c echo.Context) error {
	var in volumeBody
	if err := JSONDecoder(c).Decode(&in); err != nil {
		return &apperr.Error{Code: apperr.EINVALID, Field: "body", Message: `want JSON {"offer_id":N,"size_gb":N,"name":"…"}`}
	}
	if in.OfferID <= 0 {
		return &apperr.Error{Code: apperr.EINVALID, Field: "offer_id", Message: "offer_id is required"}
	}
	orgParam := ""
	if in.OrgID != 0 {
		orgParam = strconv.FormatInt(in.OrgID, 10)
	}
	org, err := h.APIOrg(c, accounts.Rent, orgParam)
	if err != nil {
		return err
	}
	v, err := h.Rentals.CreateVolume(c.Request().Context(), CurrentUser(c), org, rentals.VolumeInput{OrgID: org.ID, OfferID: in.OfferID, SizeGB: in.SizeGB, Name: in.Name})
	if err != nil {
		return err
	}
	c.Response().Header().Set("Location", "/api/v1/volumes/"+strconv.FormatInt(v.ID, 10))
	return c.JSON(http.StatusCreated, apiVolume(v, 0))
}

// APIVolumeDelete is DELETE /api/v1/volumes/{id}: its files are deleted
// on the node. The organisation's admins, or the member who made it.
func (h *Handler) APIVolumeDelete(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return apperr.NotFound("volume")
	}
	ctx := c.Request().Context()
	u := CurrentUser(c)
	v, err := h.Rentals.LiveVolume(ctx, id)
	if err != nil {
		return err
	}
	_, m, err := h.Accounts.Authorize(ctx, u, v.OrgID, accounts.Rent)
	if err != nil {
		if apperr.Code(err) == apperr.ENOTFOUND {
			return apperr.NotFound("volume")
		}
		return err
	}
	if v.UserID != u.ID && (m == nil || models.RoleRank(m.Role) < models.RoleRank(models.RoleAdmin)) {
		return apperr.Errorf(apperr.EFORBIDDEN, "only the member who made this volume or an admin of the organisation may delete it")
	}
	if err := h.Rentals.DeleteVolume(ctx, v.OrgID, v.ID, "deleted by its owner"); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
