package web_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"suanli/dbtest"
	"suanli/dockertest"
	"suanli/handlers"
)

// TestBrowserWorkInTheContainer is a renter's work in a running rental,
// in real Chromium, through the marketplace only (the container publishes
// no port but SSH): from the rental page the renter opens Jupyter, makes
// a notebook, types print(6*7) into its first cell, runs it and sees 42;
// opens the terminal, runs commands and starts an app on a declared port;
// opens that port's page; uploads a file on the files page and sees it
// listed; and the rental page follows the container's output.
func TestBrowserWorkInTheContainer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	chromiumPath(t)
	// As in production: the apps on an origin of their own, which
	// Chromium reaches as wildcard DNS would.
	w := newWorkspaceRigOn(t, dbtest.SQLite(t), []int{8000}, func(h *handlers.Handler) { h.AppsDomain = appsDomain })
	a, base := w.a, w.base
	w.svc.BaseURL = a.srv.URL
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(a.srv.URL, "http://"))
	appsOrigin := "http://r" + strconv.FormatInt(w.rental, 10) + "." + appsDomain + ":" + port
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	t.Cleanup(cancel)
	b := newEnglishBrowser(t, ctx, chromedp.Flag("host-resolver-rules", "MAP *."+appsDomain+" 127.0.0.1"))

	open(t, b, a.srv.URL+"/login?next="+base, "login page")
	typeInto(t, b, [][2]string{{"f-email", w.renter.user.Email}, {"f-password", testPassword}})
	p := click(t, b, "#login-submit", "log in")
	must(t, p.Path == base, "after logging in: %s, want the rental page %s", p.Path, base)
	must(t, strings.Contains(p.Text, "Open Jupyter Notebook") && strings.Contains(p.Text, "Terminal") && strings.Contains(p.Text, "scp -P "),
		"the rental page does not offer Jupyter, the terminal and scp\n%s", p)
	// The output panel follows the container's log (Jupyter's start-up
	// lines are in it).
	waitFor(t, b, `document.getElementById("workspace-logs").textContent.toLowerCase().includes("jupyter")`, "the container's output on the rental page")
	rentalShot(t, b, "workspace-en")

	// Jupyter: the link on the page, a new notebook, print(6*7).
	href := eval[string](t, b, `document.getElementById("open-jupyter").getAttribute("href")`)
	must(t, href == base+"/jupyter/", "the Jupyter link is %q", href)
	open(t, b, a.srv.URL+href, "Jupyter")
	waitFor(t, b, `location.origin === `+strconv.Quote(appsOrigin)+` && location.pathname.startsWith(`+strconv.Quote(base+"/jupyter/tree")+`) && !!document.getElementById("notebook_list")`, "Jupyter's file list on the rental's own origin")
	// The notebook is made as Jupyter's "New" menu makes it: a POST from
	// the page to its contents API (the menu opens it in a new window).
	name, err := chromedp.Run(b, chromedp.Evaluate[string](`(async () => {
		const r = await fetch(`+strconv.Quote(base+"/jupyter/api/contents")+`, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({type: "notebook"})});
		return r.ok ? (await r.json()).name : "status " + r.status;
	})()`, chromedp.EvalAwaitPromise))
	must(t, err == nil && strings.HasSuffix(name, ".ipynb"), "making a notebook: %s %v", name, err)
	open(t, b, appsOrigin+base+"/jupyter/notebooks/"+name, "the notebook")
	waitFor(t, b, `window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel && Jupyter.notebook.kernel.is_connected() && !!document.querySelector(".cell .CodeMirror")`, "the notebook's kernel")
	if err := chromedp.Do(b,
		chromedp.Click(chromedp.CSS(".cell .CodeMirror")),
		chromedp.SendKeys(chromedp.CSS(".cell .CodeMirror textarea"), "print(6*7)"),
		// Shift+Enter runs the cell, as a person does.
		chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierShift)),
	); err != nil {
		t.Fatalf("typing and running the cell: %v", err)
	}
	waitFor(t, b, `[...document.querySelectorAll(".output_area pre")].some(e => e.textContent.trim() === "42")`, "the cell's output 42")
	rentalShot(t, b, "workspace-jupyter")
	// Saved (into /workspace), so that leaving the page asks nothing.
	_, err = chromedp.Run(b, chromedp.Evaluate[bool](`Jupyter.notebook.save_notebook().then(() => { window.onbeforeunload = null; return true; })`, chromedp.EvalAwaitPromise))
	must(t, err == nil, "saving the notebook: %v", err)

	// The terminal: a shell in /workspace; an app on the declared port.
	open(t, b, a.srv.URL+base+"/terminal", "the terminal")
	waitFor(t, b, `document.getElementById("terminal").dataset.state === "open"`, "the terminal to connect")
	typeTerminal := func(line string) {
		t.Helper()
		// Inserted as text input (as a paste or an input method does):
		// synthesized key events reach xterm.js twice, as a keydown and
		// as a char.
		if err := chromedp.Do(b,
			chromedp.Focus(chromedp.CSS(".xterm-helper-textarea")),
			chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, input.InsertText, input.InsertTextParams{Text: line})
				return err
			}),
			chromedp.KeyEvent(kb.Enter),
		); err != nil {
			t.Fatalf("typing %q into the terminal: %v", line, err)
		}
	}
	typeTerminal("echo suanli-$((6*7)) in $(pwd)")
	waitFor(t, b, `document.querySelector(".xterm-rows").textContent.includes("suanli-42 in /workspace")`, "the command's output in the terminal")
	typeTerminal("mkdir -p site && echo '<h1>served from the container</h1>' > site/index.html && cd site && setsid python3 -m http.server 8000 --bind 0.0.0.0 >/dev/null 2>&1 < /dev/null & echo app-$((40+2))")
	waitFor(t, b, `document.querySelector(".xterm-rows").textContent.includes("app-42")`, "the app started")
	rentalShot(t, b, "workspace-terminal")

	// The declared port, as the rental page links it.
	dockertest.Eventually(t, 30*time.Second, "the app on port 8000", func() (bool, string) {
		res, err := chromedp.Run(b, chromedp.NavigateResponse(a.srv.URL+base+"/ports/8000/"))
		if err != nil || res == nil {
			return false, fmt.Sprint(err)
		}
		return res.Status == 200, fmt.Sprint(res.Status)
	})
	must(t, eval[string](t, b, `location.origin`) == appsOrigin, "port 8000 opened at %s, want its rental's origin", eval[string](t, b, `location.href`))
	must(t, strings.Contains(readPage(t, b).Text, "served from the container"), "port 8000's page:\n%s", readPage(t, b))

	// Files: upload one through the form, see it listed.
	dir := t.TempDir()
	local := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(local, []byte("uploaded from the browser\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	open(t, b, a.srv.URL+base+"/files", "the files page")
	must(t, eval[bool](t, b, `!!document.querySelector('[data-file="`+name+`"]')`), "the files page does not list the notebook %s", name)
	if err := chromedp.Do(b, chromedp.SetUploadFiles(chromedp.CSS(`#files-upload input[type=file]`), []string{local})); err != nil {
		t.Fatalf("choose the file: %v", err)
	}
	p = click(t, b, `#files-upload button[type=submit]`, "upload")
	must(t, strings.Contains(p.Text, "Uploaded: /workspace/notes.txt (26 B, SHA-256 "), "after the upload:\n%s", p)
	must(t, eval[bool](t, b, `!!document.querySelector('[data-file="notes.txt"]')`), "the uploaded file is not listed\n%s", p)
	rentalShot(t, b, "workspace-files")

	// On a phone the pages fit the window.
	for _, path := range []string{base, base + "/files", base + "/terminal"} {
		if err := chromedp.Do(b, chromedp.EmulateViewport(390, 844), chromedp.Navigate(a.srv.URL+path), chromedp.WaitVisible(chromedp.CSS("footer.site"))); err != nil {
			t.Fatalf("%s at 390 px: %v", path, err)
		}
		wide := eval[int](t, b, `document.documentElement.scrollWidth`)
		must(t, wide <= 390, "%s is %d px wide in a 390 px window", path, wide)
		rentalShot(t, b, "workspace-390"+strings.ReplaceAll(strings.TrimPrefix(path, base), "/", "-"))
	}
}
