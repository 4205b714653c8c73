package web_test

import (
	"context"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"suanli/accounts"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/models"
	"suanli/routenames"
	"suanli/sla"
)

// The API's reads of what console pages show and no other endpoint gave
// (web/parity_test.go's consolePages): a provider's capacity and the
// caller's providers, a wallet's top-ups, a rental's SLA. Each answers
// what the page's use case computes, and nothing of another organisation
// or provider.

// pageAPICovered lists those routes, whose authorisation the tests in
// this file check (another organisation's or provider's user gets 404).
var pageAPICovered = []string{
	routenames.APIProviderCapacity, routenames.APIProvidersMine,
	routenames.APIWalletTopupsList, routenames.APIWalletTopupsShow,
	routenames.APIRentalsSLA,
}

// Every one of them asks an anonymous caller, or one with a bad token, to
// authenticate, and gives nothing away.
func TestPageAPINeedsCredentials(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	seen := map[string]bool{}
	for _, r := range a.e.Routes() {
		for _, name := range pageAPICovered {
			if r.Name != name {
				continue
			}
			seen[name] = true
			path := strings.ReplaceAll(strings.ReplaceAll(r.Path, ":id", "1"), ":pid", "1")
			for _, token := range []string{"", "sl_not-a-token"} {
				st, out, raw := apiCall(a, token, r.Method, path, "")
				errObj, _ := out["error"].(map[string]any)
				if st != http.StatusUnauthorized || errObj["code"] != "unauthorised" {
					t.Errorf("%s %s with token %q: %d %s, want 401 unauthorised", r.Method, path, token, st, raw)
				}
			}
		}
	}
	for _, name := range pageAPICovered {
		must(t, seen[name], "route %q is not in the route table", name)
	}
}

// apiNodeCapacity is a node of GET /api/v1/provider/capacity, as the
// tests read it.
type apiNodeCapacity struct {
	NodeID    int64   `json:"node_id"`
	Name      string  `json:"name"`
	Status    string  `json:"status"`
	GPUs      int     `json:"gpus"`
	Free      int     `json:"free"`
	Rented    int     `json:"rented"`
	Reserved  int     `json:"reserved"`
	Unhealthy int     `json:"unhealthy"`
	Committed []int   `json:"committed"`
	Util      float64 `json:"utilisation_30d_pct"`
}

type apiCapacity struct {
	ProviderID int64             `json:"provider_id"`
	From       time.Time         `json:"from"`
	Days       int               `json:"days"`
	Nodes      []apiNodeCapacity `json:"nodes"`
}

