// Package topupapi holds the API's reads of an organisation's wallet
// top-ups: the list the wallet page shows and one top-up, as its page
// (/topups/{id}) shows it, so that a script that started one with POST
// /api/v1/wallet/topups can follow it until it is paid.
package topupapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/accounts"
	"suanli/handlers"
	"suanli/models"
	"suanli/views/accountpages"
)

// Handler serves the top-up reads.
type Handler struct{ *handlers.Handler }

// ListLimit is how many top-ups the list answers: the newest.
const ListLimit = 100

// Topup is a top-up of a wallet in the API.
type Topup struct {
	ID    int64 `json:"id"`
	OrgID int64 `json:"org_id"`
	// Status is pending, paid, failed or flagged (a payment a platform
	// admin must look at).
	Status    string `json:"status"`
	AmountFen int64  `json:"amount_fen"`
	// ReceivedFen is what arrived (a bank transfer may differ from the
	// amount asked for); nil until paid.
	ReceivedFen *int64 `json:"received_fen"`
	RefundedFen int64  `json:"refunded_fen"`
	Method      string `json:"method"`
	// Reference is what a bank transfer quotes.
	Reference string     `json:"reference"`
	Note      string     `json:"note"`
	Currency  string     `json:"currency"`
	CreatedAt time.Time  `json:"created_at"`
	PaidAt    *time.Time `json:"paid_at"`
	// Bank is where a pending bank transfer goes (nil otherwise), as the
	// top-up's page shows it.
	Bank *accountpages.BankDetails `json:"bank"`
}

func (h *Handler) topupJSON(t *models.Topup) Topup {
	out := Topup{ID: t.ID, OrgID: t.OrgID, Status: t.Status, AmountFen: t.AmountFen, ReceivedFen: t.ReceivedFen, RefundedFen: t.RefundedFen,
		Method: t.Method, Reference: t.Reference, Note: t.Note, Currency: "cny", CreatedAt: t.CreatedAt.UTC()}
	if t.PaidAt != nil {
		at := t.PaidAt.UTC()
		out.PaidAt = &at
	}
	if t.Method == models.MethodBank && t.Status == models.TopupPending {
		bank := h.Bank
		out.Bank = &bank
	}
	return out
}

// APITopupsList is GET /api/v1/wallet/topups (?org_id): the wallet's
// newest top-ups (ListLimit), newest first, for anyone who may see the
// wallet.
func (h *Handler) APITopupsList(c echo.Context) error {
	org, err := h.APIOrg(c, accounts.ViewWallet, c.QueryParam("org_id"))
	if err != nil {
		return err
	}
	ts, err := h.DB.TopupsOf(c.Request().Context(), org.ID, ListLimit)
	if err != nil {
		return err
	}
	out := make([]Topup, len(ts))
	for i := range ts {
		out[i] = h.topupJSON(&ts[i])
	}
	return c.JSON(http.StatusOK, map[string]any{"org_id": org.ID, "topups": out, "currency": "cny"})
}

// APITopupShow is GET /api/v1/wallet/topups/{id}: one top-up, for anyone
// who may see its wallet; another organisation's is 404, as for one that
// does not exist.
func (h *Handler) APITopupShow(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "top-up")
	if err != nil {
		return err
	}
	t, _, err := h.Accounts.Topup(c.Request().Context(), handlers.CurrentUser(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, h.topupJSON(t))
}
