package web

import (
	"crypto/sha256"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
)

// RateLimit is the rate limit of API requests authenticated by a token:
// a token bucket per token and class (reads: GET and HEAD; writes: the
// rest). The buckets live in this process's memory, so every replica
// counts on its own: behind N replicas a token may make up to N times the
// rate (docs/api.md says so). A class with a rate of 0 is not limited.
type RateLimit struct {
	// ReadPerSec and ReadBurst bound GET and HEAD requests.
	ReadPerSec float64
	ReadBurst  int
	// WritePerSec and WriteBurst bound the other methods.
	WritePerSec float64
	WriteBurst  int
	// Now is the clock; nil means time.Now. Tests step it by hand.
	Now func() time.Time
}

// bucket is one token's allowance in one class.
type bucket struct {
	tokens float64
	at     time.Time
}

// limiter holds the buckets of every token seen recently.
type limiter struct {
	cfg     RateLimit
	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

// sweepEvery is how often idle buckets are dropped, so that memory stays
// proportional to the tokens in use.
const sweepEvery = time.Minute

// take spends one request of key's bucket in a class of rate and burst.
// It answers whether the request may go ahead and, if not, how long
// until it may.
func (l *limiter) take(key string, rate float64, burst int, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > sweepEvery {
		l.sweep(now)
	}
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: float64(burst), at: now}
		l.buckets[key] = b
	}
	if el := now.Sub(b.at).Seconds(); el > 0 {
		b.tokens = math.Min(float64(burst), b.tokens+el*rate)
		b.at = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / rate * float64(time.Second))
	return false, wait
}

// sweep drops the buckets that have refilled: forgetting them changes nothing.
func (l *limiter) sweep(now time.Time) {
	l.swept = now
	for k, b := range l.buckets {
		rate, burst := l.cfg.ReadPerSec, l.cfg.ReadBurst
		if strings.HasPrefix(k, "w") {
			rate, burst = l.cfg.WritePerSec, l.cfg.WriteBurst
		}
		if b.tokens+now.Sub(b.at).Seconds()*rate >= float64(burst) {
			delete(l.buckets, k)
		}
	}
}

// rateLimit limits API requests made with a bearer token (after
// authenticate, so only tokens that name a user count). Over the limit
// the answer is 429 in the one error shape, with Retry-After in whole
// seconds. Session requests from the browser are not limited here.
func rateLimit(cfg RateLimit) echo.MiddlewareFunc {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	l := &limiter{cfg: cfg, buckets: map[string]*bucket{}}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || !isAPI(c) || handlers.CurrentUser(c) == nil {
				return next(c)
			}
			class, rate, burst := "r", cfg.ReadPerSec, cfg.ReadBurst
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				class, rate, burst = "w", cfg.WritePerSec, cfg.WriteBurst
			}
			if rate <= 0 {
				return next(c)
			}
			// The bucket is keyed by a hash: the process never keeps tokens.
			sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
			allowed, wait := l.take(class+string(sum[:16]), rate, max(burst, 1), cfg.Now())
			if allowed {
				return next(c)
			}
			secs := int(math.Ceil(wait.Seconds()))
			c.Response().Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
			what := "reads"
			if class == "w" {
				what = "writes"
			}
			return apperr.Errorf(apperr.ERATELIMIT, "rate limit of %g %s per second per token (burst %d) exceeded; retry after %d s", rate, what, burst, max(secs, 1))
		}
	}
}
