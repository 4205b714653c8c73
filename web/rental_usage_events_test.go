package web_test

import (
	"context"
	"html"
	neturl "net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/changefeed"
	"suanli/dbtest"
	"suanli/models"
	"suanli/models/supply"
	"suanli/routenames"
)

// usageSeenAttr is what the page's usage section says it shows.
var usageSeenAttr = regexp.MustCompile(`<section\s+id="rental-usage"[^>]*\sdata-usage-seen="([^"]*)"`)

// usageRental is a running rental holding two of its offer's node's
// GPUs (attached an hour ago), each with one sample, and a third GPU of
// the same node that it does not hold.
type usageRental struct {
	id      int64
	email   string
	held    [2]int64
	notHeld int64
}

func newUsageRental(t *testing.T, db *models.DB, email string) usageRental {
	t.Helper()
	u, org := fundedRenter(t, db, email, testPassword, 100_000)
	o := rtxOffer(t, db)
	r := usageRental{id: runningRental(t, db, org, u.ID, o, 500), email: email}
	var gs []models.GPU
	must(t, db.R.Where("node_id = ?", o.NodeID).Order("idx").Limit(3).Find(&gs).Error == nil && len(gs) == 3,
		"three GPUs on the offer's node: %d", len(gs))
	attached := db.Now().UTC().Add(-time.Hour)
	for i, g := range gs[:2] {
		must(t, db.W.Create(&models.RentalGPU{RentalID: r.id, GPUID: g.ID, NodeID: g.NodeID, AttachedAt: attached}).Error == nil, "attach GPU %d", g.ID)
		r.held[i] = g.ID
		sampleGPU(t, db, g.ID, 11+i)
	}
	r.notHeld = gs[2].ID
	return r
}

// sampleGPU records a telemetry sample of a GPU as the heartbeat does
// (fleet's recordSample: supply.InsertGPUSample in its transaction, then
// supply.NotifyGPUsSampled after the commit).
func sampleGPU(t *testing.T, db *models.DB, gpuID int64, util int) {
	t.Helper()
	sampleGPUs(t, db, [][2]int64{{gpuID, int64(util)}})
}

// sampleGPUs records samples of several GPUs (id, utilisation) in one
// transaction, as one heartbeat samples a node's GPUs.
func sampleGPUs(t *testing.T, db *models.DB, utils [][2]int64) {
	t.Helper()
	err := db.Tx(context.Background(), func(tx *gorm.DB) error {
		for _, u := range utils {
			if err := supply.InsertGPUSample(tx, &models.GPUSample{GPUID: u[0], At: db.Now().UTC(), UtilPct: int(u[1]), MemUsedMiB: 20480,
				PowerW: 300, TempC: 64, SMClockMHz: 2520}); err != nil {
				return err
			}
		}
		return nil
	})
	must(t, err == nil, "sample GPUs %v: %v", utils, err)
	ids := make([]int64, len(utils))
	for i, u := range utils {
		ids[i] = u[0]
	}
	err = supply.NotifyGPUsSampled(context.Background(), db, ids)
	must(t, err == nil, "notify samples of GPUs %v: %v", ids, err)
}

// usageStreamURL is the rental page's event stream as its script opens
// it: the live block's data-events-url with the usage section's
// data-usage-seen. The section still names its 15 s poll (the fallback).
func usageStreamURL(t *testing.T, a *app, ac *actor, id int64) string {
	t.Helper()
	page := ac.page(t, a.url(routenames.RentalsShow, idParam(id)), "en", 200)
	ev := eventsURLAttr.FindStringSubmatch(page)
	seen := usageSeenAttr.FindStringSubmatch(page)
	must(t, ev != nil && seen != nil && seen[1] != "", "the page names no event stream or no usage it shows: %s", snippet(page))
	contains(t, page, `hx-get="`+a.url(routenames.RentalsUsage, idParam(id))+`"`, `hx-trigger="every 15s"`)
	return a.srv.URL + html.UnescapeString(ev[1]) + "&usage=" + neturl.QueryEscape(html.UnescapeString(seen[1]))
}

// fromStream drops the test's own writes from statements it logged.
func fromStream(stmts []string) []string {
	var out []string
	for _, s := range stmts {
		// The writer's statements: the test's inserts and updates, and
		// the heartbeat's notification after its commit.
		if u := strings.ToUpper(strings.TrimSpace(s)); !strings.HasPrefix(u, "INSERT") && !strings.HasPrefix(u, "UPDATE") &&
			!strings.HasPrefix(u, "SELECT SUANLI_NOTIFY_GPUS") {
			out = append(out, s)
		}
	}
	return out
}

