// Package bidding holds the handlers that raise an interruptible
// rental's bid (竞价实例): POST /api/v1/rentals/{id}/bid and the rental
// page's form, POST /rentals/{id}/bid. Renting on a bid goes through the
// rent handlers (term "interruptible"); the rules are package bids', the
// raise is rentals.Service.RaiseBid.
package bidding

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/bids"
	"suanli/handlers"
	"suanli/handlers/rentaljson"
	"suanli/pricing"
	"suanli/rentals"
	"suanli/routenames"
	"suanli/views/bidviews"
)

// Handler serves the bid endpoints.
type Handler struct{ *handlers.Handler }

// bidShape is the body POST /api/v1/rentals/{id}/bid wants.
const bidShape = `{"bid_per_gpu_hour_fen":N}`

// APIRentalBid is POST /api/v1/rentals/{id}/bid {"bid_per_gpu_hour_fen":N}:
// raise an interruptible rental's bid, for its renter and the
// organisation's admins (403 for other members, 404 outside it). It
// answers the rental.
func (h *Handler) APIRentalBid(c echo.Context) error {
	var in struct {
		Bid *int64 `json:"bid_per_gpu_hour_fen"`
	}
	if err := handlers.JSONDecoder(c).Decode(&in); err != nil {
		if e := apperr.WrongJSONType(err); e != nil {
			return e // "bid_per_gpu_hour_fen":"3.5" names the field
		}
		return apperr.Invalid("body", "want JSON "+bidShape)
	}
	d, err := h.mayRaise(c)
	if err != nil {
		return err
	}
	if in.Bid == nil {
		return apperr.Field(bids.Field, "bidpages.err_bid_required")
	}
	if d, err = h.raise(c, d, *in.Bid); err != nil {
		return err
	}
	org, err := h.DB.OrgByID(c.Request().Context(), d.Rental.OrgID)
	if err != nil {
		return err
	}
	out, err := rentaljson.WithSpecOne(c.Request().Context(), h.DB, rentaljson.WithIdle(rentaljson.Of(d), d, org))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// RentalBid is POST /rentals/{id}/bid (bid: yuan per GPU-hour), the
// rental page's raise form. A refused bid shows the page again with the
// message beside the field (422; 409 for a rental that cannot take one
// now); a raised one goes back to the page.
func (h *Handler) RentalBid(c echo.Context) error {
	d, err := h.mayRaise(c)
	if err != nil {
		return err
	}
	if fen, ok := pricing.ParseYuan(strings.TrimSpace(c.FormValue(bidviews.Field))); !ok {
		err = apperr.Field(bidviews.Field, "bidpages.err_bid_yuan")
	} else if d, err = h.raise(c, d, fen); err == nil {
		h.Flash(c, "bidpages.raised_flash", d.Rental.ID, pricing.FenToYuanString(fen))
		return handlers.SeeOther(c, c.Echo().Reverse(routenames.RentalsShow, strconv.FormatInt(d.Rental.ID, 10)))
	}
	if ae, ok := apperr.As(err); ok && ae.Field == bids.Field {
		// The API's field is the page's bid field.
		err = &apperr.Error{Code: ae.Code, Field: bidviews.Field, Key: ae.Key, Args: ae.Args, Message: ae.Message}
	}
	return h.RentalActionRefused(c, err)
}

// mayRaise loads a rental whose bid the caller may raise: a member of its
// organisation sees it (others get 404), and only its renter or an admin
// may change it (403), as for a switch or a resize.
func (h *Handler) mayRaise(c echo.Context) (*rentals.RentalDetail, error) {
	d, m, err := h.RentalFor(c)
	if err != nil {
		return nil, err
	}
	if !rentals.CanStop(&d.Rental, handlers.CurrentUser(c), m) {
		return nil, apperr.Errorf(apperr.EFORBIDDEN, "only the renter or an admin of the organisation may change this rental's bid")
	}
	return d, nil
}

// raise raises d's bid to bid (fen per GPU-hour) and returns the rental
// as it is then.
func (h *Handler) raise(c echo.Context, d *rentals.RentalDetail, bid int64) (*rentals.RentalDetail, error) {
	ctx := c.Request().Context()
	u := handlers.CurrentUser(c)
	org, m, err := h.Accounts.Authorize(ctx, u, d.Rental.OrgID, accounts.Rent)
	if err != nil {
		return nil, err
	}
	if _, err := h.Rentals.RaiseBid(ctx, u, org, m, d.Rental.ID, bid); err != nil {
		return nil, err
	}
	return h.Rentals.Detail(ctx, d.Rental.ID)
}