// A provider's capacity through the API is the capacity page's (the same
// providers.Service.Capacity): GPUs free, rented on demand, reserved and
// unhealthy per node, committed ahead and used lately. Members see it,
// outsiders (another provider's owner, a renter) are told it does not
// exist; GET /api/v1/providers lists the caller's providers, as /provider
// offers them to choose from.
func TestProviderCapacityAndProvidersThroughTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newProviderAPIFixture(t, db)
		a := f.a
		ctx := context.Background()
		pidA := idParam(f.provA.Provider.ID)

		// Node A's GPUs: two free, one unhealthy, one held by an on-demand
		// rental, one busy without a rental (the provider's).
		var offerA models.Offer
		must(t, db.R.First(&offerA, f.offerA).Error == nil, "offer A")
		states := []models.GPUState{models.GPUFree, models.GPUFree, models.GPUUnhealthy, models.GPUBusy, models.GPUBusy}
		gpus := make([]models.GPU, len(states))
		for i, s := range states {
			gpus[i] = models.GPU{NodeID: f.nodeA, Idx: i, UUID: "GPU-capacity-" + pidA + "-" + idParam(int64(i)), GPUModel: "a100-40g-sxm",
				State: s, Name: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, Health: models.GPUHealthy}
			must(t, db.W.Create(&gpus[i]).Error == nil, "GPU %d", i)
		}
		renter, err := db.UserByEmail(ctx, "renter@example.com")
		must(t, err == nil, "the renter: %v", err)
		oms := mustOrgs(t, db, renter.ID)
		rental := mustRunningRental(t, db, oms[0].Org.ID, renter.ID, offerA)
		must(t, db.W.Model(&models.Rental{}).Where("id = ?", rental).Update("node_id", f.nodeA).Error == nil, "the rental's node")
		must(t, db.W.Create(&models.RentalGPU{RentalID: rental, GPUID: gpus[3].ID, NodeID: f.nodeA, AttachedAt: db.Now().UTC().Add(-time.Hour)}).Error == nil, "the rental's GPU")

		capacity := a.url(routenames.APIProviderCapacity)
		got := decode[apiCapacity](t, mustStatus(t, a, f.tokA, "GET", capacity, "", http.StatusOK))
		owner, err := db.UserByEmail(ctx, "a@prov-a.example")
		must(t, err == nil, "owner A: %v", err)
		want, err := testHandler(db, a.index).Providers.Capacity(ctx, owner, f.provA.Provider.ID)
		must(t, err == nil, "the page's capacity: %v", err)
		must(t, got.ProviderID == f.provA.Provider.ID && got.From.Equal(want.From) && got.Days == 30 && len(got.Nodes) == len(want.Nodes) && len(got.Nodes) == 1,
			"capacity: %+v, the page's from %v with %d nodes", got, want.From, len(want.Nodes))
		n, w := got.Nodes[0], want.Nodes[0]
		must(t, n.NodeID == f.nodeA && n.Name == w.Node.Name && n.Status == string(w.Node.Status), "the node: %+v", n)
		must(t, n.GPUs == 5 && n.Free == 2 && n.Rented == 1 && n.Reserved == 1 && n.Unhealthy == 1,
			"GPUs: %d, free %d, rented %d, reserved %d, unhealthy %d; want 5 2 1 1 1", n.GPUs, n.Free, n.Rented, n.Reserved, n.Unhealthy)
		must(t, n.GPUs == w.Total && n.Free == w.Free && n.Rented == w.Rented && n.Reserved == w.Reserved && n.Unhealthy == w.Unhealthy,
			"the API's %+v is not the page's %+v", n, w)
		must(t, len(n.Committed) == 30 && n.Committed[0] == w.Committed[0] && n.Committed[29] == w.Committed[29], "committed: %v", n.Committed)
		// One GPU of five held since before the node was added: a fifth of its GPU-seconds.
		must(t, math.Abs(n.Util-20) < 0.5 && math.Abs(w.Utilisation30dPct-20) < 0.5, "utilisation %.3f%% (the page's %.3f%%), want 20%%", n.Util, w.Utilisation30dPct)

		// Outsiders are told it does not exist; a platform admin may look.
		mustStatus(t, a, f.tokB, "GET", capacity+"?provider_id="+pidA, "", http.StatusNotFound)
		mustStatus(t, a, f.tokRenter, "GET", capacity+"?provider_id="+pidA, "", http.StatusNotFound)
		mustStatus(t, a, f.tokRenter, "GET", capacity, "", http.StatusNotFound)
		mustStatus(t, a, f.tokAdmin, "GET", capacity+"?provider_id="+pidA, "", http.StatusOK)
		mustInvalid(t, a, f.tokA, "GET", capacity+"?provider_id=abc", "", http.StatusBadRequest, "provider_id")
		// B's own capacity is B's: none of A's nodes.
		b := decode[apiCapacity](t, mustStatus(t, a, f.tokB, "GET", capacity, "", http.StatusOK))
		must(t, b.ProviderID == f.provB.Provider.ID && len(b.Nodes) == 1 && b.Nodes[0].NodeID == f.nodeB && b.Nodes[0].GPUs == 0, "B's capacity: %+v", b)

		// The caller's providers.
		type mine struct {
			Providers []struct {
				ProviderID  int64  `json:"provider_id"`
				Role        string `json:"role"`
				CompanyName string `json:"company_name"`
				Status      string `json:"status"`
			} `json:"providers"`
		}
		providersURL := a.url(routenames.APIProvidersMine)
		m := decode[mine](t, mustStatus(t, a, f.tokA, "GET", providersURL, "", http.StatusOK))
		must(t, len(m.Providers) == 1 && m.Providers[0].ProviderID == f.provA.Provider.ID && m.Providers[0].Role == models.RoleOwner &&
			m.Providers[0].CompanyName == "Provider A" && m.Providers[0].Status == models.OrgApproved, "A's owner's providers: %+v", m)
		must(t, len(decode[mine](t, mustStatus(t, a, f.tokRenter, "GET", providersURL, "", http.StatusOK)).Providers) == 0, "a renter has providers")
		must(t, len(decode[mine](t, mustStatus(t, a, f.tokAdmin, "GET", providersURL, "", http.StatusOK)).Providers) == 0, "a platform admin is listed as a member")

		// A member of A sees A's capacity and lists A with their role.
		mustMember(t, db, *f.provA.Provider.OrgID, renter, models.RoleMember)
		mustStatus(t, a, f.tokRenter, "GET", capacity, "", http.StatusOK)
		m = decode[mine](t, mustStatus(t, a, f.tokRenter, "GET", providersURL, "", http.StatusOK))
		must(t, len(m.Providers) == 1 && m.Providers[0].ProviderID == f.provA.Provider.ID && m.Providers[0].Role == models.RoleMember, "the member's providers: %+v", m)

		// In two providers, both are listed, and the capacity needs provider_id.
		ownerB, err := db.UserByEmail(ctx, "b@prov-b.example")
		must(t, err == nil, "owner B: %v", err)
		mustMember(t, db, *f.provA.Provider.OrgID, ownerB, models.RoleAdmin)
		m = decode[mine](t, mustStatus(t, a, f.tokB, "GET", providersURL, "", http.StatusOK))
		must(t, len(m.Providers) == 2, "B's owner, also A's admin: %+v", m)
		mustInvalid(t, a, f.tokB, "GET", capacity, "", http.StatusBadRequest, "provider_id")
		mustStatus(t, a, f.tokB, "GET", capacity+"?provider_id="+pidA, "", http.StatusOK)
	})
}