// The rental page's usage section follows the rental over the page's
// event stream: the stream sends nothing for it while the page is
// current and nothing changes — and runs no statement — then the
// section when one of the rental's GPUs is sampled, reading only the
// samples.
func TestRentalEventsPushTheUsageSection(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a, _ := watchApp(t, db, 30*time.Millisecond)
		r := newUsageRental(t, db, "usage-events@example.com")
		ac := loginWith(a, "renter", r.email, testPassword)
		url := usageStreamURL(t, a, ac, r.id)

		sql := logSQL(db)
		res, _ := ac.do("GET", a.url(routenames.RentalsUsage, idParam(r.id)), nil)
		must(t, res.StatusCode == 200, "the polled section: %d", res.StatusCode)
		_, poll := sql.take()
		t.Logf("%s: polling instead: %d statements per GET …/usage, %d/min per page", db.Dialect, len(poll), 4*len(poll))
		s := openStream(t, ac.c, url)
		s.want(t, "card", `id="rental-live"`)
		// The page's section is current: the stream says nothing of it
		// before it waits (its first keep-alive).
		if ev, ok := s.next(t, false); !ok || ev.name != ":" {
			t.Fatalf("after the block: %q (open: %v), want a keep-alive: %s", ev.name, ok, snippet(ev.data))
		}
		_, other := sql.take()
		t.Logf("%s: connecting with the usage section cost %d statements (once per page view)", db.Dialect, len(other))
		for range 3 {
			if ev, ok := s.next(t, false); !ok || ev.name != ":" {
				t.Fatalf("got %q (open: %v) while nothing changed", ev.name, ok)
			}
		}
		if _, other := sql.take(); len(other) > 0 {
			t.Errorf("an idle stream following the usage section ran %d statements: %q", len(other), other)
		}

		sampleGPU(t, db, r.held[1], 97)
		ev := s.want(t, "usage", `<section id="rental-usage"`, `data-metric="util_pct">97 %`, `data-metric="util_pct">11 %`, `hx-trigger="every 15s"`)
		if strings.Contains(ev.data, "<html") {
			t.Errorf("the usage event is more than the section: %s", snippet(ev.data))
		}
		_, other = sql.take()
		pushed := fromStream(other)
		t.Logf("%s: one sample pushed cost %d statements: %q", db.Dialect, len(pushed), pushed)
		if len(pushed) != 1 || !strings.Contains(pushed[0], "gpu_samples") {
			t.Errorf("a pushed sample ran %q, want the one read of the samples", pushed)
		}
		// A heartbeat samples both GPUs in one transaction: one section
		// with both, and then no other before the next change.
		sampleGPUs(t, db, [][2]int64{{r.held[0], 55}, {r.held[1], 66}})
		s.want(t, "usage", `data-metric="util_pct">55 %`, `data-metric="util_pct">66 %`)
		must(t, db.W.Exec("UPDATE rentals SET image = 'registry.example/usage:1' WHERE id = ?", r.id).Error == nil, "update image")
		s.want(t, "card", `id="rental-image">registry.example/usage:1<`)
		_, other = sql.take()
		var reads []string
		for _, q := range fromStream(other) {
			if strings.Contains(q, "gpu_samples") {
				reads = append(reads, q)
			}
		}
		t.Logf("%s: a heartbeat's two samples cost %d reads of the samples", db.Dialect, len(reads))
		// One when both notifications arrive together (what these runs
		// show); two if the stream woke between them; never one per wake
		// beyond that.
		must(t, len(reads) >= 1 && len(reads) <= 2, "%s: a heartbeat's two samples cost %d reads of the samples: %q", db.Dialect, len(reads), reads)
	})
}

