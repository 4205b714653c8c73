// Package witness owns the witnesses beyond the provider (DESIGN.md §8):
// the verifier that runs inside a rental's container on the rented GPUs
// and posts what it saw with a credential scoped to that one rental, the
// offers' renter-measured and platform-audited figures made from those
// results, and the platform's audit rentals.
//
// Everything an agent reports is the provider's word; the verifier's
// result is not the agent's (it comes from inside the renter's container,
// over the renter's network path), so the server accepts it only for the
// GPUs the rental really holds, within the catalogue's physical bounds,
// and keeps the node's simulated state from its own records, never from
// the report.
package witness

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/catalog"
	"suanli/models"
	"suanli/models/rentalstore"
	"suanli/models/supply"
	"suanli/models/witnessstore"
)

// Window is how far back an offer's renter-measured and audit figures
// reach.
const Window = 30 * 24 * time.Hour

// NominalMargin is how far above the catalogue's nominal tensor figure a
// measured one may be before it is refused: the margin for boost clocks,
// which the agent's reports get too (benchmarks.NominalMargin is this).
const NominalMargin = 1.15

// TokenPrefix starts every verify token, so that one found in a log or a
// shell history says what it is.
const TokenPrefix = "svf_"

// Env names the launcher gives a rental's container (agent/docker).
const (
	EnvURL      = "SUANLI_VERIFY_URL"
	EnvToken    = "SUANLI_VERIFY_TOKEN"
	EnvAtStart  = "SUANLI_VERIFY_AT_START"
	EnvSimUUIDs = "SUANLI_VERIFY_SIMULATED_UUIDS"
	EnvSimName  = "SUANLI_VERIFY_SIMULATED_NAME"
)

// Command is what a renter runs in the container to verify on demand.
const Command = "suanli-verify"

// Service runs the witnesses on a database.
type Service struct {
	DB *models.DB
}

// Report is what the verifier posts: the GPUs it sees from inside the
// container, their health and, where the image has CUDA PyTorch, a
// short BF16 GEMM on each.
type Report struct {
	// Version is the verifier's report format (1).
	Version int `json:"version"`
	// Simulated is the verifier's own finding that there is no NVML in
	// the container and the launcher named simulated GPUs instead.
	Simulated bool `json:"simulated"`
	// NVML says how NVML answered inside the container: "ok", or why not.
	NVML string      `json:"nvml"`
	GPUs []ReportGPU `json:"gpus"`
	// GEMM says whether the GEMM ran ("ran"), or why not.
	GEMM string `json:"gemm"`
}

// ReportGPU is one GPU as the verifier saw it.
type ReportGPU struct {
	UUID string `json:"uuid"`
	Name string `json:"name"`
	// Health is "ok", "failing" (Problems say why) or "unread" (no NVML).
	Health   string   `json:"health"`
	Problems []string `json:"problems,omitempty"`
	// BF16TFLOPS is the GEMM's median on this GPU (nil: none ran).
	BF16TFLOPS *float64 `json:"bf16_tflops"`
}

// NewToken is a fresh verify token and the hash that is stored of it.
func NewToken() (token, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("witness: a token: %w", err)
	}
	token = TokenPrefix + hex.EncodeToString(b)
	return token, HashToken(token), nil
}

// HashToken is what is stored of a token (SHA-256, hex): tokens are
// random 256-bit strings, so no slow hash is needed.
func HashToken(token string) string {
	s := sha256.Sum256([]byte(token))
	return hex.EncodeToString(s[:])
}

// IssueCredential makes, in tx, a verify token for the rental's launch
// and returns it; only its hash is stored. Tokens are worth something
// only while their rental runs (Submit).
func IssueCredential(tx *gorm.DB, rentalID int64, now time.Time) (string, error) {
	token, hash, err := NewToken()
	if err != nil {
		return "", err
	}
	if err := witnessstore.PutCredential(tx, rentalID, hash, now); err != nil {
		return "", err
	}
	return token, nil
}

