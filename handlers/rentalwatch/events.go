// Package rentalwatch lets a browser or an API client follow a rental
// cheaply: the rental page's live block (and its GPU usage section) as
// server-sent events, pushed only when the rental changes (or one of its
// GPUs is sampled; package changefeed), and the API's
// GET /api/v1/rentals/{id} with a weak ETag that answers 304 while the
// rental is as the client last saw it.
package rentalwatch

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/changefeed"
	"suanli/handlers"
	"suanli/models/changelog"
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
// volume, the node its files were left on or its wallet's runway
// changes, and only then: while nothing changes it costs no database
// statement, only a keep-alive comment (and, while the rental is billed
// by the second, one render every StreamRefresh, for the falling
// balance). It ends with "reload" (the page's status or timeline,
// ?seen=, changed: the page reloads, as the polled block asks htmx to),
// with "end" once the rental is settled, and when the viewer's
// memberships change, or its session ends (a logout, the user's
// sessions ended, the session's expiry): the browser reconnects and is
// authorised again. A client that does not accept text/event-stream, or
// a server without a change feed, gets the block once and "poll".
//
// With ?usage= (the page's usage section, its data-usage-seen) the
// stream also follows the rental's GPU usage section: after the block,
// it sends the section ("usage") when it is not what the page shows, and
// again whenever one of the rental's GPUs is sampled (about every 30 s
// while it runs), reading only the samples; otherwise that section costs
// nothing either.
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
	w := &watch{h: h, c: c}
	if h.Changes != nil {
		w.keys = []changefeed.Key{changefeed.Rental(id)}
		w.sub = h.Changes.Subscribe(w.keys...)
	}
	defer func() {
		if w.sub != nil {
			w.sub.Close()
		}
	}()
	w.mark()
	vm, err := h.RentalLiveVM(c)
	if err != nil {
		return err
	}
	keepAlive := cmp.Or(h.StreamKeepAlive, DefaultKeepAlive)
	s := &stream{c: c, seen: c.QueryParam("seen"), show: c.Echo().Reverse(routenames.RentalsShow, strconv.FormatInt(vm.Rental.ID, 10))}
	hd := c.Response().Header()
	hd.Set(echo.HeaderContentType, eventStream+"; charset=utf-8")
	hd.Set(echo.HeaderCacheControl, "no-cache")
	hd.Set("X-Accel-Buffering", "no") // a proxy in front must not hold events back
	if w.sub == nil || !strings.Contains(c.Request().Header.Get(echo.HeaderAccept), eventStream) {
		c.Response().WriteHeader(http.StatusOK)
		if done, err := s.send(vm); done || err != nil {
			return nil
		}
		_ = s.event("poll", "")
		return nil
	}
	ctx := c.Request().Context()
	// The session's end: its row's deletion (a logout: the user's other
	// sessions and epoch stay as they were) and its expiry.
	var endC <-chan struct{}  // nil: never ready
	var expC <-chan time.Time // nil: never ready
	if token := h.sessionToken(c); token != "" {
		sid, expiry, found, err := changelog.Session(ctx, h.DB, token)
		if err != nil {
			return err
		}
		if !found { // ended since the request was authenticated
			return apperr.Errorf(apperr.EUNAUTHORIZED, "log in first")
		}
		// An end committed between the read and the subscription (a
		// window of microseconds) is seen at the expiry, or the next
		// reconnect.
		ses := h.Changes.Subscribe(changefeed.Session(sid))
		defer ses.Close()
		endC = ses.C
		exp := time.NewTimer(expiry.Sub(h.DB.Now()))
		defer exp.Stop()
		expC = exp.C
	}
	if vm, err = w.follow(vm); err != nil {
		return err
	}
	var usage *usageWatch // nil: the page does not ask for its usage section
	if c.QueryParams().Has("usage") {
		usage = newUsageWatch(h, c, vm.Rental.ID, c.QueryParam("usage"))
		defer usage.close()
	}
	// A stream outlives the server's read and write timeouts (which
	// would end it after a minute): it ends when the client goes or the
	// feed closes at shutdown. Each write has its own deadline instead,
	// so that a client that stopped reading does not hold the stream
	// (and its subscriptions) for good.
	rc := http.NewResponseController(c.Response())
	_ = rc.SetReadDeadline(time.Time{})
	s.deadline = 2 * keepAlive
	c.Response().WriteHeader(http.StatusOK)
	if s.write("retry: 3000\n\n") != nil {
		return nil
	}
	keepAliveT := time.NewTicker(keepAlive)
	defer keepAliveT.Stop()
	refresh := time.NewTimer(time.Hour)
	refresh.Stop()
	defer refresh.Stop()
	for {
		if done, err := s.send(vm); done || err != nil {
			return nil
		}
		if usage != nil {
			if err := usage.follow(s, vm); err != nil {
				return h.streamFailed(c, id, err)
			}
		}
		if every := h.refreshEvery(); every > 0 && (vm.Billing || vm.Runway != nil) {
			refresh.Reset(every)
		}
		var sampled <-chan struct{} // nil: never ready
		if usage != nil {
			sampled = usage.C()
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
			case <-endC:
				return nil
			case <-expC:
				return nil
			case <-keepAliveT.C:
				if s.comment() != nil {
					return nil
				}
			case <-refresh.C:
				break wait
			case <-w.sub.C:
				break wait
			case <-sampled:
				// A push does not authorise again (the card's reads do):
				// when the viewer's access or session changed at the same
				// moment, select may have picked this case first.
				select {
				case <-authC:
					return nil
				case <-endC:
					return nil
				case <-expC:
					return nil
				default:
				}
				if err := usage.push(s, vm); err != nil {
					return h.streamFailed(c, id, err)
				}
			}
		}
		refresh.Stop()
		w.mark()
		vm, err = h.RentalLiveVM(c)
		if err == nil {
			vm, err = w.follow(vm)
		}
		if err != nil {
			// Gone or no longer allowed (the browser reconnects and hears
			// why), or the database failed: the stream ends either way.
			return h.streamFailed(c, id, err)
		}
	}
}