// A sample of a GPU the rental does not hold sends its stream nothing
// and costs it nothing: the stream listens to its own GPUs only, and a
// change of the rental committed after that sample reaches the page
// with no usage section before it.
func TestRentalEventsIgnoreOtherGPUsSamples(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a, feed := watchApp(t, db, time.Hour)
		r := newUsageRental(t, db, "usage-other@example.com")
		ac := loginWith(a, "renter", r.email, testPassword)
		url := usageStreamURL(t, a, ac, r.id)
		// A stream without ?usage= (an older page) follows no GPU.
		plain := openStream(t, ac.c, strings.SplitN(url, "&usage=", 2)[0])
		plain.want(t, "card", `id="rental-live"`)
		s := openStream(t, ac.c, url)
		s.want(t, "card", `id="rental-live"`)
		// The stream subscribes right after the block: wait for it (the
		// count changes), with a deadline.
		for deadline := time.After(10 * time.Second); ; {
			changed := feed.SubscribersChanged() // before the count: no change is missed
			if feed.Subscribed(changefeed.GPU(r.held[0])) > 0 {
				break
			}
			select {
			case <-changed:
			case <-deadline:
				t.Fatal("the stream did not subscribe to its rental's GPUs within 10s")
			}
		}
		for _, g := range r.held {
			must(t, feed.Subscribed(changefeed.GPU(g)) == 1, "GPU %d: %d subscriptions, want the one stream's", g, feed.Subscribed(changefeed.GPU(g)))
		}
		must(t, feed.Subscribed(changefeed.GPU(r.notHeld)) == 0, "a GPU the rental does not hold has %d subscriptions", feed.Subscribed(changefeed.GPU(r.notHeld)))

		sql := logSQL(db)
		heard := feed.Subscribe(changefeed.GPU(r.notHeld))
		sampleGPU(t, db, r.notHeld, 99)
		waitHeard(t, heard, "the other GPU's sample")
		must(t, db.W.Exec("UPDATE rentals SET image = 'registry.example/usage:2' WHERE id = ?", r.id).Error == nil, "update image")
		s.want(t, "card", `id="rental-image">registry.example/usage:2<`)
		plain.want(t, "card", `id="rental-image">registry.example/usage:2<`)
		_, other := sql.take()
		for _, q := range fromStream(other) {
			if strings.Contains(q, "gpu_samples") {
				t.Errorf("another GPU's sample made a stream read the samples: %s", q)
			}
		}
		// Its own GPU's sample still reaches it (and not the older page).
		sampleGPU(t, db, r.held[0], 42)
		s.want(t, "usage", `data-metric="util_pct">42 %`)
		must(t, db.W.Exec("UPDATE rentals SET image = 'registry.example/usage:3' WHERE id = ?", r.id).Error == nil, "update image")
		plain.want(t, "card", `id="rental-image">registry.example/usage:3<`)
	})
}

// A page whose usage section is no longer current when its stream
// connects (a sample came in between) gets the section at once, after
// the block.
func TestRentalEventsSendAStaleUsageSectionAtOnce(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a, _ := watchApp(t, db, time.Hour)
		r := newUsageRental(t, db, "usage-stale@example.com")
		ac := loginWith(a, "renter", r.email, testPassword)
		url := usageStreamURL(t, a, ac, r.id)
		sampleGPU(t, db, r.held[0], 73)
		s := openStream(t, ac.c, url)
		s.want(t, "card", `id="rental-live"`)
		s.want(t, "usage", `data-metric="util_pct">73 %`)
	})
}

// In a real browser the usage section is pushed: a sample shows without
// the section polling GET /rentals/{id}/usage.
func TestBrowserRentalUsageIsPushed(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	chromiumPath(t)
	db := dbtest.SQLite(t)
	a, _ := watchApp(t, db, time.Hour)
	r := newUsageRental(t, db, "usage-browser@example.com")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	b := newEnglishBrowser(t, ctx)
	open(t, b, a.srv.URL+a.url(routenames.AuthLogin), "log-in page")
	typeInto(t, b, [][2]string{{"f-email", r.email}, {"f-password", testPassword}})
	click(t, b, "#login-submit", "log in")
	open(t, b, a.srv.URL+a.url(routenames.RentalsShow, idParam(r.id)), "rental page")
	// The stream opens 3 s after the page loads: the card's push says so.
	must(t, db.W.Exec("UPDATE rentals SET image = 'registry.example/usage:9' WHERE id = ?", r.id).Error == nil, "update image")
	waitFor(t, b, `(document.getElementById("rental-image") || {}).textContent === "registry.example/usage:9"`, "the pushed block")

	sampleGPU(t, db, r.held[1], 88)
	waitFor(t, b, `[...document.querySelectorAll("#rental-usage [data-metric=util_pct]")].some(e => e.textContent.trim() === "88 %")`, "the pushed usage section")
	must(t, eval[bool](t, b, `!!document.querySelector("#rental-usage[hx-trigger][data-usage-seen]")`), "the pushed section lost its fallback poll")
	polls := eval[int](t, b, `performance.getEntriesByType("resource").filter(e => e.name.includes("/usage")).length`)
	must(t, polls == 0, "the page polled /usage %d times while its stream was open", polls)
	// The section's own poll comes only every 15 s, later than this test
	// looks: ask the script directly whether it would cancel one, as htmx
	// asks it before every request (htmx:beforeRequest, cancelable).
	cancelled := eval[bool](t, b, `(() => {
		const ev = new CustomEvent("htmx:beforeRequest", {bubbles: true, cancelable: true});
		document.getElementById("rental-usage").dispatchEvent(ev);
		return ev.defaultPrevented;
	})()`)
	must(t, cancelled, "the usage section's poll would be sent while its stream delivers")
}
