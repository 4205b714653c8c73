package web

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"suanli/agent"
	"suanli/apperr"
	"suanli/handlers/account"
	"suanli/handlers/launchapi"
	"suanli/handlers/orgverify"
)

// Request bodies are bounded per route: forms and the JSON API take
// defaultBodyLimit (the handlers read at most 64 KiB of JSON anyway); the
// routes below take what their senders need.
const defaultBodyLimit = 64 << 10

// bodyLimits are the routes (by name) whose bodies may be larger than
// defaultBodyLimit.
var bodyLimits = map[string]int64{
	"agent.heartbeat": agent.MaxHeartbeatBytes,
	"agent.result":    agent.MaxResultBytes,
	"webhooks.stripe": account.MaxWebhookBytes,
	// A launch spec at its limits, heavily escaped (launchapi.MaxCreateBytes).
	"api.rentals.create": launchapi.MaxCreateBytes,
	// An organisation's business licence (multipart, parsed in memory).
	"orgverify.submit": orgverify.MaxSubmitBytes,
	// The same through the API (the same multipart form).
	"api.orgverify.submit": orgverify.MaxSubmitBytes,
}

// bodyLimit is the most a request to the named route may send.
func bodyLimit(route string) int64 {
	if n, ok := bodyLimits[route]; ok {
		return n
	}
	return defaultBodyLimit
}

// guardInput checks every request's input before any handler, or the CSRF
// check that reads forms, sees it:
//
//   - its path, query and form names and values are valid UTF-8 without
//     a NUL character, and so is a JSON body, escapes included ("\u0000"):
//     PostgreSQL cannot store either in a text column and answers such a
//     query with an error, so without this any field could become a 500.
//     The answer is a 400 (apperr.EMALFORMED), and nothing has run;
//   - its body is at most its route's limit (bodyLimit): a larger one is a
//     413 (apperr.ETOOLARGE), at once when Content-Length says so, else
//     when the reader reaches the limit. Nothing reads more than the limit.
//
// Forms are parsed here, bounded, entirely in memory; should the standard
// library ever spool a multipart form to disk, its files are removed when
// the request ends. names maps "METHOD /path" to route names.
func guardInput(names map[string]string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if err := wellFormed("path", r.URL.Path); err != nil {
				return err
			}
			for k, vs := range r.URL.Query() {
				if err := wellFormedValues(k, vs); err != nil {
					return err
				}
			}
			if r.Body == nil || r.Body == http.NoBody || rawKind(c) != 0 {
				// A raw route's body streams through its handler, unread
				// and unbounded here (a file upload, a proxied app's).
				return next(c)
			}
			limit := bodyLimit(names[r.Method+" "+c.Path()])
			if r.ContentLength > limit {
				return tooLarge(limit)
			}
			body := &guardedBody{r: http.MaxBytesReader(c.Response(), r.Body, limit), limit: limit}
			r.Body = body
			defer func() {
				removeMultipart(r)
				removeMultipart(c.Request())
			}()
			if mt, _, _ := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType)); mt == echo.MIMEApplicationForm || mt == echo.MIMEMultipartForm {
				if err := parseForm(r, body, mt == echo.MIMEMultipartForm); err != nil {
					return err
				}
				return next(c)
			}
			body.scan = true
			err := next(c)
			if c.Response().Committed {
				return err
			}
			if err != nil && body.err == nil && !body.eof {
				// The handler gave up on the body: read the rest (at most
				// the limit, discarded) to tell a body too large or not
				// well-formed from one that was merely wrong.
				_, _ = io.Copy(io.Discard, body)
			}
			if body.err != nil {
				return body.err
			}
			return err
		}
	}
}

