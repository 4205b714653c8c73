// Package rentalwatch lets a browser or an API client follow a rental
// cheaply: the rental page's live block as server-sent events, pushed
// only when the rental changes (package changefeed), and the API's
// GET /api/v1/rentals/{id} with a weak ETag that answers 304 while the
// rental is as the client last saw it.
package rentalwatch

import (
	"bytes"
	"cmp"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/changefeed"
	"suanli/handlers"
	"suanli/routenames"
	"suanli/views/rentalpages"
)

// Defaults of Handler's intervals.
const (
	// DefaultKeepAlive is how often an idle stream sends a comment, so
	// that proxies do not close it (they commonly wait 30–60 s).
	DefaultKeepAlive = 25 * time.Second
	// DefaultRefresh is how often a stream renders the block again while
	// the rental is billed by the second: the wallet's balance falls with
	// every meter pass and the rate turns at the off-peak boundaries, and
	// neither is a change the feed carries (the block's cost ticks in the
	// browser meanwhile).
	DefaultRefresh = 30 * time.Minute
)

// Handler serves the watching endpoints over handlers.Handler's change
// feed (Changes; nil: the stream sends the block once and asks the page
// to poll, and the API sends no ETag), with its StreamKeepAlive (zero:
// DefaultKeepAlive) and StreamRefresh (zero: DefaultRefresh; negative:
// never).
type Handler struct{ *handlers.Handler }

// eventStream is the media type of server-sent events.
const eventStream = "text/event-stream"

// Events is GET /rentals/{id}/events: the rental page's live block as
// server-sent events (static/rental-events.js). It authorises once, as
// GET /rentals/{id}/live does (404 outside the rental's organisation),
// sends the block ("card"), then sends it again whenever the rental, its
// volume or its wallet's runway changes, and only then: while nothing
// changes it costs no database statement, only a keep-alive comment
// (and, while the rental is billed by the second, one render every
// StreamRefresh, for the falling balance). It
// ends with "reload" (the page's status or timeline, ?seen=, changed:
// the page reloads, as the polled block asks htmx to), with "end" once
// the rental is settled, and when the viewer's memberships or sessions
// change (the browser reconnects and is authorised again). A client
// that does not accept text/event-stream, or a server without a change
// feed, gets the block once and "poll".
func (h *Handler) Events(c echo.Context) error {
	// Subscribed before the first read: a change from then on is seen.
	u := handlers.CurrentUser(c)
	var authC <-chan struct{} // nil: never ready
	if h.Changes != nil && u != nil {
		auth := h.Changes.Subscribe(changefeed.User(u.ID))
		defer auth.Close()
		authC = auth.C
	}
	id, _ := strconv.ParseInt(c.Param("id"), 10, 64)
	var sub *changefeed.Subscription
	var keys []changefeed.Key
	if h.Changes != nil {
		keys = []changefeed.Key{changefeed.Rental(id)}
		sub = h.Changes.Subscribe(keys...)
	}
	defer func() {
		if sub != nil {
			sub.Close()
		}
	}()
	vm, err := h.RentalLiveVM(c)
	if err != nil {
		return err
	}
	s := &stream{c: c, seen: c.QueryParam("seen"), show: c.Echo().Reverse(routenames.RentalsShow, strconv.FormatInt(vm.Rental.ID, 10))}
	hd := c.Response().Header()
	hd.Set(echo.HeaderContentType, eventStream+"; charset=utf-8")
	hd.Set(echo.HeaderCacheControl, "no-cache")
	hd.Set("X-Accel-Buffering", "no") // a proxy in front must not hold events back
	if sub == nil || !strings.Contains(c.Request().Header.Get(echo.HeaderAccept), eventStream) {
		c.Response().WriteHeader(http.StatusOK)
		if done, err := s.send(vm); done || err != nil {
			return nil
		}
		_ = s.event("poll", "")
		return nil
	}
	// A stream outlives the server's read and write timeouts (which
	// would end it after a minute); it ends when the client goes or
	// the feed closes at shutdown.
	rc := http.NewResponseController(c.Response())
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	c.Response().WriteHeader(http.StatusOK)
	if _, err := io.WriteString(c.Response(), "retry: 3000\n\n"); err != nil {
		return nil
	}
	keepAlive := time.NewTicker(cmp.Or(h.StreamKeepAlive, DefaultKeepAlive))
	defer keepAlive.Stop()
	refresh := time.NewTimer(time.Hour)
	refresh.Stop()
	defer refresh.Stop()
	ctx := c.Request().Context()
	for {
		if done, err := s.send(vm); done || err != nil {
			return nil
		}
		if more := liveKeys(vm); !slices.Equal(more, keys) {
			// Its volume or organisation is known now, or changed.
			keys = more
			old := sub
			sub = h.Changes.Subscribe(keys...)
			old.Close()
		}
		if every := h.refreshEvery(); every > 0 && (vm.Billing || vm.Runway != nil) {
			refresh.Reset(every)
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-h.Changes.Done():
				return nil
			case <-authC:
				return nil
			case <-keepAlive.C:
				if s.comment() != nil {
					return nil
				}
			case <-refresh.C:
				break wait
			case <-sub.C:
				break wait
			}
		}
		refresh.Stop()
		if vm, err = h.RentalLiveVM(c); err != nil {
			// Gone or no longer allowed (the browser reconnects and hears
			// why), or the database failed: the stream ends either way.
			slog.Warn("rental events: reading the rental failed; the stream ends", "rental_id", id, "err", err,
				"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
			return nil
		}
	}
}

