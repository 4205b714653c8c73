package web_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// chromiumPath finds the browser: $CHROME_PATH, /usr/bin/chromium, then
// chromium on $PATH. Without one the browser test skips, except under CI,
// where a missing browser is a broken runner and fails.
func chromiumPath(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("CHROME_PATH"), "/usr/bin/chromium"}
	if p, err := exec.LookPath("chromium"); err == nil {
		candidates = append(candidates, p)
	}
	for _, p := range candidates {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	const msg = "Chromium not found: set CHROME_PATH or install chromium (looked at $CHROME_PATH, /usr/bin/chromium, chromium on PATH)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// newBrowser starts a fresh headless Chromium that prefers Chinese and
// returns a tab context bounded by timeout.
func newBrowser(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	path := chromiumPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("lang", "zh-CN"),
		// --lang sets the UI locale only; Accept-Language follows --accept-lang.
		chromedp.Flag("accept-lang", "zh-CN,zh"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(bcancel)
	// Chromium 156 headless sends "en-US,en" with --lang=zh-CN alone; the
	// header makes the first visit Chinese whatever the flags or host locale.
	if _, err := chromedp.Call(bctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{
		Headers: network.Headers{"Accept-Language": "zh-CN,zh;q=0.9"},
	}); err != nil {
		t.Fatalf("start chromium (%s): %v", path, err)
	}
	return bctx
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// TestBrowserOffersFilterAndLanguage is the journey of a reader in real
// Chromium: the offer list, a GPU filter applied by htmx without a page
// load (and kept in the URL), then the language switch, which must come
// back to the same filtered list in English.
func TestBrowserOffersFilterAndLanguage(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	a := newSQLiteApp(t)
	ctx := newBrowser(t, 60*time.Second)

	// (1) The full list, in Chinese.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(a.srv.URL+"/offers"),
		chromedp.WaitVisible(chromedp.ID("result-count")),
	); err != nil {
		t.Fatalf("open /offers: %v", err)
	}
	before, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("result-count")))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("unfiltered count: %q", before)
	must(t, strings.Contains(before, "43"), "unfiltered #result-count = %q, want it to mention 43", before)
	must(t, strings.Contains(before, "个报价"), "first visit should be Chinese, #result-count = %q", before)
	must(t, eval[string](t, ctx, `document.documentElement.lang`) == "zh-CN",
		"<html lang> = %q, want zh-CN", eval[string](t, ctx, `document.documentElement.lang`))
	eval[int](t, ctx, `window.__noReload = 1`)

	// (2) Filter by H100 SXM: htmx swaps #results in place and pushes the URL.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`input[name=gpu][value=h100-sxm]`))); err != nil {
		t.Fatalf("click h100-sxm: %v", err)
	}
	after, err := chromedp.Run(ctx, chromedp.PollFunction[string](
		`(prev) => { const el = document.getElementById("result-count"); return el && el.textContent.trim() !== prev && el.textContent.trim(); }`,
		chromedp.WithPollingArgs(strings.TrimSpace(before)),
		chromedp.WithPollingTimeout(0), // bounded by the test's context
	))
	if err != nil {
		t.Fatalf("waiting for #result-count to change from %q: %v", before, err)
	}
	t.Logf("filtered count: %q", after)
	must(t, strings.Contains(after, "8 个报价"), "filtered #result-count = %q, want 8 个报价 (8 H100 SXM offers in the demo)", after)
	must(t, eval[bool](t, ctx, `window.__noReload === 1`), "the filter reloaded the page; htmx should swap #results in place")
	search := eval[string](t, ctx, `location.search`)
	t.Logf("pushed URL query: %s", search)
	must(t, strings.Contains(search, "gpu=h100-sxm"), "location.search = %q after filtering, want gpu=h100-sxm (hx-push-url)", search)
	// Wait for the settle so the request is finished before the next step.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](
		`!document.querySelector(".htmx-request, .htmx-settling, .htmx-swapping")`,
		chromedp.WithPollingTimeout(0),
	)); err != nil {
		t.Fatalf("waiting for htmx to settle: %v", err)
	}

	// (3) Switch to English: the switch must come back to this filtered list.
	href := eval[string](t, ctx, `document.getElementById("lang-en") ? document.getElementById("lang-en").getAttribute("href") : ""`)
	t.Logf("language switch href: %q", href)
	must(t, href != "", "no #lang-en link on the Chinese page")
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("lang-en"))); err != nil {
		t.Fatalf("click #lang-en: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("result-count"))); err != nil {
		t.Fatalf("after the language switch: %v", err)
	}
	en, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("result-count")))
	if err != nil {
		t.Fatal(err)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after switch: %s — %q", loc, en)
	must(t, eval[string](t, ctx, `document.documentElement.lang`) == "en",
		"<html lang> = %q after switching to English", eval[string](t, ctx, `document.documentElement.lang`))
	must(t, strings.Contains(en, "offers"), "#result-count = %q after switching, want English (\"offers\")", en)
	must(t, strings.Contains(eval[string](t, ctx, `location.search`), "gpu=h100-sxm"),
		"the language switch lost the filter: now at %s (switch link was %q)", loc, href)
	must(t, strings.Contains(en, "8 offers"), "#result-count = %q after switching, want the filtered 8 offers", en)
}
