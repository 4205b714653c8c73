package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// requestTimeout bounds a heartbeat or a result POST, so that a hung
// connection cannot stall a loop; the long-poll gets PollWait on top.
const requestTimeout = 30 * time.Second

// maxReplyBytes bounds what is read from a server reply.
const maxReplyBytes = 4 << 20

// statusError is a reply from the server with a non-2xx status.
type statusError struct {
	Code int
	Body string
	// RetryAfter is the wait the server asked for (Retry-After, in
	// seconds, on a 429 or 503), or 0.
	RetryAfter time.Duration
}

func (e *statusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("server answered %d", e.Code)
	}
	return fmt.Sprintf("server answered %d: %s", e.Code, e.Body)
}

func isUnauthorized(err error) bool {
	var se *statusError
	return errors.As(err, &se) && se.Code == http.StatusUnauthorized
}

func isTooMany(err error) bool {
	var se *statusError
	return errors.As(err, &se) && se.Code == http.StatusTooManyRequests
}

func isNotFound(err error) bool {
	var se *statusError
	return errors.As(err, &se) && se.Code == http.StatusNotFound
}

// progressTimeout bounds one progress post: progress is a courtesy, and
// a slow server must not hold it up for long.
const progressTimeout = 10 * time.Second

// postProgress tells the server how task id is going (an image pull).
// A server older than the progress endpoint answers 404.
func (a *Agent) postProgress(ctx context.Context, id int64, p Progress) error {
	return a.call(ctx, http.MethodPost, fmt.Sprintf(PathProgress, id), progressTimeout, p, nil)
}

// retryable reports whether sending the same request again may succeed:
// network errors, 5xx, 429, and 401 (the token may be replaced meanwhile).
// Any other 4xx means the server will not take it.
func retryable(err error) bool {
	var se *statusError
	if !errors.As(err, &se) {
		return true
	}
	return se.Code >= 500 || se.Code == http.StatusTooManyRequests || se.Code == http.StatusUnauthorized
}

// call sends in (if not nil) as JSON with the current bearer token and
// decodes a 2xx reply into out (if not nil).
func (a *Agent) call(ctx context.Context, method, path string, timeout time.Duration, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(withoutNUL(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, a.server+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.bearer())
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "suanli-agent/"+a.cfg.Version)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}

	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &statusError{Code: resp.StatusCode, Body: strings.TrimSpace(string(b)), RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"))}
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxReplyBytes))
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxReplyBytes)).Decode(out); err != nil {
		return fmt.Errorf("decoding %s reply: %w", path, err)
	}
	return nil
}

// withoutNUL replaces each NUL character escaped in the JSON text b
// ("\u0000") with U+FFFD. The server refuses a body that holds one (no
// column stores it), and what the agent sends quotes the host (a Docker
// or NVML error, a GPU's name), which may: a result refused for it would
// be retried in vain and lost. (json.Marshal already replaces bytes that
// are not UTF-8 in strings; a Result's Detail is itself Marshal's output.)
func withoutNUL(b []byte) []byte {
	const nul, repl = `\u0000`, `\ufffd`
	if !bytes.Contains(b, []byte(nul)) {
		return b
	}
	out := make([]byte, 0, len(b))
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\':
			// An escape: \u0000 is replaced, any other (\\ included) is
			// copied whole, so an escaped backslash before "u0000" stays.
			if bytes.HasPrefix(b[i:], []byte(nul)) {
				out = append(out, repl...)
				i += len(nul) - 1
				continue
			}
			if i+1 < len(b) {
				out = append(out, c, b[i+1])
				i++
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// Backoff bounds for retries after a failure.
const (
	backoffBase = 250 * time.Millisecond
	backoffMax  = 10 * time.Second
)

// backoff spaces out retries of one failing thing.
type backoff struct{ failures int }

// next is the wait before the next try: doubling per failure up to
// backoffMax, half of it random so that agents cut off together do not
// come back in step, and never less than half, so a retry never spins.
func (b *backoff) next() time.Duration {
	d := min(backoffBase<<min(b.failures, 16), backoffMax)
	b.failures++
	return d/2 + rand.N(d/2+1)
}

func (b *backoff) reset() { b.failures = 0 }

// maxRetryAfter bounds the wait a server may ask for, so that a wrong
// header cannot silence an agent for long.
const maxRetryAfter = 5 * time.Minute

// after is the wait before retrying what failed with err: the next
// backoff, or longer if the server asked for longer (Retry-After on a
// 429: a heartbeat sent too soon is refused until then, so trying sooner
// only costs both sides a request).
func (b *backoff) after(err error) time.Duration {
	d := b.next()
	var se *statusError
	if errors.As(err, &se) && se.RetryAfter > d {
		d = min(se.RetryAfter, maxRetryAfter)
	}
	return d
}

// parseRetryAfter reads a Retry-After header given in seconds (the form
// the server sends); anything else is 0.
func parseRetryAfter(v string) time.Duration {
	secs, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || secs <= 0 {
		return 0
	}
	return time.Duration(min(secs, int(maxRetryAfter/time.Second))) * time.Second
}

// sleep waits d or until ctx is done, and reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
