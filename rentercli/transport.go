package rentercli

import (
	"context"
	"errors"
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
// answer).
const (
	rateRetries    = 3
	netRetries     = 2
	maxRetryWait   = 30 * time.Second
	headerTimeout  = 60 * time.Second
	netRetryPause  = time.Second
	connectTimeout = 15 * time.Second
)

// retryingDoer is the HTTP doer the generated client sends through: the
// standard client plus the retries above. It is the only place the CLI
// touches HTTP itself; every request is made by the generated client.
type retryingDoer struct {
	client *http.Client
	// waiting is told each wait before a retry (the CLI says so on
	// standard error); nil: silent.
	waiting func(wait time.Duration, rateLimited bool)
}

// newDoer is the doer with the CLI's timeouts: a connection within
// connectTimeout, the answer's headers within headerTimeout (a followed
// log stream may then run as long as it likes).
func newDoer(waiting func(time.Duration, bool)) *retryingDoer {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}).DialContext
	tr.ResponseHeaderTimeout = headerTimeout
	return &retryingDoer{client: &http.Client{Transport: tr}, waiting: waiting}
}

// Do sends req, retrying as the constants above say.
func (d *retryingDoer) Do(req *http.Request) (*http.Response, error) {
	safe := req.Method == http.MethodGet || req.Method == http.MethodHead || req.Header.Get("Idempotency-Key") != ""
	rated, failed := 0, 0
	for {
		res, err := d.client.Do(req)
		var wait time.Duration
		switch {
		case err != nil:
			if !safe || failed >= netRetries || req.Context().Err() != nil || !retryable(err) {
				return nil, err
			}
			failed++
			wait = netRetryPause * time.Duration(failed)
		case res.StatusCode == http.StatusTooManyRequests && rated < rateRetries:
			rated++
			wait = retryAfter(res.Header.Get("Retry-After"))
			res.Body.Close()
		default:
			return res, nil
		}
		if req.Body != nil && req.GetBody == nil {
			// A body that cannot be read again cannot be sent again.
			if err != nil {
				return nil, err
			}
			return nil, errors.New("rate limited and the request cannot be repeated")
		}
		if d.waiting != nil {
			d.waiting(wait, err == nil)
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
