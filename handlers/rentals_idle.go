package handlers

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers/rentaljson"
	"suanli/handlers/rentalvm"
	"suanli/idlestop"
	"suanli/models"
	"suanli/rentals"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/rentalpages"
)

// idleStopShape is what the API takes for idle_stop.
const idleStopShape = `{"gpu_util_below_pct":N,"minutes":M} or null`

// BindIdleStop reads an idle_stop value of the API: absent or null is off;
// anything but an object of the two whole numbers is refused naming
// idle_stop (an object is a setting, so {"…":0,"minutes":0} is out of
// range rather than off).
func BindIdleStop(raw json.RawMessage) (models.IdleStop, error) {
	if len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return models.IdleStop{}, nil
	}
	var in rentaljson.IdleStop
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return models.IdleStop{}, &apperr.Error{Code: apperr.EINVALID, Field: idlestop.Field, Message: "idle_stop: want " + idleStopShape, Key: "idle.err.shape"}
	}
	if in.GPUUtilBelowPct == 0 && in.Minutes == 0 {
		return models.IdleStop{}, apperr.Field(idlestop.Field, "idle.err.pct")
	}
	return models.IdleStop{BelowPct: in.GPUUtilBelowPct, Minutes: in.Minutes}, nil
}

// idleStopForm reads the idle-stop inputs of a form: off unless the
// checkbox is ticked; whole numbers otherwise, or the problem to show
// beside them. A tool may instead send idle_stop as the API's JSON
// ({"gpu_util_below_pct":N,"minutes":M} or null).
func idleStopForm(f views.Form) (models.IdleStop, *apperr.Error) {
	v := strings.TrimSpace(f.Get("idle_stop"))
	if v == "" {
		return models.IdleStop{}, nil
	}
	if strings.HasPrefix(v, "{") || v == "null" {
		s, err := BindIdleStop(json.RawMessage(v))
		if err != nil {
			ae, _ := apperr.As(err) // BindIdleStop answers *apperr.Error only
			return models.IdleStop{}, ae
		}
		return s, nil
	}
	pct, err := strconv.Atoi(strings.TrimSpace(f.Get("idle_stop_below_pct")))
	if err != nil {
		return models.IdleStop{}, apperr.Field(idlestop.Field, "idle.err.pct")
	}
	minutes, err := strconv.Atoi(strings.TrimSpace(f.Get("idle_stop_minutes")))
	if err != nil {
		return models.IdleStop{}, apperr.Field(idlestop.Field, "idle.err.minutes", idlestop.MinMinutes, idlestop.MaxMinutes)
	}
	return models.IdleStop{BelowPct: pct, Minutes: minutes}, nil
}

// idleStopFields are the idle-stop inputs of the rent form and of the
// rental page's idle-stop form.
var idleStopFields = []string{"idle_stop", "idle_stop_below_pct", "idle_stop_minutes"}

// rentalJSON answers with a rental in the API, its organisation's
// idle-stop policy included.
func (h *Handler) rentalJSON(c echo.Context, status int, d *rentals.RentalDetail) error {
	org, err := h.DB.OrgByID(c.Request().Context(), d.Rental.OrgID)
	if err != nil {
		return err
	}
	out, err := rentaljson.WithSpecOne(c.Request().Context(), h.DB, rentaljson.WithIdle(rentaljson.Of(d), d, org))
	if err != nil {
		return err
	}
	return c.JSON(status, out)
}

// APIRentalIdleStop is POST /api/v1/rentals/{id}/idle-stop with the body
// {"gpu_util_below_pct":N,"minutes":M}, or null to turn it off: for the
// renter and the organisation's admins (403 for other members).
func (h *Handler) APIRentalIdleStop(c echo.Context) error {
	var raw json.RawMessage
	if err := JSONDecoder(c).Decode(&raw); err != nil {
		return apperr.Invalid("body", "want JSON "+idleStopShape)
	}
	d, m, err := h.rentalFor(c)
	if err != nil {
		return err
	}
	v, err := BindIdleStop(raw)
	if err == nil {
		_, err = h.IdleStop().Set(c.Request().Context(), CurrentUser(c), m, d.Rental.ID, v)
	}
	if err != nil {
		return err
	}
	if d, err = h.Rentals.Detail(c.Request().Context(), d.Rental.ID); err != nil {
		return err
	}
	return h.rentalJSON(c, http.StatusOK, d)
}

// RentalIdleStop is POST /rentals/{id}/idle-stop: the rental page's
// idle-stop form, for the renter and the organisation's admins. Bad input
// shows the page again with the message beside the inputs (422) and
// changes nothing.
func (h *Handler) RentalIdleStop(c echo.Context) error {
	d, m, err := h.rentalFor(c)
	if err != nil {
		return err
	}
	f := ReadForm(c, idleStopFields...)
	v, ferr := idleStopForm(f)
	if ferr == nil {
		_, err = h.IdleStop().Set(c.Request().Context(), CurrentUser(c), m, d.Rental.ID, v)
	} else if err = idlestop.CanChange(&d.Rental, CurrentUser(c), m); err == nil {
		// Who may change it is said before anything about the input.
		err = ferr
	}
	if err == nil {
		h.Flash(c, "idle.saved_flash", d.Rental.ID)
		return SeeOther(c, c.Echo().Reverse(routenames.RentalsShow, strconv.FormatInt(d.Rental.ID, 10)))
	}
	ae, ok := apperr.As(err)
	if !ok || ae.Field != idlestop.Field || ae.Key == "" || !idlestop.Applies(d.Rental.Term) {
		// A term rental's page has no idle-stop form to show it beside.
		return err
	}
	vc := ViewCtx(c)
	f.Errors[idlestop.Field] = vc.T(ae.Key, ae.Args...)
	vm, err := h.rentalPageVM(c, d, m)
	if err != nil {
		return err
	}
	if vm.Idle, err = h.rentalIdleVM(c, d, m, &f); err != nil {
		return err
	}
	if vm.SLA, err = h.rentalSLA(c, d); err != nil {
		return err
	}
	vc.Path = c.Echo().Reverse(routenames.RentalsShow, strconv.FormatInt(d.Rental.ID, 10))
	return Render(c, ErrorStatus(ae), rentalpages.RentalPage(vc, vm))
}

// rentalIdleVM is the rental page's idle-stop section, its form as f left
// it (nil for the rental's own setting), with its GPUs' idle streak while
// it runs; nil for a term rental (idlestop.Applies).
func (h *Handler) rentalIdleVM(c echo.Context, d *rentals.RentalDetail, m *models.Membership, f *views.Form) (*rentalpages.IdleStopVM, error) {
	r := &d.Rental
	if !idlestop.Applies(r.Term) {
		return nil, nil
	}
	ctx := c.Request().Context()
	org, err := h.DB.OrgByID(ctx, r.OrgID)
	if err != nil {
		return nil, err
	}
	policy := idlestop.Policy(org)
	var st idlestop.Streak
	if r.Status == models.RentalRunning && !r.NoGPU {
		if st, err = h.IdleStop().StreakOf(ctx, r.ID, idlestop.Effective(r.IdleStop, policy), d.At); err != nil {
			return nil, err
		}
	}
	if f == nil {
		form := ReadForm(c)
		f = &form
	}
	rentalvm.IdleStopDefaults(*f, r.IdleStop, policy)
	return rentalvm.IdleStop(r, org, st, d.At, d.Simulated(), idlestop.CanChange(r, CurrentUser(c), m) == nil, *f), nil
}
