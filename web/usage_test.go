package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"suanli/changefeed"
	"suanli/dbtest"
	"suanli/handlers"
	"suanli/locales"
	"suanli/models"
	"suanli/rentals"
	"suanli/routenames"
	"suanli/workers"
)

// The rental page shows each GPU's latest NVML telemetry from the node's
// simulated agent, marked simulated, with SVG history charts, in the
// reader's language; its usage section polls GET /rentals/{id}/usage
// while the rental runs and stops polling once it is stopped.
func TestRentalPageShowsGPUUsage(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		// The clock is real time plus an offset the test moves, so that a
		// GPU's 30 s reading cadence passes without waiting for it.
		var offset atomic.Int64
		db.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())).UTC().Truncate(time.Microsecond) }
		advance := func(d time.Duration) time.Time { offset.Add(int64(d)); return db.Now() }
		var svc *rentals.Service
		a := newAppWith(t, db, func(h *handlers.Handler) {
			svc = h.Rentals
			// The clock jumps: no node is silent for that.
			h.Rentals.SilentAfter = time.Hour
			q, err := workers.New(h.DB, workers.Options{Work: true, Rentals: h.Rentals, FetchPoll: 50 * time.Millisecond,
				AvailabilityEvery: time.Hour, MeterEvery: time.Hour, WatchEvery: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			h.Rentals.Jobs = q
			if err := q.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				_ = q.Stop(ctx)
			})
		})
		offer := rtxOffer(t, db)
		agent := startSimulatedAgent(t, a, svc, offer.NodeID)
		for i := range 4 {
			if err := agent.sim.SetUtilization(i, 80); err != nil {
				t.Fatal(err)
			}
		}
		ctx := context.Background()
		u, orgID := fundedRenter(t, db, "usage@example.com", testPassword, 100_000)
		orgs, err := db.OrgsOfUser(ctx, u.ID)
		if err != nil || len(orgs) == 0 || orgs[0].Org.ID != orgID {
			t.Fatalf("the renter's organisations: %v %v", orgs, err)
		}
		r, err := svc.Rent(ctx, u, &orgs[0].Org, &orgs[0].Membership, rentals.RentInput{OrgID: orgID, OfferID: offer.ID, GPUs: 2, SLA: "standard",
			Term: "on_demand", SSHPublicKey: testSSHKey(t)})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "the rental running", func() bool { return rentalStatus(t, db, r.ID) == models.RentalRunning })
		// The heartbeat that samples them tells the change feed (the
		// rental pages' streams wait on it): on PostgreSQL after its
		// commit (supply.NotifyGPUsSampled), on SQLite by a trigger.
		feed := changefeed.New()
		fctx, cancel := context.WithCancel(ctx)
		fdone := make(chan struct{})
		go func() { feed.Run(fctx, db, changefeed.Options{Poll: 20 * time.Millisecond}); close(fdone) }()
		t.Cleanup(func() { cancel(); <-fdone })
		select {
		case <-feed.Ready():
		case <-time.After(10 * time.Second):
			t.Fatal("the change feed was not reading within 10s")
		}
		var held []int64
		must(t, db.R.Raw("SELECT gpu_id FROM rental_gpus WHERE rental_id = ? ORDER BY gpu_id", r.ID).Scan(&held).Error == nil && len(held) == 2, "the rental's GPUs: %v", held)
		sampled := feed.Subscribe(changefeed.GPU(held[0]))
		defer sampled.Close()
		// The first heartbeat 30 s on rewrites the GPUs' readings: a sample.
		after := advance(31 * time.Second)
		eventually(t, "a sample of each rented GPU", func() bool {
			var n int64
			db.R.Raw(`SELECT COUNT(*) FROM gpu_samples s JOIN rental_gpus rg ON rg.gpu_id = s.gpu_id WHERE rg.rental_id = ? AND s.at >= ?`, r.ID, after).Scan(&n)
			return n >= 2
		})
		select {
		case <-sampled.C:
		case <-time.After(10 * time.Second):
			t.Fatal("the heartbeat's sample of a rented GPU did not reach the change feed within 10s")
		}

		renter := loggedIn(a, "renter", u)
		page := a.url(routenames.RentalsShow, strconv.FormatInt(r.ID, 10))
		fragment := a.url(routenames.RentalsUsage, strconv.FormatInt(r.ID, 10))
		for lang, title := range map[string]string{locales.EN: "GPU usage", locales.ZH: "GPU 使用情况"} {
			res, body := renter.do("GET", page, nil, "Accept-Language", lang)
			must(t, res.StatusCode == http.StatusOK, "%s rental page: %d", lang, res.StatusCode)
			contains(t, body, `id="rental-usage"`, `hx-get="`+fragment+`"`, `hx-trigger="every 15s"`, title, `id="usage-simulated"`,
				`data-metric="util_pct">80 %`, `data-metric="sm_clock_mhz">`, `<svg class="lchart"`, `data-chart="usage.util"`, `data-chart="usage.mem"`)
			must(t, strings.Count(body, `data-metric="util_pct"`) == 2, "%s: want a utilisation cell for each of the 2 GPUs", lang)
		}
		res, body := renter.do("GET", fragment, nil)
		must(t, res.StatusCode == http.StatusOK, "usage fragment: %d", res.StatusCode)
		must(t, strings.HasPrefix(strings.TrimSpace(body), `<section`) && !strings.Contains(body, "<html"), "the usage fragment is not the section alone: %s", snippet(body))
		contains(t, body, `data-metric="util_pct">80 %`, `hx-trigger="every 15s"`)

		// The API's answer (checked against the OpenAPI document, as every
		// answer in these tests is) says the same.
		res, body = renter.do("GET", a.url(routenames.APIRentalsUsage, strconv.FormatInt(r.ID, 10)), nil)
		must(t, res.StatusCode == http.StatusOK, "usage API: %d %s", res.StatusCode, snippet(body))
		var api struct {
			GPUs []struct {
				UUID    string `json:"uuid"`
				Samples []struct {
					UtilPct int `json:"util_pct"`
				} `json:"samples"`
			} `json:"gpus"`
			Simulated bool `json:"simulated"`
		}
		if err := json.Unmarshal([]byte(body), &api); err != nil {
			t.Fatal(err)
		}
		must(t, api.Simulated && len(api.GPUs) == 2, "usage API: %s", snippet(body))
		for _, g := range api.GPUs {
			must(t, len(g.Samples) > 0 && g.Samples[len(g.Samples)-1].UtilPct == 80, "GPU %s's samples %+v, want the simulated 80 %%", g.UUID, g.Samples)
		}

		// Stopped: the history stays on the page, and it no longer polls.
		if _, err := svc.Stop(ctx, r.ID, rentals.StopByUser); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the rental stopped", func() bool { return rentalStatus(t, db, r.ID) == models.RentalStopped })
		res, body = renter.do("GET", fragment, nil)
		must(t, res.StatusCode == http.StatusOK, "usage fragment, stopped: %d", res.StatusCode)
		contains(t, body, `data-metric="util_pct">80 %`, `<svg class="lchart"`)
		must(t, !strings.Contains(body, "hx-trigger"), "a stopped rental's usage still polls: %s", snippet(body))
	})
}

