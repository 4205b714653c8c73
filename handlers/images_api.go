package handlers

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/images"
)

// APIImage is a catalogue image in the public JSON API. Digest and
// SizeBytes are null until known.
type APIImage struct {
	Slug             string  `json:"slug"`
	Name             string  `json:"name"`
	Framework        string  `json:"framework"`
	FrameworkVersion string  `json:"framework_version"`
	CUDAVersion      string  `json:"cuda_version"`
	Reference        string  `json:"reference"`
	Digest           *string `json:"digest"`
	SizeBytes        *int64  `json:"size_bytes"`
	Jupyter          bool    `json:"jupyter"`
	// Cached and Compatible are set for an offer's images (?offer_id=):
	// the offer's node has it locally; its CUDA driver can run it.
	Cached     *bool `json:"cached,omitempty"`
	Compatible *bool `json:"compatible,omitempty"`
}

func apiImage(im images.Image, forOffer bool) APIImage {
	out := APIImage{Slug: im.Slug, Name: im.Name, Framework: im.Framework, FrameworkVersion: im.FrameworkVersion,
		CUDAVersion: im.CUDAVersion, Reference: im.Reference, Digest: im.Digest, SizeBytes: im.SizeBytes, Jupyter: im.Jupyter}
	if forOffer {
		cached, compatible := im.Cached, im.Compatible
		out.Cached, out.Compatible = &cached, &compatible
	}
	return out
}

// APIImagesList is GET /api/v1/images: the platform's image catalogue,
// or with ?offer_id= the images that offer offers (its default first),
// each saying whether the offer's node has it and can run it.
func (h *Handler) APIImagesList(c echo.Context) error {
	pg, err := PageParams(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	var (
		list     []images.Image
		forOffer bool
	)
	if s := strings.TrimSpace(c.QueryParam("offer_id")); s != "" {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id <= 0 {
			return &apperr.Error{Code: apperr.EINVALID, Field: "offer_id", Message: "offer_id must be a positive integer"}
		}
		// Only offers the public list shows, as on GET /api/v1/offers/{id}.
		if _, err := h.DB.PublicOfferByID(ctx, id); err != nil {
			return err
		}
		forOffer = true
		if list, err = images.ForOffer(ctx, h.DB, id); err != nil {
			return err
		}
	} else if list, err = images.Catalogue(ctx, h.DB); err != nil {
		return err
	}
	if err := pg.Within(int64(len(list))); err != nil {
		return err
	}
	lo, hi := pg.Slice(len(list))
	out := make([]APIImage, 0, hi-lo)
	for _, im := range list[lo:hi] {
		out = append(out, apiImage(im, forOffer))
	}
	return c.JSON(http.StatusOK, map[string]any{"images": out, "total": len(list), "page": pg.Page, "per_page": pg.PerPage})
}
