// Package volumes holds the handlers of renters' volumes in the JSON
// API: list, make and delete (the rental handlers attach them).
package volumes

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/handlers"
	"suanli/handlers/rentaljson"
	"suanli/models"
	"suanli/volumes"
)

// Handler serves the volume endpoints.
type Handler struct{ *handlers.Handler }

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
func (h *Handler) orgVolumes(c echo.Context, orgID int64) ([]*rentaljson.Volume, error) {
	ctx := c.Request().Context()
	vs, err := h.Rentals.Volumes().List(ctx, orgID)
	if err != nil {
		return nil, err
	}
	attached, err := h.Rentals.Volumes().Attachments(ctx, vs)
	if err != nil {
		return nil, err
	}
	out := []*rentaljson.Volume{}
	for i := range vs {
		out = append(out, rentaljson.VolumeOf(&vs[i], attached[vs[i].ID]))
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
	if err := handlers.JSONDecoder(c).Decode(&in); err != nil {
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
	v, err := h.Rentals.Volumes().Add(c.Request().Context(), handlers.CurrentUser(c), org, volumes.Input{OrgID: org.ID, OfferID: in.OfferID, SizeGB: in.SizeGB, Name: in.Name})
	if err != nil {
		return err
	}
	c.Response().Header().Set("Location", "/api/v1/volumes/"+strconv.FormatInt(v.ID, 10))
	return c.JSON(http.StatusCreated, rentaljson.VolumeOf(v, 0))
}

// APIVolumeDelete is DELETE /api/v1/volumes/{id}: its files are deleted
// on the node; the answer is the volume, deleted. The organisation's admins, or the member who made it.
func (h *Handler) APIVolumeDelete(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return apperr.NotFound("volume")
	}
	ctx := c.Request().Context()
	u := handlers.CurrentUser(c)
	v, err := h.Rentals.Volumes().Live(ctx, id)
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
	if err := h.Rentals.Volumes().Remove(ctx, v.OrgID, v.ID, "deleted by its owner"); err != nil {
		return err
	}
	// The volume as it is now: deleted, with what it was billed.
	if v, err = h.Rentals.Volumes().Record(ctx, v.ID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rentaljson.VolumeOf(v, 0))
}