// withUsageHistory gives a rental that holds no GPUs two of its offer's
// node's GPUs, attached two hours ago, with a sample every 30 s since
// (for the layout of a rental page with a full usage section).
func withUsageHistory(t *testing.T, db *models.DB, rentalID int64) {
	t.Helper()
	var gs []models.GPU
	if err := db.R.Raw(`SELECT g.* FROM gpus g JOIN offers o ON o.node_id = g.node_id JOIN rentals r ON r.offer_id = o.id
		WHERE r.id = ? ORDER BY g.idx LIMIT 2`, rentalID).Scan(&gs).Error; err != nil || len(gs) != 2 {
		t.Fatalf("the rental's node's GPUs: %d, %v", len(gs), err)
	}
	now := db.Now().UTC()
	since := now.Add(-2 * time.Hour)
	for i, g := range gs {
		if err := db.W.Create(&models.RentalGPU{RentalID: rentalID, GPUID: g.ID, NodeID: g.NodeID, AttachedAt: since}).Error; err != nil {
			t.Fatal(err)
		}
		var samples []models.GPUSample
		for at, k := since, 0; at.Before(now); at, k = at.Add(30*time.Second), k+1 {
			samples = append(samples, models.GPUSample{GPUID: g.ID, At: at, UtilPct: (k*7 + i*40) % 101, MemUsedMiB: int64(8000 + k*10),
				PowerW: 250 + float64(k%50), TempC: 55 + k%20, SMClockMHz: 1755})
		}
		if err := db.W.CreateInBatches(samples, 100).Error; err != nil {
			t.Fatal(err)
		}
	}
}
