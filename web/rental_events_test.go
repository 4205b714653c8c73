package web_test

import (
	"bufio"
	"context"
	"html"
	"net"
	"net/http"
	"net/http/cookiejar"
	neturl "net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm/logger"

	"suanli/accounts"
	"suanli/changefeed"
	"suanli/dbtest"
	"suanli/handlers"
	"suanli/models"
	"suanli/routenames"
)

// watchApp is an app whose handlers hear the database's changes through
// a running change feed; its event streams keep alive every keepAlive
// and never refresh on a timer.
func watchApp(t *testing.T, db *models.DB, keepAlive time.Duration) (*app, *changefeed.Feed) {
	t.Helper()
	return watchAppWith(t, db, keepAlive, 20*time.Millisecond, -1)
}

// watchAppWith is watchApp with the feed's SQLite poll interval (0: the
// default) and the streams' refresh (negative: never).
func watchAppWith(t *testing.T, db *models.DB, keepAlive, poll, refresh time.Duration) (*app, *changefeed.Feed) {
	t.Helper()
	feed := changefeed.New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { feed.Run(ctx, db, changefeed.Options{Poll: poll}); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	a := newAppWith(t, db, func(h *handlers.Handler) {
		h.Changes, h.StreamKeepAlive, h.StreamRefresh = feed, keepAlive, refresh
	})
	// Registered after the server's: runs first, so no stream holds
	// the server's Close.
	t.Cleanup(feed.Close)
	select {
	case <-feed.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the change feed was not reading within 10s")
	}
	return a, feed
}

// settle waits until feed has heard every change committed so far: it
// hears them in commit order, so it waits for one more, to the org.
func settle(t *testing.T, feed *changefeed.Feed, db *models.DB, org int64) {
	t.Helper()
	s := feed.Subscribe(changefeed.Org(org))
	defer s.Close()
	must(t, db.W.Exec("UPDATE orgs SET name = name WHERE id = ?", org).Error == nil, "touch the org")
	select {
	case <-s.C:
	case <-time.After(10 * time.Second):
		t.Fatal("the feed heard nothing within 10s")
	}
}

// sqlLog records the SQL statements gorm runs on a database's handles.
type sqlLog struct {
	logger.Interface
	mu    sync.Mutex
	stmts []string
}

func (l *sqlLog) LogMode(logger.LogLevel) logger.Interface { return l }

func (l *sqlLog) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	s, _ := fc()
	l.mu.Lock()
	l.stmts = append(l.stmts, s)
	l.mu.Unlock()
}

func logSQL(db *models.DB) *sqlLog {
	l := &sqlLog{Interface: logger.Discard}
	db.W.Config.Logger = l
	db.R.Config.Logger = l
	return l
}

// take returns the statements since the last take: the process's change
// feed poller's (change_log) apart from the rest.
func (l *sqlLog) take() (feed, other []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.stmts {
		if strings.Contains(s, "change_log") || strings.Contains(s, "sqlite_sequence") {
			feed = append(feed, s)
		} else {
			other = append(other, s)
		}
	}
	l.stmts = nil
	return feed, other
}

// liveEvent is one server-sent event; a comment has the name ":".
type liveEvent struct{ name, data string }

// liveStream reads a response's events.
type liveStream struct {
	res    *http.Response
	events chan liveEvent
}

func openStream(t *testing.T, c *http.Client, url string) *liveStream {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, res.Header.Get("Content-Type"))
	}
	if enc := res.Header.Get("Content-Encoding"); enc != "" {
		t.Errorf("the stream is encoded %q: events would wait for the encoder", enc)
	}
	s := &liveStream{res: res, events: make(chan liveEvent, 1000)}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev liveEvent
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" || data != nil {
					ev.data = strings.Join(data, "\n")
					s.events <- ev
				}
				ev, data = liveEvent{}, nil
			case strings.HasPrefix(line, ":"):
				s.events <- liveEvent{name: ":"}
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	return s
}

