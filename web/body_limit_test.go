package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"suanli/agent"
	"suanli/dbtest"
	"suanli/fleet"
	"suanli/handlers"
	"suanli/handlers/account"
	"suanli/handlers/launchapi"
	"suanli/models"
	"suanli/routenames"
)

// rawRequest sends a request head and then body on a connection of its
// own, and reads the answer while the body is still being written: a
// server that refuses a body early answers without reading it, which an
// http.Client may report as a failed write instead of the answer.
func rawRequest(t *testing.T, addr, method, path string, header http.Header, contentLength int64, body io.Reader) *http.Response {
	t.Helper()
	res, err := sendRaw(t, addr, method, path, header, contentLength, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return res
}

// sendRaw is rawRequest returning its error (for other goroutines).
func sendRaw(t *testing.T, addr, method, path string, header http.Header, contentLength int64, body io.Reader) (*http.Response, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	var head strings.Builder
	fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, addr)
	chunked := contentLength < 0
	if chunked {
		head.WriteString("Transfer-Encoding: chunked\r\n")
	} else {
		fmt.Fprintf(&head, "Content-Length: %d\r\n", contentLength)
	}
	for k, vs := range header {
		for _, v := range vs {
			fmt.Fprintf(&head, "%s: %s\r\n", k, v)
		}
	}
	head.WriteString("Connection: close\r\n\r\n")
	if _, err := io.WriteString(conn, head.String()); err != nil {
		conn.Close()
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		// Errors are expected once the server stops reading.
		if chunked {
			cw := httputil.NewChunkedWriter(conn)
			if _, err := io.Copy(cw, body); err == nil {
				_ = cw.Close()
				_, _ = io.WriteString(conn, "\r\n")
			}
			return
		}
		_, _ = io.Copy(conn, body)
	})
	defer func() {
		conn.Close()
		wg.Wait()
	}()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the answer's body: %w", err)
	}
	res.Body = io.NopCloser(strings.NewReader(string(b)))
	return res, nil
}

