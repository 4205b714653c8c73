package rentercli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Retry limits: a 429 is waited out (its Retry-After, at most
// maxRetryWait each time) up to rateRetries times before the command
// gives up with exit 7; a request that got no answer (the connection
// refused or reset, no answer in time) is sent again up to netRetries
// times when sending it twice does no harm: a GET, or a write carrying
// an Idempotency-Key (the server answers its repeat with the first
// answer). Such a repeat may find the first request still running on
// the server (409, param Idempotency-Key): it is asked again, after
// waits growing from inProgressPause to maxInProgressPause, until the
// first answer is replayed or inProgressFor has passed. That deadline
// stays well below the server's idempotencyStale (5 min), after which
// it would take an unfinished claim for dead and run the repeat anew.
const (
	rateRetries        = 3
	netRetries         = 2
	maxRetryWait       = 30 * time.Second
	headerTimeout      = 60 * time.Second
	netRetryPause      = time.Second
	connectTimeout     = 15 * time.Second
	inProgressPause    = time.Second
	maxInProgressPause = 10 * time.Second
	inProgressFor      = 2 * time.Minute
)

// waitReason is why the doer waits before sending a request again (the
// CLI says which on standard error).
type waitReason int

const (
	waitNetwork     waitReason = iota // no answer came
	waitRateLimited                   // 429
	waitInProgress                    // the first request with this Idempotency-Key is still running
)

// inProgressError is a repeated write whose first request was still
// running on the server when the doer stopped asking: it may yet take
// effect (a rental created, a top-up made).
type inProgressError struct{ waited time.Duration }

func (e *inProgressError) Error() string {
	return fmt.Sprintf("the server was still working on the first request after %s", e.waited)
}

// retryingDoer is the HTTP doer the generated client sends through: the
// standard client plus the retries above. It is the only place the CLI
// touches HTTP itself; every request is made by the generated client.
type retryingDoer struct {
	client *http.Client
	// waiting is told each wait before a retry (the CLI says so on
	// standard error); nil: silent.
	waiting func(wait time.Duration, why waitReason)
	// inProgressFor bounds the waits for a first request still running
	// (inProgressFor; a test shortens it).
	inProgressFor time.Duration
}

// newDoer is the doer with the CLI's timeouts: a connection within
// connectTimeout, the answer's headers within headerTimeout (a followed
// log stream may then run as long as it likes).
func newDoer(waiting func(time.Duration, waitReason)) *retryingDoer {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}).DialContext
	tr.ResponseHeaderTimeout = headerTimeout
	return &retryingDoer{client: &http.Client{Transport: tr}, waiting: waiting, inProgressFor: inProgressFor}
}

// Do sends req, retrying as the constants above say.
func (d *retryingDoer) Do(req *http.Request) (*http.Response, error) {
	keyed := req.Header.Get("Idempotency-Key") != ""
	safe := req.Method == http.MethodGet || req.Method == http.MethodHead || keyed
	rated, failed, pending, sent := 0, 0, 0, 0
	var pendingSince time.Time
	for {
		res, err := d.client.Do(req)
		sent++
		var wait time.Duration
		why := waitNetwork
		switch {
		case err != nil:
			if !safe || failed >= netRetries || req.Context().Err() != nil || !retryable(err) {
				return nil, err
			}
			failed++
			wait = netRetryPause * time.Duration(failed)
		case res.StatusCode == http.StatusTooManyRequests && rated < rateRetries:
			rated++
			wait, why = retryAfter(res.Header.Get("Retry-After")), waitRateLimited
			res.Body.Close()
		case keyed && sent > 1 && res.StatusCode == http.StatusConflict && keyInProgress(res):
			// A repeat of a request that may have reached the server:
			// with the same key and body, this 409 can only mean the
			// first is still running there (a fresh key cannot clash
			// with another request's). Answering it with exit 12 would
			// leave a rental that exists and bills; ask again until the
			// first answer is replayed.
			if pending == 0 {
				pendingSince = time.Now()
			}
			if time.Since(pendingSince) >= d.inProgressFor {
				res.Body.Close()
				return nil, &inProgressError{waited: time.Since(pendingSince).Round(time.Second)}
			}
			pending++
			wait, why = min(inProgressPause<<(pending-1), maxInProgressPause), waitInProgress
			res.Body.Close()
		default:
			return res, nil
		}
		if req.Body != nil && req.GetBody == nil {
			// A body that cannot be read again cannot be sent again.
			if err != nil {
				return nil, err
			}
			return nil, errors.New("the request cannot be repeated")
		}
		if d.waiting != nil {
			d.waiting(wait, why)
		}
		if err := sleepCtx(req.Context(), wait); err != nil {
			return nil, err
		}
		next := req.Clone(req.Context())
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			next.Body = body
		}
		req = next
	}
}

// keyInProgress reports whether res (a 409) is the API's error about the
// request's Idempotency-Key; it leaves res's body readable again.
func keyInProgress(res *http.Response) bool {
	b, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return false
	}
	var e struct {
		Error struct {
			Param string `json:"param"`
		} `json:"error"`
	}
	return json.Unmarshal(b, &e) == nil && e.Error.Param == "Idempotency-Key"
}

// retryable reports whether a request that failed with err may have
// failed for a passing reason (a timeout, a refused or reset connection)
// rather than a wrong URL or a bad certificate.
func retryable(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true // the connection closed before the answer
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

// retryAfter reads Retry-After's delay in seconds (the server sends
// whole seconds), at least one second and at most maxRetryWait.
func retryAfter(h string) time.Duration {
	secs, err := strconv.Atoi(h)
	if err != nil || secs < 1 {
		return time.Second
	}
	return min(time.Duration(secs)*time.Second, maxRetryWait)
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
