package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
	"suanli/handlers/launchapi"
	"suanli/models"
	"suanli/secrets"
)

// Idempotency-Key on the API's money-moving POSTs (docs/api.md).
const (
	// idempotencyTTL is how long a key and its answer are kept.
	idempotencyTTL = 24 * time.Hour
	// idempotencyStale is when a key left "in progress" by a process that
	// died mid-request may be used again: longer than any request may
	// run (the server's WriteTimeout is 60 s).
	idempotencyStale = 5 * time.Minute
	// idempotencyPurgeEvery is how often a process deletes expired keys,
	// on the next keyed request (no background goroutine).
	idempotencyPurgeEvery = 10 * time.Minute
	// maxIdempotentBody bounds the request bodies read for hashing: the
	// largest body limit of the routes below (a create's, see bodyLimits;
	// guardInput refuses a larger body before this reads it).
	maxIdempotentBody = launchapi.MaxCreateBytes
)

// idempotentRoutes are the routes (echo paths) that honour Idempotency-Key.
var idempotentRoutes = map[string]bool{
	"POST /api/v1/rentals":        true,
	"POST /api/v1/wallet/topups":  true,
	"POST /api/v1/wallet/refunds": true,
	// An invoice request, retried after a lost answer, must not ask twice.
	"POST /api/v1/orgs/:id/invoices": true,
}

// unstoredRefusals are the error codes of refusals after which nothing
// was created and a retry may well succeed (a top-up, a freed GPU): like
// a 429 they are not stored, so that a launcher retrying with its fixed
// key (one per node) runs anew rather than get the stale refusal for a
// day.
var unstoredRefusals = []string{apperr.EINSUFFICIENTFUNDS, apperr.ENOCAPACITY, apperr.EOFFERTAKEN}