// next returns the next event, comments too unless skipComments; ok is
// false when the stream ended.
func (s *liveStream) next(t *testing.T, skipComments bool) (liveEvent, bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return ev, false
			}
			if skipComments && ev.name == ":" {
				continue
			}
			return ev, true
		case <-deadline:
			t.Fatal("no event within 10s")
		}
	}
}

func (s *liveStream) want(t *testing.T, name string, wants ...string) liveEvent {
	t.Helper()
	ev, ok := s.next(t, true)
	if !ok || ev.name != name {
		t.Fatalf("got event %q (stream open: %v), want %q: %s", ev.name, ok, name, snippet(ev.data))
	}
	contains(t, ev.data, wants...)
	return ev
}

func (s *liveStream) ends(t *testing.T) {
	t.Helper()
	if ev, ok := s.next(t, true); ok {
		t.Fatalf("the stream went on with %q", ev.name)
	}
}

var eventsURLAttr = regexp.MustCompile(`data-events-url="([^"]+)"`)

// The rental page's live block streams: the page names its stream, which
// sends the block at once, then nothing but keep-alives while nothing
// changes — and no SQL statement at all — then the block again when the
// rental changes, a reload when its status does, and the end when it is
// settled. Another organisation's rental is 404, as on the live route;
// a client that does not take a stream gets the block once.
func TestRentalEventsStreamTheLiveBlock(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a, _ := watchApp(t, db, 30*time.Millisecond)
		const email = "events@example.com"
		u, org := fundedRenter(t, db, email, testPassword, 100_000)
		id := runningRental(t, db, org, u.ID, rtxOffer(t, db), 500)
		ac := loginWith(a, "renter", email, testPassword)
		page := ac.page(t, a.url(routenames.RentalsShow, idParam(id)), "en", 200)
		m := eventsURLAttr.FindStringSubmatch(page)
		must(t, m != nil, "the rental page names no event stream: %s", snippet(page))
		events := html.UnescapeString(m[1])
		must(t, strings.HasPrefix(events, a.url(routenames.RentalsEvents, idParam(id))+"?seen="), "stream %q", events)
		contains(t, page, "/static/rental-events.")

		// Outsiders: 404 as on the live route, and anonymous visitors log in.
		stranger := "events-stranger@example.com"
		sv, _ := fundedRenter(t, db, stranger, testPassword, 0)
		sc := loggedIn(a, "stranger", sv)
		res, _ := sc.do("GET", events, nil, "Accept", "text/event-stream")
		must(t, res.StatusCode == http.StatusNotFound, "another organisation's rental: %d", res.StatusCode)
		res, _ = a.get(events, "Accept", "text/event-stream")
		must(t, res.StatusCode == http.StatusSeeOther, "anonymous: %d", res.StatusCode)
		// Without a stream: the block once, then "poll".
		res, body := ac.do("GET", events, nil)
		must(t, res.StatusCode == http.StatusOK, "one-shot: %d", res.StatusCode)
		contains(t, body, "event: card\n", `data: <section class="card quote" id="rental-live"`, "event: poll\n")

		sql := logSQL(db)
		s := openStream(t, ac.c, a.srv.URL+events)
		s.want(t, "card", `id="rental-live"`, `data-events-url=`, `id="rental-runway"`)
		_, other := sql.take()
		t.Logf("%s: connecting cost %d statements (once per page view)", db.Dialect, len(other))
		// Nothing changes: between two keep-alives the stream runs no SQL.
		for ev, _ := s.next(t, false); ev.name != ":"; ev, _ = s.next(t, false) {
		}
		sql.take()
		for range 3 {
			if ev, ok := s.next(t, false); !ok || ev.name != ":" {
				t.Fatalf("got %q (open: %v) while nothing changed", ev.name, ok)
			}
		}
		polls, other := sql.take()
		if len(other) > 0 {
			t.Errorf("an idle stream ran %d statements: %q", len(other), other)
		}
		t.Logf("%s: three keep-alives, %d statements for the stream, %d by the process's change feed poller", db.Dialect, len(other), len(polls))

		// A change the block shows: the block again.
		must(t, db.W.Exec("UPDATE rentals SET image = 'registry.example/pushed:2' WHERE id = ?", id).Error == nil, "update image")
		s.want(t, "card", `id="rental-image">registry.example/pushed:2<`)
		_, other = sql.take()
		t.Logf("%s: one push cost %d statements", db.Dialect, len(other))
		if testing.Verbose() {
			for _, q := range other {
				t.Log(q)
			}
		}
		// Its status: the page reloads, and the stream ends.
		must(t, db.W.Exec("UPDATE rentals SET status = 'stopped' WHERE id = ?", id).Error == nil, "stop")
		s.want(t, "reload", a.url(routenames.RentalsShow, idParam(id)))
		s.ends(t)
		// A settled rental: its block, then the end.
		s = openStream(t, ac.c, a.srv.URL+a.url(routenames.RentalsEvents, idParam(id)))
		ev := s.want(t, "card", `id="rental-live"`)
		if strings.Contains(ev.data, "data-events-url") || strings.Contains(ev.data, "hx-trigger") {
			t.Error("a settled block still follows the rental")
		}
		s.want(t, "end")
		s.ends(t)
	})
}

