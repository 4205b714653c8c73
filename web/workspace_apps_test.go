package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"suanli/dbtest"
	"suanli/dockertest"
	"suanli/handlers"
	"suanli/routenames"
)

// appsDomain is the tests' apps domain: every r{id}.apps.test reaches
// the test server (appsClient).
const appsDomain = "apps.test"

// appsClient is a browser with jar whose every host name reaches the test
// server (as wildcard DNS would); follow: whether it follows redirects.
func appsClient(a *app, jar http.CookieJar, follow bool) *http.Client {
	addr := strings.TrimPrefix(a.srv.URL, "http://")
	c := &http.Client{Jar: jar, Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
	if !follow {
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return c
}

// getWith GETs u with c and returns the answer and its body.
func getWith(t *testing.T, c *http.Client, u string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// With an apps domain, a rental's apps (Jupyter, declared ports) are
// served on an origin of their own, r{id}.apps.test, which the
// marketplace's cookies never reach and which serves nothing else: the
// marketplace's URLs send the browser there with a one-time ticket that
// becomes that origin's own session, for that user and rental only.
// Jupyter (its API and a kernel's WebSocket) and a declared port work
// there; the ticket works once; another rental's origin, another
// organisation's user and a visitor without the session get nothing; and
// "log out other sessions" ends the app's session too, as logging out
// ends the app sessions its marketplace session opened.
func TestWorkspaceAppsOnTheirOwnOrigin(t *testing.T) {
	t.Parallel()
	w := newWorkspaceRigOn(t, dbtest.SQLite(t), []int{8001}, func(h *handlers.Handler) { h.AppsDomain = appsDomain })
	a, base := w.a, w.base
	// The marketplace's own address, as configured, is the test server's.
	w.svc.BaseURL = a.srv.URL
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(a.srv.URL, "http://"))
	appsOrigin := "http://r" + strconv.FormatInt(w.rental, 10) + "." + appsDomain + ":" + port
	browser := appsClient(a, w.renter.c.Jar, true)
	step := appsClient(a, w.renter.c.Jar, false)

	// The marketplace's URL of Jupyter's API leads there, with a ticket.
	res, body := getWith(t, browser, a.srv.URL+base+"/jupyter/api/status")
	must(t, res.StatusCode == http.StatusOK && strings.Contains(body, `"kernels"`) && res.Request.URL.Host == strings.TrimPrefix(appsOrigin, "http://"),
		"Jupyter through the marketplace's URL: %d at %s: %s", res.StatusCode, res.Request.URL, snippet(body))
	appsURL, _ := url.Parse(appsOrigin)
	var appCookie string
	for _, ck := range w.renter.c.Jar.Cookies(appsURL) {
		must(t, !strings.HasPrefix(ck.Name, "suanli_") || ck.Name == "suanli_app", "the marketplace's cookie %s reached the apps origin", ck.Name)
		if ck.Name == "suanli_app" {
			appCookie = ck.Value
		}
	}
	must(t, appCookie != "", "no session on the apps origin")
	mainURL, _ := url.Parse(a.srv.URL)
	for _, ck := range w.renter.c.Jar.Cookies(mainURL) {
		must(t, ck.Name != "suanli_app", "the apps origin's session is the marketplace's cookie too")
	}

	// The ticket: once, for this rental only.
	res, _ = getWith(t, step, a.srv.URL+base+"/ports/8001/")
	must(t, res.StatusCode == http.StatusSeeOther, "a declared port through the marketplace's URL: %d, want a redirect", res.StatusCode)
	loc, _ := url.Parse(res.Header.Get("Location"))
	must(t, loc != nil && loc.Host == appsURL.Host && loc.Path == base+"/.suanli-app" && loc.Query().Get("next") == base+"/ports/8001/",
		"the redirect to the apps origin: %s", res.Header.Get("Location"))
	ticket := loc.Query().Get("ticket")
	other := "http://r999." + appsDomain + ":" + port
	res, _ = getWith(t, step, other+"/rentals/999/.suanli-app?ticket="+url.QueryEscape(ticket))
	must(t, res.StatusCode == http.StatusNotFound, "the ticket on another rental's origin: %d, want 404", res.StatusCode)
	fresh := appsClient(a, newJar(), false)
	res, _ = getWith(t, fresh, loc.String())
	must(t, res.StatusCode == http.StatusSeeOther && res.Header.Get("Location") == base+"/ports/8001/", "the ticket: %d %s", res.StatusCode, res.Header.Get("Location"))
	res, _ = getWith(t, appsClient(a, newJar(), false), loc.String())
	must(t, res.StatusCode == http.StatusNotFound, "the ticket a second time: %d, want 404", res.StatusCode)

	// The apps origin serves the rental's apps and nothing else.
	for _, p := range []string{"/account", "/console", base, base + "/terminal", base + "/files", "/rentals/999/jupyter/"} {
		res, _ := getWith(t, browser, appsOrigin+p)
		must(t, res.StatusCode == http.StatusNotFound, "the apps origin's %s: %d, want 404", p, res.StatusCode)
	}
	res, _ = getWith(t, step, strings.Replace(appsOrigin, "r"+strconv.FormatInt(w.rental, 10)+".", "r999.", 1)+base+"/jupyter/api/status")
	must(t, res.StatusCode == http.StatusNotFound, "this rental's apps on another rental's origin: %d, want 404", res.StatusCode)
	// A visitor without its session is sent to the marketplace's URL.
	res, _ = getWith(t, appsClient(a, newJar(), false), appsOrigin+base+"/jupyter/tree?x=1")
	must(t, res.StatusCode == http.StatusSeeOther && res.Header.Get("Location") == a.srv.URL+base+"/jupyter/tree?x=1",
		"the apps origin without its session: %d %s", res.StatusCode, res.Header.Get("Location"))
	// The marketplace's URL takes no app request but a page load.
	req, _ := http.NewRequest("POST", a.srv.URL+base+"/jupyter/api/contents", strings.NewReader(`{"type":"notebook"}`))
	req.Header.Set("Origin", a.srv.URL)
	res, err := w.renter.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	must(t, res.StatusCode == http.StatusNotFound, "an app's request to the marketplace's URL: %d, want 404", res.StatusCode)

	// Jupyter works there: a notebook, and print(6*7) in a kernel.
	req, _ = http.NewRequest("POST", appsOrigin+base+"/jupyter/api/kernels", strings.NewReader(`{}`))
	req.Header.Set("Origin", appsOrigin)
	req.Header.Set("Content-Type", "application/json")
	res, err = browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var kernel struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(kb, &kernel)
	must(t, res.StatusCode == http.StatusCreated && kernel.ID != "", "a kernel on the apps origin: %d %s", res.StatusCode, kb)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	kws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(appsOrigin, "http")+base+"/jupyter/api/kernels/"+kernel.ID+"/channels?session_id=apps",
		&websocket.DialOptions{HTTPClient: browser, HTTPHeader: http.Header{"Origin": {appsOrigin}}})
	if err != nil {
		t.Fatalf("the kernel's WebSocket on the apps origin: %v", err)
	}
	printed := kernelPrint(t, ctx, kws, "print(6*7)")
	_ = kws.Close(websocket.StatusNormalClosure, "")
	must(t, printed == "42\n", "print(6*7) on the apps origin printed %q", printed)
	// From the marketplace's origin: refused.
	if _, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(appsOrigin, "http")+base+"/jupyter/api/kernels/"+kernel.ID+"/channels?session_id=x",
		&websocket.DialOptions{HTTPClient: browser, HTTPHeader: http.Header{"Origin": {a.srv.URL}}}); err == nil {
		t.Fatal("a kernel WebSocket from another origin was accepted")
	}

	// A declared port there; its app gets neither origin's cookies.
	res, body = upload(t, w.renter, base, "", map[string][]byte{"echo.py": []byte(echoApp)})
	must(t, res.StatusCode == http.StatusCreated, "upload: %d %s", res.StatusCode, snippet(body))
	term, _, err := wsDial(t, w.renter, base+"/terminal/ws", a.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	terminalRun(t, term, "setsid python3 /workspace/echo.py >/dev/null 2>&1 < /dev/null & "+untilListening(8001)+"echo up-$((6*7))", "up-42")
	_ = term.Close(websocket.StatusNormalClosure, "")
	dockertest.Eventually(t, 30*time.Second, "the app on port 8001 of the apps origin", func() (bool, string) {
		res, body := getWith(t, browser, appsOrigin+base+"/ports/8001/x", "Cookie", "mine=yes")
		return res.StatusCode == http.StatusOK && strings.Contains(body, "path=/x\n"), fmt.Sprintf("%d %s", res.StatusCode, snippet(body))
	})
	_, body = getWith(t, browser, appsOrigin+base+"/ports/8001/x")
	must(t, !strings.Contains(body, "suanli_"), "a cookie of the marketplace or of the apps origin reached the app:\n%s", body)

	// Another organisation's user gets no ticket.
	other2, _ := fundedRenter(t, a.db, "apps-other-"+randomHex(t)+"@example.com", testPassword, 0)
	stranger := loggedIn(a, "stranger", other2)
	res, _ = getWith(t, appsClient(a, stranger.c.Jar, false), a.srv.URL+base+"/jupyter/")
	must(t, res.StatusCode == http.StatusNotFound, "another organisation's user at the marketplace's URL: %d, want 404", res.StatusCode)

	// "Log out other sessions" ends the app's session as well.
	second := loggedIn(a, "renter elsewhere", w.renter.user)
	res, _ = second.post(a.url(routenames.AccountSessionsEnd), nil)
	must(t, res.StatusCode == http.StatusSeeOther, "log out other sessions: %d", res.StatusCode)
	res, _ = getWith(t, step, appsOrigin+base+"/jupyter/api/status")
	must(t, res.StatusCode == http.StatusSeeOther && strings.HasPrefix(res.Header.Get("Location"), a.srv.URL), "the app's session after the user's sessions ended: %d %s", res.StatusCode, res.Header.Get("Location"))

	// Logging out of the marketplace ends the app sessions that session
	// opened, and only those.
	third := loggedIn(a, "renter on a third device", w.renter.user)
	secondApp, thirdApp := appsClient(a, second.c.Jar, true), appsClient(a, third.c.Jar, true)
	for name, c := range map[string]*http.Client{"second": secondApp, "third": thirdApp} {
		res, body := getWith(t, c, a.srv.URL+base+"/jupyter/api/status")
		must(t, res.StatusCode == http.StatusOK && res.Request.URL.Host == appsURL.Host, "Jupyter from the %s session: %d at %s: %s", name, res.StatusCode, res.Request.URL, snippet(body))
	}
	res, _ = second.post(a.url(routenames.AuthLogout), nil)
	must(t, res.StatusCode == http.StatusSeeOther, "log out: %d", res.StatusCode)
	res, _ = getWith(t, appsClient(a, second.c.Jar, false), appsOrigin+base+"/jupyter/api/status")
	must(t, res.StatusCode == http.StatusSeeOther && strings.HasPrefix(res.Header.Get("Location"), a.srv.URL), "the app's session after its marketplace session logged out: %d %s", res.StatusCode, res.Header.Get("Location"))
	res, _ = getWith(t, appsClient(a, third.c.Jar, false), appsOrigin+base+"/jupyter/api/status")
	must(t, res.StatusCode == http.StatusOK, "the app's session of another marketplace session after a logout: %d", res.StatusCode)
}

// kernelPrint runs code on a kernel's open channels WebSocket and returns
// what it printed.
func kernelPrint(t *testing.T, ctx context.Context, c *websocket.Conn, code string) string {
	t.Helper()
	c.SetReadLimit(16 << 20)
	id := randomHex(t)
	msg, _ := json.Marshal(map[string]any{
		"header":        map[string]any{"msg_id": id, "username": "test", "session": "apps", "msg_type": "execute_request", "version": "5.3"},
		"parent_header": map[string]any{}, "metadata": map[string]any{}, "channel": "shell", "buffers": []any{},
		"content": map[string]any{"code": code, "silent": false, "store_history": false, "user_expressions": map[string]any{}, "allow_stdin": false, "stop_on_error": true},
	})
	if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("the kernel's answer: %v (so far %q)", err, out.String())
		}
		var m struct {
			Header struct {
				MsgType string `json:"msg_type"`
			} `json:"header"`
			ParentHeader struct {
				MsgID string `json:"msg_id"`
			} `json:"parent_header"`
			Content struct {
				Text           string `json:"text"`
				ExecutionState string `json:"execution_state"`
			} `json:"content"`
		}
		if json.Unmarshal(b, &m) != nil || m.ParentHeader.MsgID != id {
			continue
		}
		if m.Header.MsgType == "stream" {
			out.WriteString(m.Content.Text)
		}
		if m.Header.MsgType == "status" && m.Content.ExecutionState == "idle" {
			return out.String()
		}
	}
}

// newJar is an empty cookie jar: a browser that has been nowhere.
func newJar() http.CookieJar {
	jar, _ := cookiejar.New(nil)
	return jar
}
