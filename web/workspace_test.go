package web_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"suanli/agent/docker"
	"suanli/dbtest"
	"suanli/dockertest"
	"suanli/handlers"
	"suanli/models"
	"suanli/rentals"
	"suanli/routenames"
)

// echoApp is an HTTP app the renter runs in the container: it answers
// what reached it (path, cookies, the forwarded prefix, the Host) and
// tries to set the marketplace's session cookie and one of its own.
const echoApp = `import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("path=%s\ncookie=%s\nprefix=%s\nhost=%s\nauth=%s\n" % (self.path, self.headers.get("Cookie"), self.headers.get("X-Forwarded-Prefix"), self.headers.get("Host"), self.headers.get("Authorization"))).encode()
        self.send_response(200)
        self.send_header("Set-Cookie", "suanli_session=stolen; Path=/")
        self.send_header("Set-Cookie", "app=1; Path=/")
        self.send_header("Service-Worker-Allowed", "/")
        self.send_header("Clear-Site-Data", '"cookies"')
        self.send_header("Suanli-Error", "bad-path")
        self.send_header("Cache-Control", "public, max-age=600, s-maxage=600")
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.ThreadingHTTPServer(("0.0.0.0", 8001), H).serve_forever()
`

// workspaceRig is a running rental of the Jupyter test image on a node
// whose agent runs real containers (simulated GPUs), reached through the
// agent's tunnel.
type workspaceRig struct {
	a        *app
	svc      *rentals.Service
	launcher *docker.Launcher
	agent    *simAgent
	node     int64
	rental   int64
	renter   *actor
	base     string // /rentals/{id}
}

func newWorkspaceRig(t *testing.T, ports []int) *workspaceRig {
	t.Helper()
	return newWorkspaceRigOn(t, dbtest.SQLite(t), ports)
}

// newWorkspaceRigOn is newWorkspaceRig on db, with more changes to the
// handler's dependencies.
func newWorkspaceRigOn(t *testing.T, db *models.DB, ports []int, more ...func(*handlers.Handler)) *workspaceRig {
	t.Helper()
	host := dockertest.Require(t)
	img := dockertest.JupyterImage(t)
	if img != dockertest.DefaultJupyterImage {
		t.Fatalf("the catalogue's debian-jupyter image is %s, the daemon has %s", dockertest.DefaultJupyterImage, img)
	}
	cli, err := docker.NewClient(host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	a, svc := rentalsAppOn(t, db, more...)
	offer := rtxOffer(t, a.db)
	u, org := fundedRenter(t, a.db, "ws-"+randomHex(t)+"@example.com", testPassword, 100_000)
	ns := "ws" + randomHex(t)
	removeRentalContainers(t, a.db, cli, ns, org)
	l := &docker.Launcher{Client: cli, Host: "127.0.0.1", BindIP: "127.0.0.1", PortBase: portBaseForNextRental(t, a.db), Namespace: ns, Simulated: true}
	sa := startAgentWith(t, a, svc, offer.NodeID, l)
	ctx := context.Background()
	orgs, err := a.db.OrgsOfUser(ctx, u.ID)
	if err != nil || len(orgs) == 0 {
		t.Fatalf("the renter's organisations: %v", err)
	}
	r, err := svc.Rent(ctx, u, &orgs[0].Org, &orgs[0].Membership, rentals.RentInput{OrgID: org, OfferID: offer.ID, GPUs: 1, SLA: "standard",
		Term: "on_demand", SSHPublicKey: testSSHKey(t), Image: "debian-jupyter", Ports: ports})
	if err != nil {
		t.Fatal(err)
	}
	dockertest.Eventually(t, 120*time.Second, "the rental running", func() (bool, string) {
		s := rentalStatus(t, a.db, r.ID)
		return s == models.RentalRunning, string(s)
	})
	w := &workspaceRig{a: a, svc: svc, launcher: l, agent: sa, node: offer.NodeID, rental: r.ID, renter: loggedIn(a, "renter", u), base: "/rentals/" + strconv.FormatInt(r.ID, 10)}
	w.waitTunnel(t)
	return w
}

// waitTunnel waits until the node's agent holds its tunnel.
func (w *workspaceRig) waitTunnel(t *testing.T) {
	t.Helper()
	dockertest.Eventually(t, 30*time.Second, "the agent's tunnel", func() (bool, string) {
		return w.a.tunnels.Local.Connected(w.node), "not connected"
	})
}

// wsDial opens a WebSocket on path as the actor, from the marketplace's
// own pages (the Origin a browser sends).
func wsDial(t *testing.T, ac *actor, path, origin string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(ac.a.srv.URL, "http") + path
	return websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: ac.c, HTTPHeader: http.Header{"Origin": {origin}}})
}