// A stream ends when what authorised it may no longer hold (the user's
// sessions were ended, memberships changed): the browser connects again
// and is authorised again — here, sent to log in.
func TestRentalEventsEndWhenTheViewerChanges(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a, _ := watchApp(t, db, time.Hour)
		const email = "events-epoch@example.com"
		u, org := fundedRenter(t, db, email, testPassword, 100_000)
		id := runningRental(t, db, org, u.ID, rtxOffer(t, db), 500)
		ac := loginWith(a, "renter", email, testPassword)
		url := a.url(routenames.RentalsEvents, idParam(id))
		s := openStream(t, ac.c, a.srv.URL+url)
		s.want(t, "card", `id="rental-live"`)
		must(t, db.W.Exec("UPDATE users SET session_epoch = session_epoch + 1 WHERE id = ?", u.ID).Error == nil, "end sessions")
		s.ends(t)
		res, _ := ac.do("GET", url, nil, "Accept", "text/event-stream")
		must(t, res.StatusCode == http.StatusSeeOther, "reconnect after the sessions ended: %d", res.StatusCode)
	})
}

// While a rental is billed by the second its block is rendered again
// now and then, for the balance the meter's debits lower (they are not
// changes the feed carries).
func TestRentalEventsRefreshABilledRental(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	a, _ := watchAppWith(t, db, time.Hour, 20*time.Millisecond, 50*time.Millisecond)
	const email = "events-refresh@example.com"
	u, org := fundedRenter(t, db, email, testPassword, 100_000)
	id := runningRental(t, db, org, u.ID, rtxOffer(t, db), 500)
	ac := loginWith(a, "renter", email, testPassword)
	s := openStream(t, ac.c, a.srv.URL+a.url(routenames.RentalsEvents, idParam(id)))
	s.want(t, "card", "¥1,000.00")
	must(t, db.W.Exec("UPDATE ledger_accounts SET balance_fen = balance_fen - 100 WHERE kind = 'wallet' AND org_id = ?", org).Error == nil, "debit")
	for {
		if ev := s.want(t, "card", `id="rental-runway"`); strings.Contains(ev.data, "¥999.00") {
			break
		}
	}
}

