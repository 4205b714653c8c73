// Package witnessapi holds the handler of the verifier's endpoint: the
// program that runs inside a rental's container (suanli-verify) posts
// what it saw there, authorised by the rental's own verify token, not a
// session or an API token.
package witnessapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
	"suanli/witness"
)

// Handler serves the verifier's endpoint on the application's handler.
type Handler struct {
	*handlers.Handler
}

// maxReport bounds a verifier's report (a few hundred bytes a GPU).
const maxReport = 64 << 10

// answer is what the verifier gets back for a recorded result.
type answer struct {
	ID         int64     `json:"id"`
	Source     string    `json:"source"`
	Simulated  bool      `json:"simulated"`
	GPUs       int       `json:"gpus"`
	BF16TFLOPS *float64  `json:"bf16_tflops"`
	RecordedAt time.Time `json:"recorded_at"`
}

// WitnessResult is POST /witness/v1/rentals/{id}/results: the verifier
// in the rental's container posts what it saw, with the rental's own
// credential (Authorization: Bearer, from SUANLI_VERIFY_TOKEN).
func (h *Handler) WitnessResult(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return apperr.NotFound("rental")
	}
	token, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return witness.ErrBadToken
	}
	var rep witness.Report
	if err := handlers.JSONDecoderLimit(c, maxReport).Decode(&rep); err != nil {
		return apperr.Invalid("body", "want the verifier's JSON report")
	}
	res, err := (&witness.Service{DB: h.DB}).Submit(c.Request().Context(), id, token, rep)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, answer{ID: res.ID, Source: res.Source, Simulated: res.Simulated, GPUs: res.GPUs,
		BF16TFLOPS: res.BF16TFLOPS, RecordedAt: res.CreatedAt})
}