// terminalRun types cmd into a terminal and reads until want shows.
// untilListening is a shell loop that returns once something in the
// container accepts connections on each port: a command that starts an
// app in the background prints its marker after it, so the test closes
// the terminal (whose session ends with it) only once the app has
// started, whatever the machine's load.
func untilListening(ports ...int) string {
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, `until python3 -c 'import socket; socket.create_connection(("127.0.0.1", %d), 1)' 2>/dev/null; do sleep 0.1; done; `, p)
	}
	return b.String()
}

func terminalRun(t *testing.T, c *websocket.Conn, cmd, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageBinary, []byte(cmd+"\r")); err != nil {
		t.Fatalf("typing %q: %v", cmd, err)
	}
	var out strings.Builder
	for !strings.Contains(out.String(), want) {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("reading the terminal for %q after %q: %v; so far:\n%s", want, cmd, err, out.String())
		}
		out.Write(b)
	}
	return out.String()
}

// upload posts files to the workspace's upload form (the CSRF token
// first, as the form sends it) and returns the answer.
func upload(t *testing.T, ac *actor, base, dir string, files map[string][]byte) (*http.Response, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	// The token first, as the form sends it: the server reads it before
	// the files, which stream on unread.
	_ = mw.WriteField("_csrf", ac.csrf())
	_ = mw.WriteField("dir", dir)
	for name, b := range files {
		fw, err := mw.CreateFormFile("file", name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(b)
	}
	_ = mw.Close()
	req, err := http.NewRequest("POST", ac.a.srv.URL+base+"/files", &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Origin", ac.a.srv.URL)
	req.Header.Set("Accept", "application/json")
	res, err := ac.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// The browser reaches a running rental's container through its node
// agent's tunnel, with real containers (the Jupyter test image), a real
// Jupyter and apps the renter starts: Jupyter's API and a kernel over its
// WebSocket run print(6*7); the terminal runs commands; files go up and
// down; a declared port serves the renter's app (prefix taken off, the
// marketplace's cookies neither sent to it nor set by it); the output
// shows; a share link opens the port to a stranger until revoked; another
// organisation's user gets 404 everywhere and a logged-out visitor the
// login page; and the tunnel comes back after the agent lost its network.
func TestWorkspaceThroughTheTunnel(t *testing.T) {
	t.Parallel()
	w := newWorkspaceRig(t, []int{8000, 8001})
	a, renter, base := w.a, w.renter, w.base

	// Jupyter: its API answers through the proxy (the agent adds the
	// token, which the browser never sees).
	res, body := renter.do("GET", base+"/jupyter/api/status", nil)
	must(t, res.StatusCode == http.StatusOK && strings.Contains(body, `"kernels"`), "Jupyter's status through the tunnel: %d %s", res.StatusCode, snippet(body))
	res, body = renter.do("GET", base+"/jupyter", nil)
	must(t, res.StatusCode == http.StatusTemporaryRedirect && res.Header.Get("Location") == base+"/jupyter/", "/jupyter: %d %s", res.StatusCode, res.Header.Get("Location"))
	res, body = renter.do("GET", base+"/jupyter/tree", nil)
	must(t, res.StatusCode == http.StatusOK && strings.Contains(body, "Jupyter"), "Jupyter's tree page: %d %s", res.StatusCode, snippet(body))
	token, err := w.launcher.JupyterToken(context.Background(), w.rental)
	must(t, err == nil && len(token) == 64, "the container's Jupyter token: %q %v", token, err)
	must(t, !strings.Contains(body, token), "the tree page holds the container's Jupyter token")

	// A notebook made through the API is a file in /workspace.
	origin := a.srv.URL
	req, _ := http.NewRequest("POST", a.srv.URL+base+"/jupyter/api/contents", strings.NewReader(`{"type":"notebook"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", origin)
	nb, err := renter.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	nbBody, _ := io.ReadAll(nb.Body)
	nb.Body.Close()
	must(t, nb.StatusCode == http.StatusCreated && strings.Contains(string(nbBody), `"Untitled`), "a new notebook: %d %s", nb.StatusCode, snippet(string(nbBody)))
	// From another site: refused before it reaches Jupyter.
	req, _ = http.NewRequest("POST", a.srv.URL+base+"/jupyter/api/contents", strings.NewReader(`{"type":"notebook"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "https://evil.example")
	evil, err := renter.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	evil.Body.Close()
	must(t, evil.StatusCode == http.StatusForbidden, "a cross-site POST to Jupyter: %d, want 403", evil.StatusCode)

	// A kernel, and print(6*7) over its WebSocket.
	res, body = renter.do("POST", base+"/jupyter/api/kernels", nil, "Origin", origin, "Content-Type", "application/json")
	must(t, res.StatusCode == http.StatusCreated, "start a kernel: %d %s", res.StatusCode, snippet(body))
	var kernel struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal([]byte(body), &kernel)
	must(t, kernel.ID != "", "no kernel id in %s", snippet(body))
	must(t, runInKernel(t, renter, base, kernel.ID, origin, "print(6*7)") == "42\n", "print(6*7) did not print 42")
	if _, _, err := wsDial(t, renter, base+"/jupyter/api/kernels/"+kernel.ID+"/channels?session_id=x", "https://evil.example"); err == nil {
		t.Fatal("a kernel WebSocket from another site was accepted")
	}

	// The terminal: a shell in /workspace.
	term, _, err := wsDial(t, renter, base+"/terminal/ws?cols=100&rows=30", origin)
	if err != nil {
		t.Fatalf("the terminal's WebSocket: %v", err)
	}
	out := terminalRun(t, term, "echo suanli-$((6*7)) in $(pwd)", "suanli-42 in /workspace")
	t.Logf("terminal said: %q", out)
	if _, _, err := wsDial(t, renter, base+"/terminal/ws", "https://evil.example"); err == nil {
		t.Fatal("a terminal WebSocket from another site was accepted")
	}

	// Files: up (the form, streamed), listed, down.
	page := []byte("<!doctype html><title>hello</title><p>served from the container " + randomHex(t) + "</p>")
	res, body = upload(t, renter, base, "site", map[string][]byte{"index.html": page, "echo.py": []byte(echoApp)})
	must(t, res.StatusCode == http.StatusCreated, "upload: %d %s", res.StatusCode, snippet(body))
	sum := sha256.Sum256(page)
	must(t, strings.Contains(body, hex.EncodeToString(sum[:])) && strings.Contains(body, `"/workspace/site/index.html"`), "upload's answer: %s", body)
	res, body = renter.do("GET", base+"/files?path=site", nil)
	must(t, res.StatusCode == http.StatusOK, "files page: %d %s", res.StatusCode, snippet(body))
	contains(t, body, `data-file="site/index.html"`, `data-file="site/echo.py"`, `id="files-upload"`)
	res, body = renter.do("GET", base+"/files/download?path=/workspace/site/index.html", nil)
	must(t, res.StatusCode == http.StatusOK && body == string(page), "download: %d %q", res.StatusCode, snippet(body))
	must(t, strings.Contains(res.Header.Get("Content-Disposition"), `filename=index.html`), "download's Content-Disposition: %q", res.Header.Get("Content-Disposition"))
	res, _ = renter.do("GET", base+"/files/download?path=../../etc/passwd", nil)
	must(t, res.StatusCode == http.StatusUnprocessableEntity || res.StatusCode == http.StatusBadRequest || res.StatusCode == http.StatusNotFound, "a path out of /workspace: %d", res.StatusCode)
	res, body = renter.do("GET", base+"/files/download?path=site", nil, "Accept-Language", "zh-CN")
	must(t, res.StatusCode == http.StatusUnprocessableEntity && strings.Contains(body, "目录请用 scp 或 rsync 复制"), "downloading a directory: %d, want 422 saying so in Chinese: %s", res.StatusCode, snippet(body))
	res, body = renter.do("GET", base+"/files/download?path=site/missing.txt", nil, "Accept-Language", "zh-CN")
	must(t, res.StatusCode == http.StatusNotFound && strings.Contains(body, "/workspace 中没有该文件或目录"), "downloading a missing file: %d, want 404 saying so in Chinese: %s", res.StatusCode, snippet(body))
	// A form cut off in the middle of a file (a closed tab, a dropped
	// connection) ends the upload with an answer, and leaves no file.
	cut := "--x\r\nContent-Disposition: form-data; name=\"_csrf\"\r\n\r\n" + renter.csrf() +
		"\r\n--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"cut.bin\"\r\n\r\n" + strings.Repeat("z", 100_000)
	req, _ = http.NewRequest("POST", a.srv.URL+base+"/files", io.NopCloser(strings.NewReader(cut)))
	req.ContentLength = -1
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	req.Header.Set("Origin", origin)
	cctx, ccancel := context.WithTimeout(context.Background(), 60*time.Second)
	res, err = renter.c.Do(req.WithContext(cctx))
	ccancel()
	must(t, err == nil && res.StatusCode >= 400, "a cut-off upload: %v %v, want a refusal", res, err)
	res.Body.Close()
	// The agent writes an upload to a hidden temporary file and removes it
	// when its copy fails, which it learns only after the server has
	// answered (the server cancels the tunnelled request): the file goes
	// soon after the answer, not with it.
	eventually(t, "the cut-off upload's temporary file to go", func() bool {
		res, body = renter.do("GET", base+"/files", nil)
		return res.StatusCode == http.StatusOK && !strings.Contains(body, "cut.bin")
	})
	// An upload's text parts are checked as every form's: a directory or
	// a file name that is not UTF-8, or holds a NUL, is refused naming
	// its part, and nothing is written.
	for name, parts := range map[string][2]string{"a NUL in dir": {"site\x00x", "ok.txt"}, "a dir not UTF-8": {"site\xff", "ok.txt"},
		"a file name not UTF-8": {"site", "bad\xff.txt"}, "a NUL in a file name": {"site", "bad\x00.txt"}} {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.WriteField("_csrf", renter.csrf())
		_ = mw.WriteField("dir", parts[0])
		fw, _ := mw.CreateFormFile("file", parts[1])
		_, _ = fw.Write([]byte("never stored"))
		_ = mw.Close()
		req, _ := http.NewRequest("POST", a.srv.URL+base+"/files", &buf)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Origin", origin)
		res, err := renter.c.Do(req)
		must(t, err == nil, "upload with %s: %v", name, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		must(t, res.StatusCode == http.StatusBadRequest || res.StatusCode == http.StatusUnprocessableEntity, "upload with %s: %d, want 400 or 422: %s", name, res.StatusCode, snippet(string(b)))
	}
	res, body = renter.do("GET", base+"/files?path=site", nil)
	listed := regexp.MustCompile(`data-file="[^"]*"`).FindAllString(body, -1)
	must(t, res.StatusCode == http.StatusOK && len(listed) == 2, "a refused upload left a file: %q", listed)
	// A FIFO in the workspace is refused, not opened (an open of one
	// would wait forever on the node).
	terminalRun(t, term, "mkfifo /workspace/pipe && echo fifo-$((40+2))", "fifo-42")
	res, _ = renter.do("GET", base+"/files/download?path=pipe", nil)
	must(t, res.StatusCode == http.StatusUnprocessableEntity, "downloading a FIFO: %d, want 422", res.StatusCode)
	res, body = renter.do("GET", base+"/files", nil)
	must(t, res.StatusCode == http.StatusOK && strings.Contains(body, `data-file="pipe"`), "the files page with a FIFO: %d", res.StatusCode)
	res, body = renter.do("GET", base+"/files?path=nowhere", nil)
	must(t, res.StatusCode == http.StatusNotFound && strings.Contains(body, `id="files-error"`), "a missing directory: %d", res.StatusCode)

	// Declared ports: the renter's apps, started from the terminal.
	terminalRun(t, term, "cd /workspace/site && setsid python3 -m http.server 8000 --bind 0.0.0.0 >/tmp/http.log 2>&1 < /dev/null & setsid python3 /workspace/site/echo.py >/tmp/echo.log 2>&1 < /dev/null & "+untilListening(8000, 8001)+"echo started-$((40+2))", "started-42")
	_ = term.Close(websocket.StatusNormalClosure, "")
	// The shell behind a closed terminal goes (the apps it started in
	// their own sessions stay).
	dockertest.Eventually(t, 30*time.Second, "the closed terminal's shell to exit", func() (bool, string) {
		procs := containerProcesses(t, w)
		return !strings.Contains(procs, "bash -l") && strings.Contains(procs, "http.server 8000"), procs
	})
	dockertest.Eventually(t, 30*time.Second, "the renter's app on port 8000", func() (bool, string) {
		res, body := renter.do("GET", base+"/ports/8000/", nil)
		return res.StatusCode == http.StatusOK && body == string(page), fmt.Sprintf("%d %s", res.StatusCode, snippet(body))
	})
	res, _ = renter.do("GET", base+"/ports/8000", nil)
	must(t, res.StatusCode == http.StatusTemporaryRedirect && res.Header.Get("Location") == base+"/ports/8000/", "/ports/8000: %d", res.StatusCode)
	res, _ = renter.do("GET", base+"/ports/9000/", nil)
	must(t, res.StatusCode == http.StatusNotFound, "an undeclared port: %d, want 404", res.StatusCode)
	dockertest.Eventually(t, 30*time.Second, "the echo app on port 8001", func() (bool, string) {
		res, body := renter.do("GET", base+"/ports/8001/a/b?q=1", nil, "Cookie", "mine=yes")
		return res.StatusCode == http.StatusOK, fmt.Sprintf("%d %s", res.StatusCode, snippet(body))
	})
	res, _ = renter.do("GET", base+"/ports/8001/", nil, "Authorization", "Basic YXBwOnB3")
	_, echoed := renter.do("GET", base+"/ports/8001/", nil, "Authorization", "Basic YXBwOnB3")
	must(t, res.StatusCode == http.StatusOK && strings.Contains(echoed, "auth=Basic YXBwOnB3\n"), "an app's own Basic auth did not reach it:\n%s", echoed)
	res, body = renter.do("GET", base+"/ports/8001/a/b?q=1", nil, "Authorization", "Bearer sl_an-api-token-of-the-marketplace")
	must(t, res.StatusCode == http.StatusOK, "echo app: %d", res.StatusCode)
	host := strings.TrimPrefix(a.srv.URL, "http://")
	contains(t, body, "path=/a/b?q=1\n", "prefix="+base+"/ports/8001\n", "host="+host+"\n", "auth=None\n")
	must(t, !strings.Contains(body, "suanli_"), "the marketplace's cookies reached the container:\n%s", body)
	var setCookies []string
	for _, c := range res.Header.Values("Set-Cookie") {
		setCookies = append(setCookies, c)
	}
	must(t, len(setCookies) == 1 && strings.HasPrefix(setCookies[0], "app=1") && strings.Contains(setCookies[0], "Path="+base+"/ports/8001/"),
		"the app's cookies as passed on: %q (want only app=1, kept to its path)", setCookies)
	must(t, renter.cookie("suanli_session") != "stolen", "the container set the marketplace's session cookie")
	must(t, res.Header.Get("Service-Worker-Allowed") == "" && res.Header.Get("Clear-Site-Data") == "",
		"the app widened its reach: Service-Worker-Allowed %q, Clear-Site-Data %q", res.Header.Get("Service-Worker-Allowed"), res.Header.Get("Clear-Site-Data"))
	must(t, res.Header.Get("Suanli-Error") == "", "the app's own Suanli-Error header came through")
	must(t, res.Header.Get("Cache-Control") == "private, max-age=600", "the app's answer may be kept by shared caches: %q", res.Header.Get("Cache-Control"))
	res, _ = renter.do("GET", base+"/files/download?path=site/index.html", nil)
	must(t, res.Header.Get("Cache-Control") == "private, no-store", "a downloaded file's Cache-Control: %q", res.Header.Get("Cache-Control"))
	res, _ = renter.do("GET", base+"/ports/8001/sw.js", nil, "Service-Worker", "script")
	must(t, res.StatusCode == http.StatusForbidden, "a service worker's script through the proxy: %d, want 403", res.StatusCode)

	// The container's output.
	res, body = renter.do("GET", base+"/logs?tail=50", nil)
	must(t, res.StatusCode == http.StatusOK && strings.Contains(res.Header.Get("Content-Type"), "text/plain"), "logs: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	must(t, regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\S+ `).MatchString(body) && strings.Contains(strings.ToLower(body), "jupyter"), "logs:\n%s", snippet(body))
	for _, bad := range []string{"0", "-1", "10001", "all"} {
		res, _ = renter.do("GET", base+"/logs?tail="+bad, nil)
		must(t, res.StatusCode == http.StatusUnprocessableEntity, "logs?tail=%s: %d, want 422", bad, res.StatusCode)
	}

	// The rental page offers it all.
	res, body = renter.do("GET", base, nil)
	must(t, res.StatusCode == http.StatusOK, "rental page: %d", res.StatusCode)
	contains(t, body, `id="open-jupyter"`, `href="`+base+`/jupyter/"`, `id="open-terminal"`, `id="open-files"`, `href="`+base+`/ports/8000/"`,
		`id="access-scp"`, `scp -P `, `id="access-rsync"`, `rsync -avP -e &#34;ssh -p `, `id="workspace-logs"`)

	// Another organisation's user: 404 everywhere; logged out: the login page.
	other, _ := fundedRenter(t, a.db, "other-"+randomHex(t)+"@example.com", testPassword, 0)
	stranger := loggedIn(a, "stranger", other)
	for _, p := range []string{base + "/jupyter/", base + "/jupyter/api/status", base + "/terminal", base + "/ports/8000/", base + "/files", base + "/files/download?path=site/index.html", base + "/logs"} {
		res, _ := stranger.do("GET", p, nil)
		must(t, res.StatusCode == http.StatusNotFound, "another organisation's user GET %s: %d, want 404", p, res.StatusCode)
		anon := newActor(a, "anonymous")
		res, _ = anon.do("GET", p, nil)
		must(t, res.StatusCode == http.StatusSeeOther && strings.HasPrefix(res.Header.Get("Location"), "/login?next="), "logged out GET %s: %d %s, want the login page", p, res.StatusCode, res.Header.Get("Location"))
	}
	if _, res, err := wsDial(t, stranger, base+"/terminal/ws", origin); err == nil || res == nil || res.StatusCode != http.StatusNotFound {
		t.Fatalf("another organisation's terminal WebSocket: %v %v", res, err)
	}
	res, _ = upload(t, stranger, base, "", map[string][]byte{"x.txt": []byte("x")})
	must(t, res.StatusCode == http.StatusNotFound, "another organisation's upload: %d", res.StatusCode)
	req, _ = http.NewRequest("POST", a.srv.URL+base+"/files", strings.NewReader("--x--"))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	res, err = renter.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	must(t, res.StatusCode == http.StatusForbidden, "an upload without the CSRF token: %d, want 403", res.StatusCode)

	// A share link opens port 8000 to anyone, sandboxed, until revoked.
	res, body = renter.post(a.url(routenames.RentalsSharesCreate, strconv.FormatInt(w.rental, 10)), url.Values{"port": {"8000"}, "hours": {"24"}})
	must(t, res.StatusCode == http.StatusCreated && res.Header.Get("Cache-Control") == "no-store", "make a share link: %d %q %s", res.StatusCode, res.Header.Get("Cache-Control"), snippet(body))
	link := regexp.MustCompile(`http://suanli\.test(/share/shr_[A-Za-z0-9_-]+/)`).FindStringSubmatch(body)
	must(t, link != nil, "the answer does not show the new share link:\n%s", snippet(body))
	shareToken := strings.TrimSuffix(strings.TrimPrefix(link[1], "/share/"), "/")
	must(t, len(dbtest.Find(t, a.db, []byte(shareToken))) == 0, "the share link's token is stored: %v", dbtest.Find(t, a.db, []byte(shareToken)))
	anon := newActor(a, "stranger's browser")
	res, body = anon.do("GET", link[1], nil)
	must(t, res.StatusCode == http.StatusOK && body == string(page), "the share link: %d %s", res.StatusCode, snippet(body))
	must(t, strings.Contains(res.Header.Get("Content-Security-Policy"), "sandbox"), "a shared page is not sandboxed: %q", res.Header.Get("Content-Security-Policy"))
	_, again := renter.do("GET", base, nil)
	must(t, !strings.Contains(again, link[1]), "the share link is shown again")
	sid := regexp.MustCompile(`data-revoke-share="(\d+)"`).FindStringSubmatch(again)
	must(t, sid != nil, "no revoke button for the share link")
	res, _ = stranger.post(a.url(routenames.RentalsSharesRevoke, strconv.FormatInt(w.rental, 10), sid[1]), nil)
	must(t, res.StatusCode == http.StatusNotFound, "another organisation revokes the link: %d", res.StatusCode)
	res, _ = renter.post(a.url(routenames.RentalsSharesRevoke, strconv.FormatInt(w.rental, 10), sid[1]), nil)
	must(t, res.StatusCode == http.StatusSeeOther, "revoke: %d", res.StatusCode)
	res, _ = anon.do("GET", link[1], nil)
	must(t, res.StatusCode == http.StatusNotFound, "a revoked share link: %d, want 404", res.StatusCode)

	// The agent loses its network for a moment: the tunnel comes back.
	w.agent.paused.Store(true)
	dockertest.Eventually(t, 30*time.Second, "the tunnel to drop", func() (bool, string) {
		return !a.tunnels.Local.Connected(w.node), "still connected"
	})
	res, _ = renter.do("GET", base+"/ports/8000/", nil)
	must(t, res.StatusCode == http.StatusServiceUnavailable, "without a tunnel: %d, want 503", res.StatusCode)
	w.agent.paused.Store(false)
	w.waitTunnel(t)
	res, body = renter.do("GET", base+"/ports/8000/", nil)
	must(t, res.StatusCode == http.StatusOK && body == string(page), "after the agent reconnected: %d %s", res.StatusCode, snippet(body))
	must(t, runInKernel(t, renter, base, kernel.ID, origin, "print(7*6)") == "42\n", "the kernel after the reconnect")

	// A terminal open while its session ends is closed (authorised again
	// while it lasts, not only at its handshake).
	leaver := loggedIn(a, "renter on a second browser", w.renter.user)
	open2, _, err := wsDial(t, leaver, base+"/terminal/ws", origin)
	if err != nil {
		t.Fatalf("a second terminal: %v", err)
	}
	terminalRun(t, open2, "echo still-$((6*7))", "still-42")
	res, _ = leaver.post(a.url(routenames.AuthLogout), nil)
	must(t, res.StatusCode == http.StatusSeeOther, "log out: %d", res.StatusCode)
	rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
	for {
		if _, _, err := open2.Read(rctx); err != nil {
			must(t, rctx.Err() == nil, "the terminal of an ended session stayed open")
			break
		}
	}
	rcancel()

	// Released: its share links open nothing, as if they never existed.
	res, body = renter.post(a.url(routenames.RentalsSharesCreate, strconv.FormatInt(w.rental, 10)), url.Values{"port": {"8000"}, "hours": {"1"}})
	must(t, res.StatusCode == http.StatusCreated, "a second share link: %d", res.StatusCode)
	link = regexp.MustCompile(`http://suanli\.test(/share/shr_[A-Za-z0-9_-]+/)`).FindStringSubmatch(body)
	must(t, link != nil, "no second share link shown")
	if _, err := w.svc.Release(context.Background(), w.rental, false); err != nil {
		t.Fatal(err)
	}
	res, _ = anon.do("GET", link[1], nil)
	must(t, res.StatusCode == http.StatusNotFound, "the share link of a released rental: %d, want 404", res.StatusCode)
	// The node removes the container (before the test's cleanup would).
	dockertest.Eventually(t, 60*time.Second, "the released rental's container gone", func() (bool, string) {
		_, err := w.launcher.Client.ContainerInspect(context.Background(), w.launcher.ContainerName(w.rental))
		return cerrdefs.IsNotFound(err), fmt.Sprint(err)
	})
}

// runInKernel runs code in a Jupyter kernel over its WebSocket (the
// Jupyter messaging protocol, JSON frames) and returns what it printed.
func runInKernel(t *testing.T, ac *actor, base, kernelID, origin, code string) string {
	t.Helper()
	c, res, err := wsDial(t, ac, base+"/jupyter/api/kernels/"+kernelID+"/channels?session_id=suanli-test", origin)
	if err != nil {
		t.Fatalf("the kernel's WebSocket: %v %v", res, err)
	}
	defer c.Close(websocket.StatusNormalClosure, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return kernelPrint(t, ctx, c, code)
}

// randomBytes is n random bytes.
func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// The pages of a running container's workspace (the rental page's
// section, the terminal page, the files page) speak the reader's
// language: no English on a Chinese page, no label said twice on an
// English one (the checks of TestEveryPageSpeaksTheReadersLanguage, which
// cannot render them without a container).
func TestWorkspacePagesSpeakBothLanguages(t *testing.T) {
	t.Parallel()
	w := newWorkspaceRig(t, []int{6006})
	res, body := upload(t, w.renter, w.base, "data", map[string][]byte{"a.txt": []byte("a")})
	must(t, res.StatusCode == http.StatusCreated, "upload: %d %s", res.StatusCode, snippet(body))
	want := map[string][]string{
		"en":    {"Work in the browser", "Open Jupyter Notebook", "Terminal", "Files", "HTTP ports", "Make share link", "Copy files over SSH", "scp -P ", "Container output"},
		"zh-CN": {"在浏览器中使用", "打开 Jupyter Notebook", "终端", "文件", "HTTP 端口", "生成分享链接", "通过 SSH 复制文件", "scp -P ", "容器输出"},
	}
	files := map[string][]string{"en": {"Upload to /workspace/data", "Name", "Size"}, "zh-CN": {"上传到 /workspace/data", "名称", "大小"}}
	for _, lang := range []string{"en", "zh-CN"} {
		for _, p := range []struct {
			path  string
			wants []string
		}{
			{w.base, want[lang]},
			{w.base + "/terminal", nil},
			{w.base + "/files?path=data", files[lang]},
		} {
			res, body := w.renter.do("GET", p.path, nil, "Accept-Language", lang)
			must(t, res.StatusCode == http.StatusOK, "%s GET %s: %d", lang, p.path, res.StatusCode)
			text := visibleText(t, body)
			joined := strings.Join(text, "\n")
			for _, s := range p.wants {
				must(t, strings.Contains(joined, s), "%s GET %s does not say %q:\n%s", lang, p.path, s, joined)
			}
			problems := doubledLabels(text)
			if lang == "zh-CN" {
				problems = englishIn(text)
			}
			for _, pr := range problems {
				t.Errorf("%s GET %s: %s", lang, p.path, pr)
			}
			must(t, !strings.Contains(joined, "workspace.") && !strings.Contains(joined, "err."), "%s GET %s shows a message key:\n%s", lang, p.path, joined)
		}
	}
}

// Two web replicas on one PostgreSQL database: the node's agent holds its
// tunnel to the first, and a renter whose browser reaches the second gets
// there all the same: the second passes the request on to the first (the
// replica the database names as the tunnel's holder), which authorises it
// again. A declared port, the files page, an upload, the terminal's
// WebSocket and Jupyter work through the second; another organisation's
// user is still told 404 there.
func TestWorkspaceThroughAnotherReplica(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	w := newWorkspaceRigOn(t, db, []int{8000})
	// The first replica names itself; the agent dialled it already, so
	// it dials again to be recorded under that name.
	w.a.tunnels.Self = w.a.srv.URL
	w.a.tunnels.Local.Close()
	w.waitTunnel(t)
	dockertest.Eventually(t, 30*time.Second, "the tunnel's holder recorded", func() (bool, string) {
		var url string
		db.R.Raw(`SELECT replica_url FROM tunnel_holders WHERE node_id = ?`, w.node).Scan(&url)
		return url == w.a.srv.URL, url
	})
	second := newApp(t, db)
	second.tunnels.Self = second.srv.URL
	must(t, !second.tunnels.Local.Connected(w.node), "the agent is connected to the second replica too")
	renter := loggedIn(second, "renter at the second replica", w.renter.user)
	origin := second.srv.URL

	res, body := renter.do("GET", w.base+"/jupyter/api/status", nil)
	must(t, res.StatusCode == http.StatusOK && strings.Contains(body, `"kernels"`), "Jupyter through the second replica: %d %s", res.StatusCode, snippet(body))
	page := []byte("<p>via the other replica " + randomHex(t) + "</p>")
	res, body = upload(t, renter, w.base, "", map[string][]byte{"index.html": page})
	must(t, res.StatusCode == http.StatusCreated, "upload through the second replica: %d %s", res.StatusCode, snippet(body))
	res, body = renter.do("GET", w.base+"/files", nil)
	must(t, res.StatusCode == http.StatusOK && strings.Contains(body, `data-file="index.html"`), "files page through the second replica: %d %s", res.StatusCode, snippet(body))
	term, _, err := wsDial(t, renter, w.base+"/terminal/ws", origin)
	if err != nil {
		t.Fatalf("the terminal through the second replica: %v", err)
	}
	terminalRun(t, term, "cd /workspace && setsid python3 -m http.server 8000 --bind 0.0.0.0 >/dev/null 2>&1 < /dev/null & "+untilListening(8000)+"echo up-$((6*7))", "up-42")
	_ = term.Close(websocket.StatusNormalClosure, "")
	dockertest.Eventually(t, 30*time.Second, "port 8000 through the second replica", func() (bool, string) {
		res, body := renter.do("GET", w.base+"/ports/8000/", nil)
		return res.StatusCode == http.StatusOK && body == string(page), fmt.Sprintf("%d %s", res.StatusCode, snippet(body))
	})

	other, _ := fundedRenter(t, db, "other-"+randomHex(t)+"@example.com", testPassword, 0)
	stranger := loggedIn(second, "stranger", other)
	res, _ = stranger.do("GET", w.base+"/ports/8000/", nil)
	must(t, res.StatusCode == http.StatusNotFound, "another organisation through the second replica: %d, want 404", res.StatusCode)
	// A request that says it was passed on already is not passed on again.
	res, _ = renter.do("GET", w.base+"/ports/8000/", nil, "Suanli-Hop", "1")
	must(t, res.StatusCode == http.StatusServiceUnavailable, "a hop that would loop: %d, want 503", res.StatusCode)
}

// containerProcesses lists the command lines of the processes in the
// rental's container, one a line.
func containerProcesses(t *testing.T, w *workspaceRig) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli := w.launcher.Client
	ex, err := cli.ContainerExecCreate(ctx, w.launcher.ContainerName(w.rental), container.ExecOptions{User: "0", AttachStdout: true, AttachStderr: true,
		Cmd: []string{"/bin/sh", "-c", `for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline 2>/dev/null; echo; done`}})
	if err != nil {
		t.Fatal(err)
	}
	att, err := cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer att.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, att.Reader); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
