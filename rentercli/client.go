package rentercli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"suanli/apiclient"
)

// userAgent names the CLI to the server (its logs, its rate limiter).
const userAgent = "suanli-cli/1"

// newClient is the generated API client for server, sending token as
// the bearer token (none: the public endpoints only), through the
// retrying doer.
func (a *app) newClient(server, token string) (*apiclient.ClientWithResponses, error) {
	doer := newDoer(func(wait time.Duration, why waitReason) {
		key := "cli.wait.network"
		switch why {
		case waitRateLimited:
			key = "cli.wait.rate_limited"
		case waitInProgress:
			key = "cli.wait.in_progress"
		}
		fmt.Fprintln(a.stderr, a.T(key, wait.Round(time.Second).String()))
	})
	return apiclient.NewClientWithResponses(server,
		apiclient.WithHTTPClient(doer),
		apiclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			req.Header.Set("User-Agent", userAgent)
			req.Header.Set("Accept-Language", a.lang)
			return nil
		}))
}

// login is the client of the saved (or overridden) server and token; no
// token is exit 3 with what to do.
func (a *app) login() (*apiclient.ClientWithResponses, settings, error) {
	s, err := a.settings()
	if err != nil {
		return nil, s, err
	}
	if s.server == "" || s.token == "" {
		return nil, s, a.errorf(ExitUnauthorised, "cli.err.not_logged_in")
	}
	c, err := a.newClient(s.server, s.token)
	return c, s, err
}

// settings are the command's server and token (see loadSettings), the
// server's URL normalised as login saves it: SUANLI_SERVER=host:port is
// https://host:port, and a value that is no http(s) URL is a usage
// error naming where it came from. A token about to be sent in plain
// HTTP beyond this machine is warned of (once, on standard error).
func (a *app) settings() (settings, error) {
	s, err := loadSettings(a.env)
	if err != nil || s.server == "" {
		return s, err
	}
	srv, err := normaliseServer(s.server)
	if err != nil {
		from := "SUANLI_SERVER"
		if a.env["SUANLI_SERVER"] == "" {
			from = filepath.Join(s.dir, configFileName)
		}
		return s, a.usageErr("cli.err.bad_server_in", from, s.server, err)
	}
	s.server = srv
	if s.token != "" {
		a.warnPlainHTTP(srv)
	}
	return s, nil
}

// warnPlainHTTP says on standard error, once per command, that the token
// travels unencrypted to server when it is an http:// URL of another
// machine (loopback is the developer's own server).
func (a *app) warnPlainHTTP(server string) {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "http" || isLoopbackHost(u.Hostname()) || a.warnedPlain {
		return
	}
	a.warnedPlain = true
	fmt.Fprintln(a.stderr, a.T("cli.warn.plain_http", server))
}

// isLoopbackHost reports whether host names this machine: localhost (and
// its subdomains, which resolvers keep on loopback) or a loopback address.
func isLoopbackHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// normaliseServer checks a server URL and trims its trailing slash; a
// bare host means https.
func normaliseServer(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", errors.New("empty")
	}
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q is not an http(s) URL", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// answer checks one answer of the generated client (res is its
// *…Response): no answer (err) is an error naming the failure; a status
// other than the wanted ones is the API's error, decoded.
func (a *app) answer(err error, res any, want ...int) error {
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		var ip *inProgressError
		if errors.As(err, &ip) {
			// Not a refusal: what was asked may yet be done.
			return a.errorf(ExitError, "cli.err.in_progress", ip.waited)
		}
		return a.errorf(ExitError, "cli.err.unreachable", err)
	}
	v := reflect.ValueOf(res).Elem()
	hr, _ := v.FieldByName("HTTPResponse").Interface().(*http.Response)
	body := v.FieldByName("Body").Bytes()
	if hr == nil {
		return a.errorf(ExitError, "cli.err.unreachable", "no answer")
	}
	for _, w := range want {
		if hr.StatusCode != w {
			continue
		}
		// The generated client decodes a JSON answer into JSON<status>;
		// one it could not decode (not JSON: a proxy's page) is no answer
		// the command can read.
		if f := v.FieldByName("JSON" + strconv.Itoa(w)); f.IsValid() && f.IsNil() {
			return a.errorf(ExitError, "cli.err.unexpected", hr.Request.Method+" "+hr.Request.URL.Path)
		}
		return nil
	}
	return decodeAPIError(hr.StatusCode, body)
}

// decodeAPIError reads the one error shape; an answer in another shape
// (a proxy's page) is described by its status and its first bytes.
func decodeAPIError(status int, body []byte) *apiError {
	var e apiclient.Error
	if err := json.Unmarshal(body, &e); err == nil && e.Error.Code != "" {
		ae := &apiError{status: status, code: e.Error.Code, message: e.Error.Message}
		if e.Error.Param != nil {
			ae.param = *e.Error.Param
		}
		return ae
	}
	text := strings.TrimSpace(string(body))
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	return &apiError{status: status, message: fmt.Sprintf("%d %s: %s", status, http.StatusText(status), text)}
}

// printJSON writes an API answer's body as it came, indented: --json's
// output is the API's own document (the shapes of openapi.json).
func printJSON(w io.Writer, body []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// ptr is a pointer to v (the generated types' optional fields).
func ptr[T any](v T) *T { return &v }
