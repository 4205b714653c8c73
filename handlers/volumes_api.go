package handlers

import (
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

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
	NoGPU    bool  `json:"no_gpu"`
	VolumeID int64 `json:"volume_id"`
}

// startRental starts a stopped rental again for a caller who may.
func (h *Handler) startRental(c echo.Context, in startBody) (*rentals.RentalDetail, error) {
	d, org, err := h.ownRental(c, "start")
	if err != nil {
		return nil, err
	}
	if in.VolumeID < 0 {
		return nil, apperr.Field("volume_id", "err.volume_unknown")
	}
	if _, err := h.Rentals.Start(c.Request().Context(), CurrentUser(c), org, d.Rental.ID, rentals.StartInput{NoGPU: in.NoGPU, VolumeID: in.VolumeID}); err != nil {
		return nil, err
	}
	return h.Rentals.Detail(c.Request().Context(), d.Rental.ID)
}

// APIRentalStart is POST /api/v1/rentals/{id}/start.
func (h *Handler) APIRentalStart(c echo.Context) error {
	var in startBody
	if err := decodeOptional(c, &in, `{"no_gpu":false,"volume_id":12}`); err != nil {
		return err
	}
	d, err := h.startRental(c, in)
	if err != nil {
		return err
	}
	return h.rentalJSON(c, http.StatusOK, d)
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
	return h.rentalJSON(c, http.StatusOK, d)
}