// ErrBadToken is the answer to a missing or unknown verify token.
var ErrBadToken = apperr.Errorf(apperr.EUNAUTHORIZED, "send Authorization: Bearer <the rental's %s>", EnvToken)

// Submit checks and stores a verifier's report for rentalID, posted
// with token. An unknown token is EUNAUTHORIZED; another rental's,
// EFORBIDDEN; a rental that is not running (or starting), ECONFLICT; a
// report that does not name exactly the rental's GPUs, each once, with
// a health verdict, or a figure outside the catalogue's bounds, is
// refused with the field named (apperr.Fields: a 422).
func (s *Service) Submit(ctx context.Context, rentalID int64, token string, rep Report) (witnessstore.Result, error) {
	var res witnessstore.Result
	token = strings.TrimSpace(token)
	if token == "" {
		return res, ErrBadToken
	}
	owner, err := witnessstore.CredentialRental(ctx, s.DB, HashToken(token))
	if apperr.Code(err) == apperr.ENOTFOUND {
		return res, ErrBadToken
	} else if err != nil {
		return res, err
	}
	if owner != rentalID {
		return res, apperr.Errorf(apperr.EFORBIDDEN, "this verify token is for another rental")
	}
	r, err := s.DB.RentalByID(ctx, rentalID)
	if err != nil {
		return res, err
	}
	if (r.Status != models.RentalRunning && r.Status != models.RentalProvisioning) || r.NodeID == nil {
		return res, apperr.Errorf(apperr.ECONFLICT, "rental %d is %s: results are taken while it runs", r.ID, r.Status)
	}
	if n, err := witnessstore.CountResultsOfRental(ctx, s.DB, r.ID); err != nil {
		return res, err
	} else if n >= MaxResultsPerRental {
		return res, apperr.Errorf(apperr.ERATELIMIT, "rental %d has posted %d results, the most one rental may", r.ID, n)
	}
	node, err := supply.NodeByIDTx(s.DB.R.WithContext(ctx), *r.NodeID)
	if err != nil {
		return res, err
	}
	offer, err := rentalstore.ReadOffer(s.DB.R.WithContext(ctx), r.OfferID)
	if err != nil {
		return res, err
	}
	gpus, err := s.DB.RentalGPUs(ctx, r.ID)
	if err != nil {
		return res, err
	}
	want := make([]string, 0, len(gpus))
	for _, g := range gpus {
		want = append(want, g.UUID)
	}
	model, _ := catalog.GPUModelBySlug(offer.GPUModel)
	if err := check(rep, want, node.Simulated, model); err != nil {
		return res, err
	}
	res = witnessstore.Result{RentalID: r.ID, OfferID: r.OfferID, NodeID: node.ID, Source: witnessstore.SourceRenter,
		Simulated: node.Simulated, GPUs: len(rep.GPUs), Healthy: true, GemmNote: clip(rep.GEMM, 500), CreatedAt: s.DB.Now().UTC()}
	var figs []float64
	for _, g := range rep.GPUs {
		if res.GPUName == "" {
			res.GPUName = clip(g.Name, 200)
		}
		if g.Health == "failing" {
			res.Healthy = false
		}
		if g.BF16TFLOPS != nil {
			figs = append(figs, *g.BF16TFLOPS)
		}
	}
	if len(figs) > 0 {
		m := median(figs)
		res.BF16TFLOPS = &m
	}
	detail, _ := json.Marshal(rep)
	res.Detail = string(detail)
	audit, err := witnessstore.AuditOfRental(ctx, s.DB, r.ID)
	if err != nil && apperr.Code(err) != apperr.ENOTFOUND {
		return res, err
	}
	if err == nil {
		res.Source = witnessstore.SourceAudit
	}
	if err := witnessstore.InsertResult(ctx, s.DB, &res); err != nil {
		return res, err
	}
	// The offer index holds its offers' statuses, judged with these
	// results: it reloads when the offers version moves.
	if err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		return models.OffersChanged(tx, models.OfferScope{Nodes: []int64{node.ID}})
	}); err != nil {
		return res, err
	}
	if res.Source == witnessstore.SourceAudit && audit.Status == witnessstore.AuditRunning {
		if _, err := witnessstore.FinishAuditRun(ctx, s.DB, audit.ID, witnessstore.AuditPassed, "", res.CreatedAt); err != nil {
			return res, err
		}
	}
	return res, nil
}