// A stream outlives the server's write timeout (which ends an ordinary
// response after a minute in production).
func TestRentalEventsOutliveTheWriteTimeout(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	a, _ := watchApp(t, db, 20*time.Millisecond)
	const email = "events-timeout@example.com"
	u, org := fundedRenter(t, db, email, testPassword, 100_000)
	id := runningRental(t, db, org, u.ID, rtxOffer(t, db), 500)
	ac := loginWith(a, "renter", email, testPassword)
	const timeout = 200 * time.Millisecond
	ln := ownServer(t, &http.Server{Handler: a.e, ReadTimeout: timeout, WriteTimeout: timeout}, nil)
	start := time.Now()
	s := openStream(t, ac.c, "http://"+ln.Addr().String()+a.url(routenames.RentalsEvents, idParam(id)))
	s.want(t, "card", `id="rental-live"`)
	for n := 0; time.Since(start) < 3*timeout; n++ {
		if ev, ok := s.next(t, false); !ok || ev.name != ":" {
			t.Fatalf("after %v and %d keep-alives: %q (open: %v)", time.Since(start), n, ev.name, ok)
		}
	}
}

// GET /api/v1/rentals/{id} carries a weak ETag; sent back, it answers
// 304 with no body until the rental changes, reading less than the full
// answer. A caller outside the organisation gets 404 and no tag.
func TestRentalAPIAnswers304WhileUnchanged(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a, feed := watchApp(t, db, time.Hour)
		const email = "etag@example.com"
		u, org := fundedRenter(t, db, email, testPassword, 100_000)
		id := runningRental(t, db, org, u.ID, rtxOffer(t, db), 500)
		token, _, err := (&accounts.Service{DB: db}).CreateAPIToken(context.Background(), u, "watch")
		must(t, err == nil, "token: %v", err)
		path := a.url(routenames.APIRentalsShow, idParam(id))
		settle(t, feed, db, org)
		get := func(tok, inm string) (*http.Response, string) {
			t.Helper()
			h := []string{"Authorization", "Bearer " + tok}
			if inm != "" {
				h = append(h, "If-None-Match", inm)
			}
			return a.get(path, h...)
		}
		sql := logSQL(db)
		res, body := get(token, "")
		_, full := sql.take()
		etag := res.Header.Get("ETag")
		must(t, res.StatusCode == 200 && strings.HasPrefix(etag, `W/"r`), "GET: %d, ETag %q: %s", res.StatusCode, etag, snippet(body))
		res, body = get(token, etag)
		_, cond := sql.take()
		must(t, res.StatusCode == http.StatusNotModified && body == "", "If-None-Match: %d %q", res.StatusCode, snippet(body))
		must(t, res.Header.Get("ETag") == etag, "304's ETag %q, want %q", res.Header.Get("ETag"), etag)
		if len(cond) >= len(full) {
			t.Errorf("the 304 ran %d statements, the full answer %d", len(cond), len(full))
		}
		t.Logf("%s: 200 ran %d statements, 304 ran %d", db.Dialect, len(full), len(cond))
		for _, q := range cond {
			// Whether the caller sees student prices is asked only where
			// prices show (handlers.IsStudent).
			if strings.Contains(q, "orgs.kind") {
				t.Errorf("the 304 asked for student pricing: %s", q)
			}
		}
		if testing.Verbose() {
			for _, q := range cond {
				t.Log(q)
			}
		}
		res, _ = get(token, `"other", `+strings.TrimPrefix(etag, "W/"))
		must(t, res.StatusCode == http.StatusNotModified, "a strong form in a list: %d", res.StatusCode)

		// The row changes: a new tag at once.
		must(t, db.W.Exec("UPDATE rentals SET image = 'registry.example/pushed:3' WHERE id = ?", id).Error == nil, "update")
		res, body = get(token, etag)
		must(t, res.StatusCode == 200 && res.Header.Get("ETag") != etag, "after a change: %d, ETag %q", res.StatusCode, res.Header.Get("ETag"))
		contains(t, body, "registry.example/pushed:3")
		etag = res.Header.Get("ETag")
		// Its timeline changes (not its row): a new tag once the feed hears it.
		heard := feed.Subscribe(changefeed.Rental(id))
		must(t, db.W.Exec("INSERT INTO rental_events (rental_id, at, kind, detail) VALUES (?, ?, 'note', '')", id, time.Now().UTC()).Error == nil, "event")
		waitHeard(t, heard, "the timeline's change")
		res, _ = get(token, etag)
		must(t, res.StatusCode == 200, "the timeline changed, still %d once the feed heard it", res.StatusCode)

		other, _ := fundedRenter(t, db, "etag-other@example.com", testPassword, 0)
		otherToken, _, err := (&accounts.Service{DB: db}).CreateAPIToken(context.Background(), other, "other")
		must(t, err == nil, "token: %v", err)
		res, _ = get(otherToken, etag)
		must(t, res.StatusCode == http.StatusNotFound && res.Header.Get("ETag") == "", "another organisation: %d, ETag %q", res.StatusCode, res.Header.Get("ETag"))
	})
}