// parseForm parses r's form (in memory: the whole body is at most its
// limit) and checks its names and values.
func parseForm(r *http.Request, body *guardedBody, multipart bool) error {
	var err error
	switch {
	case multipart:
		err = r.ParseMultipartForm(body.limit)
	case r.Method != http.MethodPost && r.Method != http.MethodPut && r.Method != http.MethodPatch:
		// The standard library parses no form body of a DELETE (or GET):
		// read it here, so that it is checked like any other.
		b, rerr := io.ReadAll(body)
		if body.err != nil {
			return body.err
		}
		vals, perr := url.ParseQuery(string(b))
		if rerr != nil || perr != nil {
			return malformed("body")
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		for k, vs := range vals {
			if err := wellFormedValues(k, vs); err != nil {
				return err
			}
		}
		return nil
	default:
		err = r.ParseForm()
	}
	if body.err != nil {
		return body.err // too large
	}
	if err != nil {
		return malformed("body")
	}
	for k, vs := range r.PostForm {
		if err := wellFormedValues(k, vs); err != nil {
			return err
		}
	}
	if mf := r.MultipartForm; mf != nil {
		for k, vs := range mf.Value {
			if err := wellFormedValues(k, vs); err != nil {
				return err
			}
		}
		for k, fs := range mf.File {
			if err := wellFormed(k, k); err != nil {
				return err
			}
			for _, f := range fs {
				if err := wellFormed(k, f.Filename); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// removeMultipart deletes any temporary files of r's multipart form. The
// server does so only for the request it made, and middleware replaces
// it (WithContext), so without this a spooled file would stay.
func removeMultipart(r *http.Request) {
	if r != nil && r.MultipartForm != nil {
		_ = r.MultipartForm.RemoveAll()
	}
}

// wellFormedValues checks a parameter's name and values.
func wellFormedValues(name string, vs []string) error {
	if err := wellFormed(name, name); err != nil {
		return err
	}
	for _, v := range vs {
		if err := wellFormed(name, v); err != nil {
			return err
		}
	}
	return nil
}

// wellFormed refuses s, the value of param, if it is not valid UTF-8 or
// holds a NUL character.
func wellFormed(param, s string) error {
	if !apperr.Storable(s) {
		return apperr.Malformed(param)
	}
	return nil
}

// malformed is the answer to text that is not well-formed, in param.
func malformed(param string) error { return apperr.Malformed(param) }

// tooLarge is the answer to a body over its route's limit.
func tooLarge(limit int64) error {
	size := fmt.Sprintf("%d KiB", limit>>10)
	if limit >= 1<<20 {
		size = fmt.Sprintf("%d MiB", limit>>20)
	}
	return &apperr.Error{Code: apperr.ETOOLARGE, Field: "body", Key: "request.err.too_large", Args: []any{size},
		Message: "the request body is larger than this route accepts (at most " + size + ")"}
}

// guardedBody reads a request body through the route's limit and, when
// scan is set (a JSON body), checks what passes: valid UTF-8, no NUL byte
// and no \u0000 escape. The first problem sticks: every later read returns
// it, and the handler gets no byte of the chunk that held it.
type guardedBody struct {
	r     io.ReadCloser
	limit int64
	scan  bool
	// err is the problem found (ETOOLARGE or EMALFORMED), if any.
	err error
	eof bool
	// esc is how much of a \u0000 escape the bytes so far end with:
	// 1 after a backslash, 2 after "\u", up to 5 after "\u000".
	esc  int
	utf8 utf8Stream
}

func (b *guardedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.r.Read(p)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		b.err = tooLarge(b.limit)
		return 0, b.err
	}
	if b.scan {
		if !b.clean(p[:n]) || (err == io.EOF && !b.utf8.done()) {
			b.err = malformed("body")
			return 0, b.err
		}
	}
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *guardedBody) Close() error { return b.r.Close() }

// clean scans p for a NUL byte or a \u0000 escape (which may have begun
// in an earlier read) and checks its UTF-8.
func (b *guardedBody) clean(p []byte) bool {
	for _, c := range p {
		if c == 0 {
			return false
		}
		switch {
		case c == '\\':
			// A backslash after a backslash is an escaped one (esc 1 ends
			// it); anywhere else it begins an escape.
			if b.esc == 1 {
				b.esc = 0
			} else {
				b.esc = 1
			}
		case b.esc == 1 && c == 'u':
			b.esc = 2
		case b.esc >= 2 && c == '0':
			b.esc++
			if b.esc == 6 {
				return false
			}
		default:
			b.esc = 0
		}
	}
	return b.utf8.write(p)
}

// utf8Stream checks that a byte stream, read in pieces, is valid UTF-8: a
// character split across two reads is checked when it is complete.
type utf8Stream struct {
	tail [utf8.UTFMax]byte
	n    int
}

// write checks p, the next piece; false means the stream is not UTF-8.
func (u *utf8Stream) write(p []byte) bool {
	if u.n > 0 {
		for len(p) > 0 && !utf8.FullRune(u.tail[:u.n]) {
			u.tail[u.n] = p[0]
			u.n++
			p = p[1:]
		}
		if !utf8.FullRune(u.tail[:u.n]) {
			return true // still incomplete: p is used up
		}
		if r, size := utf8.DecodeRune(u.tail[:u.n]); r == utf8.RuneError && size <= 1 || size != u.n {
			return false
		}
		u.n = 0
	}
	// The last bytes may begin a character that the next piece ends.
	cut := len(p)
	for i := len(p) - 1; i >= 0 && i > len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				cut = i
			}
			break
		}
	}
	if !utf8.Valid(p[:cut]) {
		return false
	}
	u.n = copy(u.tail[:], p[cut:])
	return true
}

// done reports whether the stream ended on a whole character.
func (u *utf8Stream) done() bool { return u.n == 0 }