// apiTopup is a top-up of the API, as the tests read it.
type apiTopup struct {
	ID          int64      `json:"id"`
	OrgID       int64      `json:"org_id"`
	Status      string     `json:"status"`
	AmountFen   int64      `json:"amount_fen"`
	ReceivedFen *int64     `json:"received_fen"`
	Method      string     `json:"method"`
	Reference   string     `json:"reference"`
	PaidAt      *time.Time `json:"paid_at"`
	Bank        *struct {
		Account string `json:"account"`
	} `json:"bank"`
}

// A top-up started through the API can be followed through it until it
// is paid, as its page and the wallet page show it; another
// organisation's top-ups are not found, a member's are seen.
func TestTopupsThroughTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		ctx := context.Background()
		owner, ownerTok := verifiedWithToken(t, a, "owner@topups.example")
		_, otherTok := verifiedWithToken(t, a, "other@topups.example")
		member, memberTok := verifiedWithToken(t, a, "member@topups.example")
		team, err := (&accounts.Service{DB: db}).CreateOrg(ctx, owner, models.OrgTeam, "Topup Team")
		must(t, err == nil, "team: %v", err)
		teamID := idParam(team.ID)
		list, show := a.url(routenames.APIWalletTopupsList), func(id int64) string { return a.url(routenames.APIWalletTopupsShow, idParam(id)) }

		started := decode[apiTopup](t, mustStatus(t, a, ownerTok, "POST", a.url(routenames.APIWalletTopups),
			`{"amount_fen":12345,"method":"bank_transfer","org_id":`+teamID+`}`, http.StatusCreated))
		mustStatus(t, a, ownerTok, "POST", a.url(routenames.APIWalletTopups), `{"amount_fen":1000,"method":"bank_transfer"}`, http.StatusCreated)

		got := decode[apiTopup](t, mustStatus(t, a, ownerTok, "GET", show(started.ID), "", http.StatusOK))
		must(t, got.ID == started.ID && got.OrgID == team.ID && got.Status == models.TopupPending && got.AmountFen == 12345 && got.ReceivedFen == nil &&
			got.Method == models.MethodBank && got.Reference == started.Reference && got.Reference != "" && got.PaidAt == nil && got.Bank != nil && got.Bank.Account != "",
			"the pending top-up: %+v", got)
		// The list is the organisation's: the team's one, not the personal wallet's.
		type topups struct {
			OrgID  int64      `json:"org_id"`
			Topups []apiTopup `json:"topups"`
		}
		l := decode[topups](t, mustStatus(t, a, ownerTok, "GET", list+"?org_id="+teamID, "", http.StatusOK))
		must(t, l.OrgID == team.ID && len(l.Topups) == 1 && l.Topups[0].ID == started.ID && l.Topups[0].Reference == started.Reference, "the team's top-ups: %+v", l)
		l = decode[topups](t, mustStatus(t, a, ownerTok, "GET", list, "", http.StatusOK))
		must(t, len(l.Topups) == 1 && l.Topups[0].AmountFen == 1000, "the personal wallet's top-ups: %+v", l)

		// Another organisation's user is told they do not exist; so is a
		// top-up that does not.
		mustStatus(t, a, otherTok, "GET", show(started.ID), "", http.StatusNotFound)
		mustStatus(t, a, otherTok, "GET", list+"?org_id="+teamID, "", http.StatusNotFound)
		mustStatus(t, a, ownerTok, "GET", show(started.ID+1000), "", http.StatusNotFound)
		mustStatus(t, a, ownerTok, "GET", a.url(routenames.APIWalletTopupsShow, "abc"), "", http.StatusNotFound)
		mustInvalid(t, a, ownerTok, "GET", list+"?org_id=abc", "", http.StatusBadRequest, "org_id")
		// A member of the team sees its wallet's.
		mustMember(t, db, team.ID, member, models.RoleMember)
		must(t, decode[apiTopup](t, mustStatus(t, a, memberTok, "GET", show(started.ID), "", http.StatusOK)).ID == started.ID, "the member's view")

		// Paid: what arrived, when, and no more bank details to send to.
		admin := mustUser(t, db, "root@topups.example", "Root", true)
		must(t, (&billing.Wallet{DB: db}).ConfirmBankTransfer(ctx, admin, started.ID, 12000) == nil, "confirm")
		got = decode[apiTopup](t, mustStatus(t, a, ownerTok, "GET", show(started.ID), "", http.StatusOK))
		must(t, got.Status == models.TopupPaid && got.ReceivedFen != nil && *got.ReceivedFen == 12000 && got.PaidAt != nil && got.Bank == nil, "the paid top-up: %+v", got)
	})
}