// check is the rule for a report: exactly the rental's GPUs (want),
// each once with a verdict; simulated only where the node is; TFLOPS
// positive, finite and within NominalMargin of the catalogue's nominal.
func check(rep Report, want []string, nodeSimulated bool, model catalog.GPUModel) error {
	var errs apperr.Fields
	if rep.Simulated && !nodeSimulated {
		errs = append(errs, apperr.Invalid("simulated", "this rental's node is not simulated: a verifier that found no NVML cannot stand in for its GPUs"))
	}
	got := make([]string, 0, len(rep.GPUs))
	for i, g := range rep.GPUs {
		got = append(got, g.UUID)
		switch g.Health {
		case "ok", "failing":
		case "unread":
			if !nodeSimulated {
				errs = append(errs, apperr.Invalid(fmt.Sprintf("gpus[%d].health", i), "the GPU's health could not be read: every rented GPU needs its checks"))
			}
		default:
			errs = append(errs, apperr.Invalid(fmt.Sprintf("gpus[%d].health", i), `want "ok", "failing" or "unread"`))
		}
		if v := g.BF16TFLOPS; v != nil {
			limit := model.TensorTFLOPS() * NominalMargin
			switch {
			case nodeSimulated:
				errs = append(errs, apperr.Invalid(fmt.Sprintf("gpus[%d].bf16_tflops", i), "a simulated GPU cannot be measured"))
			case math.IsNaN(*v) || math.IsInf(*v, 0) || *v <= 0:
				errs = append(errs, apperr.Invalid(fmt.Sprintf("gpus[%d].bf16_tflops", i), "want a positive number"))
			case limit > 0 && *v > limit:
				errs = append(errs, apperr.Invalid(fmt.Sprintf("gpus[%d].bf16_tflops", i),
					fmt.Sprintf("%.1f TFLOPS is above the %s's nominal %.1f (plus %.0f %%)", *v, model.Name, model.TensorTFLOPS(), (NominalMargin-1)*100)))
			}
		}
	}
	sw, sg := slices.Clone(want), slices.Clone(got)
	slices.Sort(sw)
	slices.Sort(sg)
	if !slices.Equal(sw, sg) {
		errs = append(errs, apperr.Invalid("gpus", fmt.Sprintf("the report names GPUs %s; this rental's are %s", strings.Join(got, ","), strings.Join(want, ","))))
	}
	return errs.OrNil()
}

// MaxResultsPerRental is how many results one rental may post: enough
// for a renter who runs the verifier now and then, and a bound on what
// one credential can store (the median takes one vote per rental, see
// figures, so more would not move it anyway).
const MaxResultsPerRental = 20

// Figures are an offer's results of one source over Window.
type Figures struct {
	// Runs is how many verifier runs were counted.
	Runs int
	// MedianBF16TFLOPS is the median of their per-GPU GEMM figures; nil
	// when none of them ran a GEMM.
	MedianBF16TFLOPS *float64
	// LastAt is when the newest came.
	LastAt time.Time
	// Simulated: the runs were on a simulated node (no GPU was measured).
	Simulated bool
	// Unhealthy is how many saw a GPU failing a check.
	Unhealthy int
}

// Summary is an offer's independent figures: renter-measured and
// platform-audited (nil where there are none in Window).
type Summary struct {
	Renter *Figures
	Audit  *Figures
}