// refreshEvery is StreamRefresh with its default (0: never).
func (h *Handler) refreshEvery() time.Duration {
	switch {
	case h.StreamRefresh < 0:
		return 0
	case h.StreamRefresh == 0:
		return DefaultRefresh
	}
	return h.StreamRefresh
}

// liveKeys are what the block shows: the rental, its volume, and its
// organisation's wallet (the runway).
func liveKeys(vm rentalpages.RentalVM) []changefeed.Key {
	keys := []changefeed.Key{changefeed.Rental(vm.Rental.ID)}
	if vm.Volume != nil {
		keys = append(keys, changefeed.Volume(vm.Volume.ID))
	}
	if vm.Runway != nil {
		keys = append(keys, changefeed.Org(vm.Runway.OrgID))
	}
	return keys
}

// stream writes one response's events.
type stream struct {
	c    echo.Context
	seen string // the state the page shows (RentalVM.Seen)
	show string // the rental's page, where a reload goes
	buf  bytes.Buffer
}

// send sends vm's block, or "reload" when the page no longer shows the
// rental's state; done reports that the stream has said its last.
func (s *stream) send(vm rentalpages.RentalVM) (done bool, err error) {
	if s.seen != "" && vm.Seen() != s.seen {
		return true, s.event("reload", s.show)
	}
	s.buf.Reset()
	if err := rentalpages.RentalLive(handlers.ViewCtx(s.c), vm).Render(s.c.Request().Context(), &s.buf); err != nil {
		return true, err
	}
	if err := s.event("card", s.buf.String()); err != nil {
		return true, err
	}
	if !vm.Polling() {
		return true, s.event("end", "")
	}
	return false, nil
}

// event writes one event (each line of data on a data: line) and flushes.
func (s *stream) event(name, data string) error {
	var b strings.Builder
	b.WriteString("event: " + name + "\n")
	data = strings.ReplaceAll(strings.ReplaceAll(data, "\r\n", "\n"), "\r", "\n")
	for line := range strings.SplitSeq(data, "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	return s.write(b.String())
}

// comment writes a keep-alive: browsers ignore it.
func (s *stream) comment() error { return s.write(": keep-alive\n\n") }

func (s *stream) write(p string) error {
	if _, err := io.WriteString(s.c.Response(), p); err != nil {
		return err
	}
	return http.NewResponseController(s.c.Response()).Flush()
}