// In a real browser the rental page follows its rental over the event
// stream: a change shows without a poll leaving the browser, a status
// change reloads the page, and the settled page listens no more.
func TestBrowserRentalPageIsPushed(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	chromiumPath(t)
	db := dbtest.SQLite(t)
	a, _ := watchApp(t, db, time.Hour)
	const email = "events-browser@example.com"
	u, org := fundedRenter(t, db, email, testPassword, 100_000)
	id := runningRental(t, db, org, u.ID, rtxOffer(t, db), 500)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	b := newEnglishBrowser(t, ctx)
	open(t, b, a.srv.URL+a.url(routenames.AuthLogin), "log-in page")
	typeInto(t, b, [][2]string{{"f-email", email}, {"f-password", testPassword}})
	click(t, b, "#login-submit", "log in")
	open(t, b, a.srv.URL+a.url(routenames.RentalsShow, idParam(id)), "rental page")

	must(t, db.W.Exec("UPDATE rentals SET image = 'registry.example/pushed:9' WHERE id = ?", id).Error == nil, "update image")
	waitFor(t, b, `(document.getElementById("rental-image") || {}).textContent === "registry.example/pushed:9"`, "the pushed block")
	polls := eval[int](t, b, `performance.getEntriesByType("resource").filter(e => e.name.includes("/live?")).length`)
	must(t, polls == 0, "the page polled /live %d times while its stream was open", polls)
	must(t, eval[bool](t, b, `!!document.querySelector("#rental-live [data-tick=cost][data-ticking]")`), "the pushed block's cost does not tick")

	now := time.Now().UTC()
	must(t, db.W.Exec("UPDATE rentals SET status = 'stopped', stopped_at = ? WHERE id = ?", now, id).Error == nil, "stop")
	waitFor(t, b, rentalStatusIs("stopped"), "the page to reload with the rental stopped")
	must(t, !eval[bool](t, b, `document.getElementById("rental-live").hasAttribute("data-events-url")`), "a stopped rental's page still listens")
}