// streamFailed ends a stream whose read failed, saying why in the log
// (the response has begun: the browser reconnects and hears it).
func (h *Handler) streamFailed(c echo.Context, id int64, err error) error {
	slog.Warn("rental events: a read failed; the stream ends", "rental_id", id, "err", err,
		"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
	return nil
}

// sessionToken is the request's session token ("" when none).
func (h *Handler) sessionToken(c echo.Context) string {
	if h.Sessions == nil {
		return ""
	}
	return h.Sessions.Token(c.Request().Context())
}

// watch is a stream's subscription to what its block shows.
type watch struct {
	h    *Handler
	c    echo.Context
	keys []changefeed.Key
	sub  *changefeed.Subscription
	read changefeed.Mark // where the feed stood before the last read
}

// mark records where the feed stands, before a read of the block.
func (w *watch) mark() {
	if w.h.Changes != nil {
		w.read = w.h.Changes.Mark()
	}
}

// follow subscribes to what vm shows (liveKeys) when that is more or
// other than what is subscribed, and then, if the feed heard a change
// to those keys since the read began (Mark), reads the block once more
// without waiting: a change to a key it adds (its volume, organisation
// or left node) committed after vm was read but heard before the
// subscription would otherwise be lost. Asking the feed first keeps the
// usual connect at one read. It returns the block to send.
func (w *watch) follow(vm rentalpages.RentalVM) (rentalpages.RentalVM, error) {
	for more := liveKeys(vm); !slices.Equal(more, w.keys); more = liveKeys(vm) {
		w.keys = more
		old := w.sub
		w.sub = w.h.Changes.Subscribe(w.keys...)
		old.Close()
		if !w.h.Changes.ChangedSince(w.read, w.keys...) {
			break
		}
		w.mark()
		var err error
		if vm, err = w.h.RentalLiveVM(w.c); err != nil {
			return vm, err
		}
	}
	return vm, nil
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

// liveKeys are what the block shows: the rental, its volume, the node
// that holds the files it left (whether that node is back), and its
// organisation's wallet (the runway).
func liveKeys(vm rentalpages.RentalVM) []changefeed.Key {
	var org, volume, leftNode *int64
	if vm.Runway != nil {
		org = &vm.Runway.OrgID
	}
	if vm.Volume != nil {
		volume = &vm.Volume.ID
	}
	if vm.FilesLeft != nil {
		leftNode = vm.FilesLeft.NodeID
	}
	// The card shows no node of its own: only the files' node's health.
	return changefeed.RentalKeys(vm.Rental.ID, org, volume, nil, leftNode)
}

// stream writes one response's events.
type stream struct {
	c    echo.Context
	seen string // the state the page shows (RentalVM.Seen)
	show string // the rental's page, where a reload goes
	// deadline bounds each write (0: the server's own timeout): a
	// client that stops reading ends the stream instead of blocking it.
	deadline time.Duration
	buf      bytes.Buffer
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
	rc := http.NewResponseController(s.c.Response())
	if s.deadline > 0 {
		if err := rc.SetWriteDeadline(time.Now().Add(s.deadline)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
	}
	if _, err := io.WriteString(s.c.Response(), p); err != nil {
		return err
	}
	return rc.Flush()
}
