package web

import (
	"crypto/sha256"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/agent"
	"suanli/apperr"
	"suanli/fleet"
)

// HeartbeatLimit bounds how often one node's agent may send heartbeats:
// a token bucket per node credential (one node has one), kept in this
// process's memory like RateLimit. Agents send one every
// fleet.HeartbeatEvery; a heartbeat writes the node's GPUs in a
// transaction, so a node that sends them in a loop would hold the writer
// (on SQLite, everyone's) for itself.
type HeartbeatLimit struct {
	// Every is the least average spacing of one node's heartbeats; 0
	// means fleet.HeartbeatEvery/5 (1 s), a negative value no limit.
	Every time.Duration
	// Burst is how many may come closer together than Every (a restart,
	// a retry after a failed one); 0 means 3.
	Burst int
	// Now is the clock; nil means time.Now. Tests step it by hand.
	Now func() time.Time
}

// heartbeatLimit answers a heartbeat over its node's limit with a 429
// and Retry-After, before anything else runs for it: no body is read and
// the database is not touched (the agent backs off and tries again).
// The bucket is keyed by a hash of the bearer token; a request without
// one is left to the handler (a 401).
func heartbeatLimit(cfg HeartbeatLimit) echo.MiddlewareFunc {
	if cfg.Every == 0 {
		cfg.Every = fleet.HeartbeatEvery / 5
	}
	if cfg.Burst <= 0 {
		cfg.Burst = 3
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	rate := float64(time.Second) / float64(cfg.Every)
	l := &limiter{cfg: RateLimit{ReadPerSec: rate, ReadBurst: cfg.Burst}, buckets: map[string]*bucket{}}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if cfg.Every < 0 {
			return next
		}
		return func(c echo.Context) error {
			r := c.Request()
			if r.Method != http.MethodPost || r.URL.Path != agent.PathHeartbeat {
				return next(c)
			}
			token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if token = strings.TrimSpace(token); token == "" {
				return next(c)
			}
			sum := sha256.Sum256([]byte(token))
			allowed, wait := l.take("h"+string(sum[:16]), rate, cfg.Burst, cfg.Now())
			if allowed {
				return next(c)
			}
			secs := max(int(math.Ceil(wait.Seconds())), 1)
			c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
			return &apperr.Error{Code: apperr.ERATELIMIT, Key: "heartbeat.err.too_frequent", Args: []any{cfg.Every.String(), secs},
				Message: "a node sends at most one heartbeat per " + cfg.Every.String() + "; retry after " + strconv.Itoa(secs) + " s"}
		}
	}
}