// TestIdleRentalPagesStatements measures what open rental pages cost
// while nothing changes, over a window of wall time given in
// SUANLI_IDLE_WINDOW (e.g. 60s; skipped without it): the statements per
// minute per open page, and the process's change feed's own (one
// poller or listener, however many pages are open), next to what the
// polled block cost (a GET …/live every 3 s). It asserts nothing: the
// figures are for docs/capacity.md.
func TestIdleRentalPagesStatements(t *testing.T) {
	window, err := time.ParseDuration(os.Getenv("SUANLI_IDLE_WINDOW"))
	if err != nil || window <= 0 {
		t.Skip("set SUANLI_IDLE_WINDOW (e.g. 60s) to measure")
	}
	const pages = 20
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a, _ := watchAppWith(t, db, 25*time.Second, 0, 0) // production's intervals
		const email = "idle@example.com"
		u, org := fundedRenter(t, db, email, testPassword, 10_000_000)
		ac := loginWith(a, "renter", email, testPassword)
		var urls []string
		o := rtxOffer(t, db)
		for i := range pages {
			now := db.Now().UTC()
			r := &models.Rental{OrgID: org, UserID: u.ID, OfferID: o.ID, ProviderID: o.ProviderID, NodeID: &o.NodeID, GPUs: 1, SLA: "standard",
				Term: "on_demand", Status: models.RentalRunning, SSHPublicKey: testSSHKey(t), WorkspaceID: "ws-idle-" + idParam(int64(i)),
				PricePerGPUHourFen: 500, RunningSince: &now, BilledUntil: &now, CreatedAt: now, UpdatedAt: now}
			must(t, db.W.Create(r).Error == nil, "rental %d", i)
			urls = append(urls, a.url(routenames.RentalsEvents, idParam(r.ID)))
		}
		sql := logSQL(db)
		res, _ := ac.do("GET", strings.Replace(urls[0], "/events", "/live", 1), nil)
		must(t, res.StatusCode == 200, "live: %d", res.StatusCode)
		_, poll := sql.take()
		for _, u := range urls {
			openStream(t, ac.c, a.srv.URL+u).want(t, "card", `id="rental-live"`)
		}
		_, connect := sql.take()
		time.Sleep(window) // a measurement, not an assertion
		feed, other := sql.take()
		mins := window.Minutes()
		t.Logf("%s: %d open pages over %v: %.2f statements/min per page (connecting: %.1f per page, once); the process's change feed %.1f statements/min; polling instead: %d statements per GET …/live, %d/min per page",
			db.Dialect, pages, window, float64(len(other))/pages/mins, float64(len(connect))/pages, float64(len(feed))/mins, len(poll), 20*len(poll))
	})
}

// A logout in one tab ends the stream another tab of the same browser
// session holds (the session's row goes; the user's other sessions and
// epoch stay): the stream ends, and connecting again is refused.
func TestRentalEventsEndAtLogout(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a, _ := watchApp(t, db, time.Hour)
		const email = "events-logout@example.com"
		u, org := fundedRenter(t, db, email, testPassword, 100_000)
		id := runningRental(t, db, org, u.ID, rtxOffer(t, db), 500)
		ac := loginWith(a, "renter", email, testPassword)
		// The other tab: the same session cookie.
		jar, _ := cookiejar.New(nil)
		srvURL, _ := neturl.Parse(a.srv.URL)
		jar.SetCookies(srvURL, ac.c.Jar.Cookies(srvURL))
		tab := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		path := a.url(routenames.RentalsEvents, idParam(id))
		s := openStream(t, tab, a.srv.URL+path)
		s.want(t, "card", `id="rental-live"`)
		res, _ := ac.post(a.url(routenames.AuthLogout), nil)
		must(t, res.StatusCode == http.StatusSeeOther, "POST /logout: %d", res.StatusCode)
		s.ends(t)
		req, _ := http.NewRequest("GET", a.srv.URL+path, nil)
		req.Header.Set("Accept", "text/event-stream")
		res, err := tab.Do(req)
		must(t, err == nil, "reconnect: %v", err)
		res.Body.Close()
		must(t, res.StatusCode == http.StatusSeeOther, "reconnect after the logout: %d", res.StatusCode)
	})
}

// A stream ends when its session expires, though nothing is written.
func TestRentalEventsEndAtTheSessionsExpiry(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	a, _ := watchApp(t, db, time.Hour)
	const email = "events-expiry@example.com"
	u, org := fundedRenter(t, db, email, testPassword, 100_000)
	id := runningRental(t, db, org, u.ID, rtxOffer(t, db), 500)
	ac := loginWith(a, "renter", email, testPassword)
	// Generous: the stream must connect before it.
	expiry := db.Now().Add(4 * time.Second).UTC()
	must(t, db.W.Exec("UPDATE sessions SET expiry = ? WHERE token = ?", expiry, ac.cookie("suanli_session")).Error == nil, "expiry")
	s := openStream(t, ac.c, a.srv.URL+a.url(routenames.RentalsEvents, idParam(id)))
	s.want(t, "card", `id="rental-live"`)
	s.ends(t)
	must(t, !db.Now().Before(expiry), "the stream ended before the session's expiry")
}

