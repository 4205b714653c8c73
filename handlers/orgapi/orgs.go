package orgapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/handlers"
	"suanli/idlestop"
	"suanli/models"
)

// APIOrgShow is GET /api/v1/orgs/{id}: the organisation, its members and
// (for those who may invite) its pending invitations, as its page shows
// them.
func (h *Handler) APIOrgShow(c echo.Context) error {
	id, err := orgID(c)
	if err != nil {
		return err
	}
	return h.detail(c, http.StatusOK, id)
}

// APIOrgCreate is POST /api/v1/orgs {"name","kind":"team"|"provider"}:
// the console's "new organisation" (a lab applies at /api/v1/labs).
func (h *Handler) APIOrgCreate(c echo.Context) error {
	var in struct {
		Name string `json:"name"`
		Kind string `json:"kind"`
	}
	if err := decode(c, &in, `{"name":"…","kind":"team"|"provider"}`); err != nil {
		return err
	}
	org, err := h.Accounts.CreateOrg(c.Request().Context(), handlers.CurrentUser(c), in.Kind, in.Name)
	if err != nil {
		return err
	}
	return h.detail(c, http.StatusCreated, org.ID)
}

// APIOrgBudget is PUT /api/v1/orgs/{id}/budget {"monthly_budget_fen",
// "member_cap_fen"} (each a whole number of fen, or null for none): a
// lab's monthly budget and cap per member, for its admins.
func (h *Handler) APIOrgBudget(c echo.Context) error {
	id, err := orgID(c)
	if err != nil {
		return err
	}
	ctx, u := c.Request().Context(), handlers.CurrentUser(c)
	// Who may not set it learns nothing of the input (as on the page).
	if _, _, err := h.Accounts.Authorize(ctx, u, id, accounts.SetBudget); err != nil {
		return err
	}
	var in struct {
		MonthlyBudgetFen *int64 `json:"monthly_budget_fen"`
		MemberCapFen     *int64 `json:"member_cap_fen"`
	}
	if err := decode(c, &in, `{"monthly_budget_fen":N|null,"member_cap_fen":N|null}`); err != nil {
		return err
	}
	err = h.Accounts.SetLabBudget(ctx, u, id, in.MonthlyBudgetFen, in.MemberCapFen)
	if err != nil {
		return renamed(err, map[string]string{"monthly_budget": "monthly_budget_fen", "member_cap": "member_cap_fen"})
	}
	return h.detail(c, http.StatusOK, id)
}

// APIOrgIdlePolicy is PUT /api/v1/orgs/{id}/idle-policy {"idle_policy":
// {"gpu_util_below_pct":N,"minutes":M} or null}: a lab's idle-stop policy
// for the rentals it pays for, for its admins (null: none).
func (h *Handler) APIOrgIdlePolicy(c echo.Context) error {
	id, err := orgID(c)
	if err != nil {
		return err
	}
	ctx, u := c.Request().Context(), handlers.CurrentUser(c)
	// Who may not set it learns nothing of the input (as on the page).
	if _, _, err := h.Accounts.Authorize(ctx, u, id, accounts.SetIdlePolicy); err != nil {
		return err
	}
	var in struct {
		IdlePolicy json.RawMessage `json:"idle_policy"`
	}
	if err := decode(c, &in, `{"idle_policy":{"gpu_util_below_pct":N,"minutes":M}|null}`); err != nil {
		return err
	}
	var p models.IdleStop
	if raw := bytes.TrimSpace(in.IdlePolicy); len(raw) == 0 {
		return &apperr.Error{Code: apperr.EINVALID, Field: idlestop.PolicyField, Message: "idle_policy is required: an object, or null for none"}
	} else if !bytes.Equal(raw, []byte("null")) {
		var pol Policy
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&pol); err != nil {
			return &apperr.Error{Code: apperr.EINVALID, Field: idlestop.PolicyField, Message: `idle_policy: want {"gpu_util_below_pct":N,"minutes":M} or null`}
		}
		if pol == (Policy{}) {
			// An object is a setting: all zero is out of range, not none.
			return apperr.Field(idlestop.PolicyField, "idle.err.pct")
		}
		p = models.IdleStop{BelowPct: pol.GPUUtilBelowPct, Minutes: pol.Minutes}
	}
	if err := h.IdleStop().SetLabPolicy(ctx, u, id, p); err != nil {
		return err
	}
	return h.detail(c, http.StatusOK, id)
}