// bodyOf returns a response's body as a string.
func bodyOf(res *http.Response) string {
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// filler is an endless stream of 'x'.
type filler struct{}

func (filler) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// bigMultipart is a multipart form with one file part of size bytes, as a
// stream, with its content type and total length.
func bigMultipart(size int64) (io.Reader, string, int64) {
	var head strings.Builder
	mw := multipart.NewWriter(&head)
	_ = mw.WriteField("note", "hello")
	_, _ = mw.CreateFormFile("upload", "big.bin")
	tail := "\r\n--" + mw.Boundary() + "--\r\n"
	r := io.MultiReader(strings.NewReader(head.String()), io.LimitReader(filler{}, size), strings.NewReader(tail))
	return r, mw.FormDataContentType(), int64(head.Len()) + size + int64(len(tail))
}

// multipartFiles lists the multipart-* files in dir.
func multipartFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "multipart-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// No request leaves a file behind: a multipart body is never spooled to
// the temporary directory (forms are small and parsed in memory), and a
// body over its route's limit is a 413 before anything reads it.
func TestNoRequestLeavesFilesBehind(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	a := newSQLiteApp(t)
	addr := strings.TrimPrefix(a.srv.URL, "http://")

	// A 40 MB multipart upload to /logout (anonymous, no CSRF token):
	// the standard library would keep 32 MB in memory and spool the rest.
	body, ctype, n := bigMultipart(40 << 20)
	res := rawRequest(t, addr, "POST", "/logout", http.Header{"Content-Type": {ctype}, "Accept-Language": {"en"}}, n, body)
	must(t, len(multipartFiles(t, tmp)) == 0, "files left behind: %v", multipartFiles(t, tmp))
	must(t, res.StatusCode == http.StatusRequestEntityTooLarge, "40 MB to /logout: %d, want 413", res.StatusCode)
	contains(t, bodyOf(res), "at most 64 KiB")

	// The same sent chunked (no Content-Length): refused at the limit.
	body, ctype, _ = bigMultipart(40 << 20)
	res = rawRequest(t, addr, "POST", "/logout", http.Header{"Content-Type": {ctype}}, -1, body)
	must(t, res.StatusCode == http.StatusRequestEntityTooLarge, "40 MB chunked to /logout: %d, want 413", res.StatusCode)
	must(t, len(multipartFiles(t, tmp)) == 0, "files left behind: %v", multipartFiles(t, tmp))

	// A multipart form within the limit, with a file part, is read (and
	// refused for its missing CSRF token) and leaves nothing either.
	body, ctype, n = bigMultipart(32 << 10)
	res = rawRequest(t, addr, "POST", "/logout", http.Header{"Content-Type": {ctype}}, n, body)
	must(t, res.StatusCode == http.StatusForbidden, "a small multipart form without a token: %d, want 403", res.StatusCode)
	must(t, len(multipartFiles(t, tmp)) == 0, "files left behind: %v", multipartFiles(t, tmp))

	// A logged-in form post sent as multipart still works.
	u := mustUser(t, a.db, "multipart@example.com", "Mia Multipart", false)
	ac := newActor(a, "multipart")
	var buf strings.Builder
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("email", u.Email)
	_ = mw.WriteField("password", testPassword)
	_ = mw.WriteField("_csrf", ac.csrf())
	fw, _ := mw.CreateFormFile("attachment", "note.txt")
	_, _ = io.WriteString(fw, "not needed, not kept")
	_ = mw.Close()
	req, _ := http.NewRequest("POST", a.srv.URL+a.url(routenames.AuthLoginPost), strings.NewReader(buf.String()))
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res2, err := ac.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res2.Body.Close()
	must(t, res2.StatusCode == http.StatusSeeOther, "multipart login: %d, want 303", res2.StatusCode)
	must(t, len(multipartFiles(t, tmp)) == 0, "files left behind: %v", multipartFiles(t, tmp))
}

// Bodies are limited per route: forms and the JSON API small, a launch
// large enough for its spec at its limits, agents' heartbeats and results
// as large as they need; above its limit a body
// is a 413 in the error shape of the route (JSON for the API and agents,
// a page for people), and below it the route answers as ever.
func TestBodiesOverTheirRouteLimitAre413(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newAppWith(t, db, func(h *handlers.Handler) { h.StripeWebhookSecret = webhookSecret })
		addr := strings.TrimPrefix(a.srv.URL, "http://")
		// Credentials, so that every route gets as far as reading its body.
		_, _, token := apiUser(t, a, "limits@example.com")
		var node models.Node
		if err := db.R.Order("id").First(&node).Error; err != nil {
			t.Fatal(err)
		}
		cred, err := (&fleet.Fleet{DB: db}).IssueCredential(context.Background(), node.ID)
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name, path, ctype, bearer string
			limit                     int64
			api                       bool
		}{
			{"a form", "/login", "application/x-www-form-urlencoded", "", 64 << 10, false},
			{"the JSON API", "/api/v1/wallet/topups", "application/json", token, 64 << 10, true},
			{"a launch", "/api/v1/rentals", "application/json", token, launchapi.MaxCreateBytes, true},
			{"a heartbeat", agent.PathHeartbeat, "application/json", cred, agent.MaxHeartbeatBytes, true},
			{"a task result", "/agent/v1/tasks/1/result", "application/json", cred, agent.MaxResultBytes, true},
			{"a webhook", "/webhooks/stripe", "application/json", "", account.MaxWebhookBytes, true},
		}
		for _, tc := range cases {
			header := http.Header{"Content-Type": {tc.ctype}, "Accept-Language": {"en"}}
			if tc.bearer != "" {
				header.Set("Authorization", "Bearer "+tc.bearer)
			}
			for _, chunked := range []bool{false, true} {
				n := tc.limit + 1
				if chunked {
					n = -1
				}
				res := rawRequest(t, addr, "POST", tc.path, header, n, io.LimitReader(filler{}, tc.limit+1))
				b := bodyOf(res)
				if res.StatusCode != http.StatusRequestEntityTooLarge {
					t.Errorf("%s, %d bytes (chunked %v): %d, want 413: %s", tc.name, tc.limit+1, chunked, res.StatusCode, snippet(b))
					continue
				}
				if tc.api {
					var e struct {
						Error struct{ Code, Param string } `json:"error"`
					}
					must(t, json.Unmarshal([]byte(b), &e) == nil && e.Error.Code == "too_large" && e.Error.Param == "body", "%s: %s", tc.name, b)
				} else {
					contains(t, b, "too large")
				}
			}
			// At the limit, the route reads the body and answers for it.
			res := rawRequest(t, addr, "POST", tc.path, header, tc.limit, io.LimitReader(filler{}, tc.limit))
			must(t, res.StatusCode < 500 && res.StatusCode != http.StatusRequestEntityTooLarge, "%s at its limit: %d", tc.name, res.StatusCode)
		}
	})
}

// countingListener counts the bytes the server reads from its connections.
type countingListener struct {
	net.Listener
	read atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, n: &l.read}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// What a large body costs the server is bounded by its route's limit, not
// by the body: ten concurrent 30 MB form values (sent chunked, so nothing
// announces their size) are each read only up to the form limit, plus
// what the server drains for keep-alive.
func TestLargeBodiesAreReadOnlyUpToTheLimit(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	srv := httptest.NewUnstartedServer(a.e)
	cl := &countingListener{Listener: srv.Listener}
	srv.Listener = cl
	srv.Start()
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")

	const senders, size = 10, 30 << 20
	var wg sync.WaitGroup
	codes := make([]int, senders)
	for i := range senders {
		wg.Go(func() {
			body := io.MultiReader(strings.NewReader("note="), io.LimitReader(filler{}, size))
			res, err := sendRaw(t, addr, "POST", "/signup", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, -1, body)
			if err != nil {
				t.Errorf("sender %d: %v", i, err)
				return
			}
			codes[i] = res.StatusCode
		})
	}
	wg.Wait()
	for i, c := range codes {
		must(t, c == http.StatusRequestEntityTooLarge, "sender %d: %d, want 413", i, c)
	}
	// Per request: the form limit, plus the 256 KiB a Go server may drain
	// after a handler, plus buffers and headers.
	perRequest := int64(64<<10 + 256<<10 + 64<<10)
	must(t, cl.read.Load() <= senders*perRequest, "the server read %d bytes of %d sent; at most %d expected", cl.read.Load(), int64(senders*size), senders*perRequest)
}