// The block shows whether the node that holds the files a rental left
// behind is back (files_left.node_back in the API): that node's health
// moves the API's tag on and pushes the block.
func TestRentalWatchFollowsTheNodeOfTheFilesLeft(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a, feed := watchApp(t, db, time.Hour)
		const email = "events-left@example.com"
		u, org := fundedRenter(t, db, email, testPassword, 100_000)
		o := rtxOffer(t, db)
		id := runningRental(t, db, org, u.ID, o, 500)
		var o2 models.Offer
		must(t, db.R.Where("node_id <> ?", o.NodeID).Order("id").First(&o2).Error == nil, "an offer on another node")
		left := ownVolume(t, db, org, u.ID, o2)
		must(t, db.W.Model(&models.Volume{}).Where("id = ?", left).Update("left_by_rental_id", id).Error == nil, "mark left")
		var n models.Node
		must(t, db.R.First(&n, o2.NodeID).Error == nil, "node")
		health := n.Health
		toggle := func() {
			t.Helper()
			health = map[bool]models.NodeHealth{true: models.NodeSilent, false: models.NodeHealthy}[health != models.NodeSilent]
			must(t, db.W.Model(&models.Node{}).Where("id = ?", o2.NodeID).Update("health", health).Error == nil, "node health")
		}
		token, _, err := (&accounts.Service{DB: db}).CreateAPIToken(context.Background(), u, "watch")
		must(t, err == nil, "token: %v", err)
		path := a.url(routenames.APIRentalsShow, idParam(id))
		settle(t, feed, db, org)
		res, body := a.get(path, "Authorization", "Bearer "+token)
		etag := res.Header.Get("ETag")
		must(t, res.StatusCode == 200 && etag != "" && strings.Contains(body, `"files_left"`), "GET: %d %q %s", res.StatusCode, etag, snippet(body))
		res, _ = a.get(path, "Authorization", "Bearer "+token, "If-None-Match", etag)
		must(t, res.StatusCode == http.StatusNotModified, "unchanged: %d", res.StatusCode)
		heard := feed.Subscribe(changefeed.Node(o2.NodeID))
		toggle()
		waitHeard(t, heard, "the left node's health")
		res, _ = a.get(path, "Authorization", "Bearer "+token, "If-None-Match", etag)
		must(t, res.StatusCode == 200, "the left node's health changed, still %d once the feed heard it", res.StatusCode)

		ac := loginWith(a, "renter", email, testPassword)
		s := openStream(t, ac.c, a.srv.URL+a.url(routenames.RentalsEvents, idParam(id)))
		s.want(t, "card", `id="rental-files-left"`)
		toggle()
		s.want(t, "card", `id="rental-files-left"`)
	})
}

// hookLog runs fire once, inside the first statement after arm whose
// SQL holds match: a change committed at that point of a read.
type hookLog struct {
	logger.Interface
	match string
	armed atomic.Bool
	fire  func()
}

func (l *hookLog) LogMode(logger.LogLevel) logger.Interface { return l }

func (l *hookLog) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	if !l.armed.Load() {
		return
	}
	if s, _ := fc(); strings.Contains(s, l.match) && !strings.Contains(s, "change_log") && l.armed.CompareAndSwap(true, false) {
		l.fire()
	}
}