// idempotency makes a POST with an Idempotency-Key header run at most
// once per user and key for 24 h. The first request inserts an
// "in progress" row (a unique index on user and key) before it runs, and
// its answer is stored when it ends; a retry with the same key and the
// same method, path and body gets that answer again, with
// Idempotent-Replayed: true. The same key with another body is a 409; so
// is a duplicate that arrives while the first is still running (it does
// not wait: the client retries and then gets the stored answer). Answers
// that say "try again" (5xx, 429, and the refusals of unstoredRefusals)
// are not stored: the key is released so a retry runs anew. With mac (the registry credentials' box) the stored
// hash is keyed: a body may hold a registry password, and a plain
// SHA-256 of it would let whoever reads the table test guesses at it.
func idempotency(db *models.DB, mac *secrets.Box) echo.MiddlewareFunc {
	var (
		mu     sync.Mutex
		purged time.Time
	)
	purge := func(c echo.Context) {
		mu.Lock()
		due := time.Since(purged) > idempotencyPurgeEvery
		if due {
			purged = time.Now()
		}
		mu.Unlock()
		if !due {
			return
		}
		if n, err := db.PurgeIdempotencyKeys(c.Request().Context()); err != nil {
			slog.Warn("idempotency: purge expired keys", "err", err, "request_id", requestID(c))
		} else if n > 0 {
			slog.Info("idempotency: purged expired keys", "keys", n)
		}
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			key := r.Header.Get("Idempotency-Key")
			u := handlers.CurrentUser(c)
			if key == "" || u == nil || !idempotentRoutes[r.Method+" "+c.Path()] {
				return next(c)
			}
			if !validIdempotencyKey(key) {
				return &apperr.Error{Code: apperr.EINVALID, Field: "Idempotency-Key", Message: "Idempotency-Key must be 1 to 255 printable ASCII characters"}
			}
			body, err := io.ReadAll(io.LimitReader(r.Body, maxIdempotentBody+1))
			if err != nil {
				return &apperr.Error{Code: apperr.EINVALID, Field: "body", Message: "could not read the request body"}
			}
			if len(body) > maxIdempotentBody {
				return tooLarge(maxIdempotentBody)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if mac == nil && (bytes.Contains(body, []byte(`"registry_auth"`)) || bytes.Contains(body, []byte(`"env"`)) || bytes.Contains(body, []byte(`"onstart"`))) {
				// Without a platform key nothing keys the hash: a body with a
				// registry password, an environment or a script is not
				// remembered (it is refused anyway).
				return next(c)
			}
			sum := sha256.New()
			if mac != nil {
				sum = mac.NewMAC()
			}
			io.WriteString(sum, r.Method+" "+r.URL.Path+"\n")
			sum.Write(body)
			hash := hex.EncodeToString(sum.Sum(nil))

			purge(c)
			ctx := r.Context()
			row, claimed, err := db.ClaimIdempotencyKey(ctx, u.ID, key, hash, idempotencyTTL, idempotencyStale)
			if err != nil {
				return err
			}
			if !claimed {
				switch {
				case row.RequestHash != hash:
					return &apperr.Error{Code: apperr.ECONFLICT, Field: "Idempotency-Key",
						Message: "this Idempotency-Key was used with another request; use a new key for a new request"}
				case row.InProgress():
					return &apperr.Error{Code: apperr.ECONFLICT, Field: "Idempotency-Key",
						Message: "a request with this Idempotency-Key is still in progress; retry shortly"}
				}
				h := c.Response().Header()
				h.Set("Idempotent-Replayed", "true")
				if row.Location != "" {
					h.Set("Location", row.Location)
				}
				return c.Blob(row.Status, row.ContentType, []byte(row.Body))
			}

			// The request's context may be cancelled by the time it ends
			// (the client left): the answer is stored regardless, for its
			// retry.
			bg := context.WithoutCancel(ctx)
			release := func() {
				if err := db.ReleaseIdempotencyKey(bg, row.ID); err != nil {
					slog.Error("idempotency: release key", "err", err, "request_id", requestID(c))
				}
			}
			// Run the request, keeping a copy of what it writes. The error
			// handler runs here, so an error answer is recorded too.
			rec := &recorder{ResponseWriter: c.Response().Writer}
			c.Response().Writer = rec
			// A handler that panics is answered 500 by the recover
			// middleware outside this one: release the key on the way
			// out, as for any 5xx, or every retry would be refused as
			// "in progress" until the claim went stale.
			finished := false
			defer func() {
				if !finished {
					c.Response().Writer = rec.ResponseWriter
					release()
				}
			}()
			err = next(c)
			if err != nil {
				c.Error(err)
			}
			finished = true
			c.Response().Writer = rec.ResponseWriter
			st := c.Response().Status
			if st >= 500 || st == http.StatusTooManyRequests || rec.over || err != nil && slices.Contains(unstoredRefusals, apperr.Code(err)) {
				release()
				return nil
			}
			h := c.Response().Header()
			if err := db.FinishIdempotencyKey(bg, row.ID, st, h.Get(echo.HeaderContentType), h.Get("Location"), rec.buf.Bytes()); err != nil {
				slog.Error("idempotency: store answer", "err", err, "request_id", requestID(c))
			}
			return nil
		}
	}
}

// validIdempotencyKey accepts 1 to 255 printable ASCII characters.
func validIdempotencyKey(k string) bool {
	if len(k) == 0 || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// maxStoredAnswer bounds a stored answer; a bigger one is not stored
// (the key is released). API answers of these routes are a few KiB.
const maxStoredAnswer = 1 << 20

// recorder copies an answer's body as it is written, before compression
// (gzip sits outside this middleware, so the copy is plain JSON).
type recorder struct {
	http.ResponseWriter
	buf  bytes.Buffer
	over bool
}

func (r *recorder) Write(b []byte) (int, error) {
	if !r.over {
		if r.buf.Len()+len(b) > maxStoredAnswer {
			r.over = true
			r.buf.Reset()
		} else {
			r.buf.Write(b)
		}
	}
	return r.ResponseWriter.Write(b)
}

// Flush passes through, for completeness: these answers do not stream.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
