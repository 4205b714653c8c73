package web_test

import (
	"bytes"
	"context"
	"errors"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"suanli/accounts"
	"suanli/routenames"
)

// bearerTransport sends every request with an API token, as a tool does.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// tokenActor is a tool calling the API with a token: no cookies, no CSRF
// token, every request with Authorization: Bearer.
func tokenActor(a *app, name, token string) *actor {
	jar, _ := cookiejar.New(nil)
	return &actor{name: name, a: a, c: &http.Client{Jar: jar, Transport: bearerTransport{token}, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// A tool reads a running rental's output with an API token: the last
// lines as text (each with its time), then the live stream the page gets
// (server-sent events) for longer than the access recheck's period (a
// token's stream is rechecked by the token, not by a session it does not
// have), until the token is revoked, which ends the stream. It moves
// files in and out of the workspace with the token and no CSRF token.
// Bad input is a 400 naming the parameter; another organisation's member
// gets 404 for everything.
func TestLogsAndFilesThroughTheAPI(t *testing.T) {
	t.Parallel()
	w := newWorkspaceRig(t, nil)
	a := w.a
	ctx := context.Background()
	svc := &accounts.Service{DB: a.db}
	token, tok, err := svc.CreateAPIToken(ctx, w.renter.user, "logs")
	must(t, err == nil, "token: %v", err)
	tool := tokenActor(a, "tool", token)
	base := "/api/v1/rentals/" + strconv.FormatInt(w.rental, 10)
	must(t, a.url(routenames.APIRentalsLogs, idParam(w.rental)) == base+"/logs", "the route's URL")

	// The last lines, as text.
	res, body := tool.do("GET", base+"/logs?tail=50", nil)
	must(t, res.StatusCode == http.StatusOK && strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain"), "logs: %d %q %s", res.StatusCode, res.Header.Get("Content-Type"), snippet(body))
	must(t, regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\S+ `).MatchString(body), "logs:\n%s", snippet(body))
	must(t, strings.Contains(res.Header.Get("Cache-Control"), "no-store"), "logs are cached: %q", res.Header.Get("Cache-Control"))
	for _, bad := range []string{"0", "10001", "x"} {
		res, body := tool.do("GET", base+"/logs?tail="+bad, nil)
		must(t, res.StatusCode == http.StatusBadRequest, "tail=%s: %d %s", bad, res.StatusCode, body)
		code, param, _ := errorCode(t, body)
		must(t, code == "invalid" && param == "tail", "tail=%s: %s %s", bad, code, param)
	}

	// Another organisation's member with a token: nothing is there.
	_, otherToken := apiToken(t, a, "logs-other-"+randomHex(t)+"@example.com")
	other := tokenActor(a, "other", otherToken)
	for _, p := range []string{base + "/logs", base + "/logs?follow=1", base + "/files", base + "/files/download?path=x"} {
		res, body := other.do("GET", p, nil)
		must(t, res.StatusCode == http.StatusNotFound, "another org's GET %s: %d %s", p, res.StatusCode, snippet(body))
	}

	// Files: up with the token alone, listed, and down again.
	content := []byte("weights " + randomHex(t) + "\n")
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("dir", "api-up")
	fw, _ := mw.CreateFormFile("file", "model.txt")
	_, _ = fw.Write(content)
	_ = mw.Close()
	res, body = tool.do("POST", base+"/files", nil, "Content-Type", mw.FormDataContentType())
	must(t, res.StatusCode == http.StatusBadRequest, "an upload without a body: %d %s", res.StatusCode, body)
	req, _ := http.NewRequest("POST", a.srv.URL+base+"/files", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, body = a.do(requestWith(req, "Authorization", "Bearer "+token))
	must(t, res.StatusCode == http.StatusCreated, "upload: %d %s", res.StatusCode, body)
	up := decode[struct {
		Uploads []struct {
			Path   string `json:"path"`
			Size   int64  `json:"size"`
			SHA256 string `json:"sha256"`
		} `json:"uploads"`
	}](t, body)
	must(t, len(up.Uploads) == 1 && up.Uploads[0].Path == "/workspace/api-up/model.txt" && up.Uploads[0].Size == int64(len(content)), "uploads: %s", body)
	res, body = tool.do("GET", base+"/files?path=api-up", nil)
	must(t, res.StatusCode == http.StatusOK && strings.Contains(body, `"name":"model.txt"`), "list: %d %s", res.StatusCode, body)
	res, body = tool.do("GET", base+"/files/download?"+url.Values{"path": {"api-up/model.txt"}}.Encode(), nil)
	must(t, res.StatusCode == http.StatusOK && body == string(content), "download: %d %q", res.StatusCode, body)
	res, body = tool.do("GET", base+"/files/download?path=no-such-file", nil)
	must(t, res.StatusCode == http.StatusNotFound, "a missing file: %d %s", res.StatusCode, body)
	res, body = tool.do("GET", base+"/files?path="+url.QueryEscape(`a\b`), nil)
	must(t, res.StatusCode == http.StatusBadRequest, "a bad path: %d %s", res.StatusCode, body)
	if code, param, _ := errorCode(t, body); code != "invalid" || param != "path" {
		t.Errorf("a bad path: %s %s", code, param)
	}

	// Follow: the renter's program prints a line every half second for a
	// while (the waiting is the container's); the stream, opened with the
	// token, still delivers after several rechecks (one a second here).
	term, _, err := wsDial(t, w.renter, w.base+"/terminal/ws", a.srv.URL)
	must(t, err == nil, "the terminal: %v", err)
	defer term.Close(websocket.StatusNormalClosure, "")
	es := openEvents(t, tool, base+"/logs?follow=1&tail=1", "")
	opened := time.Now()
	marker := "tick-" + randomHex(t)
	terminalRun(t, term, "(for i in $(seq 1 600); do echo "+marker+"-$i > /proc/1/fd/1; sleep 0.5; done &) ; echo started-$((6*7))", "started-42")
	es.until(t, marker+"-8", "")
	must(t, time.Since(opened) > 3*time.Second, "the eighth tick came %v after the stream opened", time.Since(opened))

	// Revoked, the token's stream ends at the next recheck.
	res, body = tool.do("DELETE", a.url(routenames.APITokensRevoke, idParam(tok.ID)), nil)
	must(t, res.StatusCode == http.StatusNoContent, "revoke: %d %s", res.StatusCode, body)
	revoked := time.Now()
	for {
		_, err := es.next()
		if err == nil {
			continue
		}
		must(t, !errors.Is(err, context.DeadlineExceeded), "the stream outlived its token: %v", err)
		break
	}
	must(t, time.Since(revoked) < 30*time.Second, "the stream ended %v after the token was revoked", time.Since(revoked))
	res, _ = tool.do("GET", base+"/logs", nil)
	must(t, res.StatusCode == http.StatusUnauthorized, "a revoked token reads the logs: %d", res.StatusCode)
}

// requestWith sets a header on req.
func requestWith(req *http.Request, name, value string) *http.Request {
	req.Header.Set(name, value)
	return req
}