// A stream subscribes to what its first read showed (the wallet's
// runway) only after that read: a change committed in between, and
// heard before the subscription, still reaches the page.
func TestRentalEventsMissNoChangeBeforeTheySubscribe(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a, feed := watchApp(t, db, time.Hour)
		const email = "events-race@example.com"
		u, org := fundedRenter(t, db, email, testPassword, 100_000)
		id := runningRental(t, db, org, u.ID, rtxOffer(t, db), 500)
		ac := loginWith(a, "renter", email, testPassword)
		hook := &hookLog{Interface: logger.Discard, match: "ledger_accounts"}
		hook.fire = func() {
			// Credited after the read of the wallet, and heard at once.
			heard := feed.Subscribe(changefeed.Org(org))
			defer heard.Close()
			must(t, db.W.Exec("UPDATE ledger_accounts SET balance_fen = balance_fen + 12300 WHERE kind = 'wallet' AND org_id = ?", org).Error == nil, "credit")
			select {
			case <-heard.C:
			case <-time.After(10 * time.Second):
				t.Error("the feed heard no credit within 10s")
			}
		}
		db.W.Config.Logger, db.R.Config.Logger = hook, hook
		hook.armed.Store(true)
		s := openStream(t, ac.c, a.srv.URL+a.url(routenames.RentalsEvents, idParam(id)))
		must(t, !hook.armed.Load(), "the stream read no wallet")
		for {
			if ev := s.want(t, "card", `id="rental-runway"`); strings.Contains(ev.data, "¥1,123.00") {
				break
			}
		}
	})
}

// stallConn is a connection whose client stops reading when stalled:
// a write then waits for its deadline (forever without one), as one to
// a full socket buffer does.
type stallConn struct {
	net.Conn
	stalled   *atomic.Bool
	mu        sync.Mutex
	deadline  time.Time
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *stallConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c *stallConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *stallConn) Write(p []byte) (int, error) {
	for c.stalled.Load() {
		c.mu.Lock()
		d := c.deadline
		c.mu.Unlock()
		if !d.IsZero() && !time.Now().Before(d) {
			return 0, os.ErrDeadlineExceeded
		}
		select {
		case <-c.closed:
			return 0, net.ErrClosed
		case <-time.After(5 * time.Millisecond):
		}
	}
	return c.Conn.Write(p)
}

func (c *stallConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

type stallListener struct {
	net.Listener
	stalled *atomic.Bool
}

func (l stallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &stallConn{Conn: c, stalled: l.stalled, closed: make(chan struct{})}, nil
}

// A client that stops reading does not hold its stream for good: a
// write waits at most its deadline, and the stream ends, closing its
// subscriptions (and freeing the server's shutdown).
func TestRentalEventsEndWhenTheClientStopsReading(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	a, feed := watchApp(t, db, 20*time.Millisecond)
	const email = "events-stall@example.com"
	u, org := fundedRenter(t, db, email, testPassword, 100_000)
	id := runningRental(t, db, org, u.ID, rtxOffer(t, db), 500)
	ac := loginWith(a, "renter", email, testPassword)
	stalled := new(atomic.Bool)
	ln := ownServer(t, &http.Server{Handler: a.e}, func(l net.Listener) net.Listener { return stallListener{l, stalled} })
	base := feed.Subscribers()
	s := openStream(t, ac.c, "http://"+ln.Addr().String()+a.url(routenames.RentalsEvents, idParam(id)))
	s.want(t, "card", `id="rental-live"`)
	must(t, feed.Subscribers() > base, "the stream subscribed to nothing")
	stalled.Store(true)
	deadline := time.After(10 * time.Second)
	for {
		changed := feed.SubscribersChanged() // before the count: no change is missed
		if feed.Subscribers() <= base {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("a stream nobody reads still holds %d subscriptions after 10s", feed.Subscribers()-base)
		}
	}
}

// ownServer serves srv on a loopback port of its own (through wrap when
// set) until the test ends, for tests that need the server's own
// timeouts or connections.
func ownServer(t *testing.T, srv *http.Server, wrap func(net.Listener) net.Listener) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := ln
	if wrap != nil {
		served = wrap(ln)
	}
	go func() { _ = srv.Serve(served) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln
}

// waitHeard waits until the feed tells sub of a change (the feed moves
// the key's version before it wakes anyone), then closes sub.
func waitHeard(t *testing.T, sub *changefeed.Subscription, what string) {
	t.Helper()
	defer sub.Close()
	select {
	case <-sub.C:
	case <-time.After(10 * time.Second):
		t.Fatalf("the feed did not hear %s within 10s", what)
	}
}