// A rental's SLA through the API is its page's SLA section (the same
// sla.OfRental): the tier's promise and, per month, the downtime
// measured from the timeline and the credit due. Another organisation's
// rental is not found; a member sees it.
func TestRentalSLAThroughTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		// One clock for the server and the check, so that an open month's
		// figures are the same in both.
		now := time.Now().UTC().Truncate(time.Second)
		db.Now = func() time.Time { return now }
		a := newApp(t, db)
		ctx := context.Background()
		owner, ownerTok := verifiedWithToken(t, a, "owner@sla-api.example")
		_, otherTok := verifiedWithToken(t, a, "other@sla-api.example")
		member, memberTok := verifiedWithToken(t, a, "member@sla-api.example")
		team, err := (&accounts.Service{DB: db}).CreateOrg(ctx, owner, models.OrgTeam, "SLA Team")
		must(t, err == nil, "team: %v", err)
		var offer models.Offer
		must(t, db.R.Where("status = ?", models.OfferListed).Order("id").First(&offer).Error == nil, "an offer")

		// Running for three hours, down for the middle one.
		running := mustRunningRental(t, db, team.ID, owner.ID, offer)
		since := now.Add(-3 * time.Hour)
		must(t, db.W.Model(&models.Rental{}).Where("id = ?", running).Updates(map[string]any{"running_since": since, "sla": "premium"}).Error == nil, "backdate")
		for _, e := range []models.RentalEvent{{At: since, Kind: "running"}, {At: now.Add(-2 * time.Hour), Kind: "incident"}, {At: now.Add(-time.Hour), Kind: "running"}} {
			e.RentalID = running
			must(t, db.W.Create(&e).Error == nil, "event %s", e.Kind)
		}
		pending := mustRental(t, db, team.ID, owner.ID, offer)

		type period struct {
			Month           string    `json:"month"`
			From            time.Time `json:"from"`
			To              time.Time `json:"to"`
			Tier            string    `json:"tier"`
			PeriodSeconds   int64     `json:"period_seconds"`
			DowntimeSeconds int64     `json:"downtime_seconds"`
			UptimePct       float64   `json:"uptime_pct"`
			CreditPct       int       `json:"credit_pct"`
			DowntimeCostFen int64     `json:"downtime_cost_fen"`
			CreditFen       int64     `json:"credit_fen"`
			Open            bool      `json:"open"`
			Recorded        bool      `json:"recorded"`
			Credited        bool      `json:"credited"`
		}
		type terms struct {
			RentalID  int64   `json:"rental_id"`
			Tier      string  `json:"tier"`
			UptimePct float64 `json:"uptime_pct"`
			Credits   []struct {
				BelowPct  float64 `json:"below_pct"`
				CreditPct int     `json:"credit_pct"`
			} `json:"credits"`
			Free    bool     `json:"free"`
			Periods []period `json:"periods"`
		}
		got := decode[terms](t, mustStatus(t, a, ownerTok, "GET", a.url(routenames.APIRentalsSLA, idParam(running)), "", http.StatusOK))
		d, err := testHandler(db, a.index).Rentals.Detail(ctx, running)
		must(t, err == nil, "detail: %v", err)
		want, err := sla.OfRental(ctx, db, &d.Rental, d.Events, d.At)
		must(t, err == nil, "the page's SLA: %v", err)
		must(t, got.RentalID == running && got.Tier == "premium" && got.UptimePct == want.Tier.UptimePct && len(got.Credits) == len(want.Tier.Credits) &&
			got.Credits[0].BelowPct == want.Tier.Credits[0].BelowPct && !got.Free && len(got.Periods) == len(want.Periods) && len(got.Periods) > 0,
			"the SLA: %+v; the page's %+v", got, want)
		var down int64
		for i, p := range got.Periods {
			w := want.Periods[i]
			must(t, p.Month == w.Period && p.From.Equal(w.From) && p.To.Equal(w.To) && p.Tier == w.Tier.Name && p.PeriodSeconds == w.PeriodSecs &&
				p.DowntimeSeconds == w.DowntimeSecs && p.UptimePct == w.UptimePct && p.CreditPct == w.CreditPct && p.DowntimeCostFen == w.DowntimeCostFen &&
				p.CreditFen == w.CreditFen && p.Recorded == w.Recorded && p.Credited == (w.TxnID != nil), "month %d: the API's %+v, the page's %+v", i, p, w)
			down += p.DowntimeSeconds
			// (Three hours may straddle a month's start: each month with
			// downtime is below the promise.)
			must(t, p.DowntimeSeconds == 0 || (p.CreditPct > 0 && p.DowntimeCostFen > 0), "month %s: down %d s, credit %d%%, downtime's cost %d fen",
				p.Month, p.DowntimeSeconds, p.CreditPct, p.DowntimeCostFen)
		}
		last := got.Periods[len(got.Periods)-1]
		must(t, down == 3600 && last.Open && !last.Recorded && !last.Credited, "an hour down of three: %d s down, the last month %+v", down, last)

		// A rental that never ran has no months yet.
		p := decode[terms](t, mustStatus(t, a, ownerTok, "GET", a.url(routenames.APIRentalsSLA, idParam(pending)), "", http.StatusOK))
		must(t, p.Tier == "standard" && len(p.Periods) == 0, "a pending rental's SLA: %+v", p)

		// Another organisation's user is told it does not exist; a member sees it.
		mustStatus(t, a, otherTok, "GET", a.url(routenames.APIRentalsSLA, idParam(running)), "", http.StatusNotFound)
		mustStatus(t, a, ownerTok, "GET", a.url(routenames.APIRentalsSLA, "999999"), "", http.StatusNotFound)
		mustMember(t, db, team.ID, member, models.RoleMember)
		mustStatus(t, a, memberTok, "GET", a.url(routenames.APIRentalsSLA, idParam(running)), "", http.StatusOK)
	})
}