// Summaries are the offers' independent figures over Window, by offer id
// (offers without any are absent). Simulated results count only for an
// offer that has no real ones, and are marked.
func (s *Service) Summaries(ctx context.Context, offerIDs []int64) (map[int64]Summary, error) {
	rs, err := witnessstore.ResultsSince(ctx, s.DB, offerIDs, s.DB.Now().Add(-Window))
	if err != nil {
		return nil, err
	}
	return summarise(rs, func(r witnessstore.Result) int64 { return r.OfferID }), nil
}

// NodeSummaries are the independent figures of all of each node's offers
// over Window, by node id: what a node's benchmark report is judged with,
// wherever it is shown (an offer's badge, the report's page), so that a
// report has one status whichever of the node's offers shows it.
func (s *Service) NodeSummaries(ctx context.Context, nodeIDs []int64) (map[int64]Summary, error) {
	rs, err := witnessstore.NodesResultsSince(ctx, s.DB, nodeIDs, s.DB.Now().Add(-Window))
	if err != nil {
		return nil, err
	}
	return summarise(rs, func(r witnessstore.Result) int64 { return r.NodeID }), nil
}

// AllNodeSummaries are NodeSummaries of every node with results in
// Window: what the offer index judges its offers' reports with.
func (s *Service) AllNodeSummaries(ctx context.Context) (map[int64]Summary, error) {
	rs, err := witnessstore.AllResultsSince(ctx, s.DB, s.DB.Now().Add(-Window))
	if err != nil {
		return nil, err
	}
	return summarise(rs, func(r witnessstore.Result) int64 { return r.NodeID }), nil
}

// NodeSummary is one node's NodeSummaries.
func (s *Service) NodeSummary(ctx context.Context, nodeID int64) (Summary, error) {
	m, err := s.NodeSummaries(ctx, []int64{nodeID})
	return m[nodeID], err
}

// summarise groups results by key and source into summaries.
func summarise(rs []witnessstore.Result, key func(witnessstore.Result) int64) map[int64]Summary {
	type group struct {
		key   int64
		audit bool
	}
	by := map[group][]witnessstore.Result{}
	for _, r := range rs {
		g := group{key(r), r.Source == witnessstore.SourceAudit}
		by[g] = append(by[g], r)
	}
	out := map[int64]Summary{}
	for g, rs := range by {
		sm := out[g.key]
		if g.audit {
			sm.Audit = figures(rs)
		} else {
			sm.Renter = figures(rs)
		}
		out[g.key] = sm
	}
	return out
}

// Summary is one offer's independent figures.
func (s *Service) Summary(ctx context.Context, offerID int64) (Summary, error) {
	m, err := s.Summaries(ctx, []int64{offerID})
	return m[offerID], err
}

// figures summarises one offer's results of one source: the real ones
// if there are any, else the simulated ones, marked.
func figures(rs []witnessstore.Result) *Figures {
	var real []witnessstore.Result
	for _, r := range rs {
		if !r.Simulated {
			real = append(real, r)
		}
	}
	f := &Figures{Simulated: len(real) == 0}
	if len(real) > 0 {
		rs = real
	}
	// One vote per rental in the median, its latest figure (rs is
	// oldest first): a renter who posts many runs from one rental, or a
	// stolen credential, cannot outvote the others.
	latest := map[int64]float64{}
	for _, r := range rs {
		f.Runs++
		if r.CreatedAt.After(f.LastAt) {
			f.LastAt = r.CreatedAt
		}
		if !r.Healthy {
			f.Unhealthy++
		}
		if r.BF16TFLOPS != nil {
			latest[r.RentalID] = *r.BF16TFLOPS
		}
	}
	figs := make([]float64, 0, len(latest))
	for _, v := range latest {
		figs = append(figs, v)
	}
	if len(figs) > 0 {
		m := median(figs)
		f.MedianBF16TFLOPS = &m
	}
	return f
}

// median of a non-empty list.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n]
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
