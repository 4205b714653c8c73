package web_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"suanli/models"
	"suanli/offers"
	"suanli/web"
)

func TestHealthReadyMetrics(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	res, body := a.get("/healthz")
	must(t, res.StatusCode == 200 && body == "ok\n", "healthz %d %q", res.StatusCode, body)
	res, body = a.get("/readyz")
	must(t, res.StatusCode == 200 && strings.Contains(body, `"status":"ready"`) && strings.Contains(body, `"offers_indexed":43`), "readyz %d %s", res.StatusCode, body)

	a.get("/offers?gpu=l40s")
	a.get("/offers/999999")
	res, body = a.get("/metrics")
	must(t, res.StatusCode == 200, "metrics %d", res.StatusCode)
	contains(t, body,
		`suanli_http_requests_total{method="GET",route="offers.list",status="200"} 1`,
		`suanli_http_requests_total{method="GET",route="offers.show",status="404"} 1`,
		`suanli_http_request_duration_seconds_bucket{method="GET",route="offers.list"`,
		"go_goroutines", "process_resident_memory_bytes")
}

// A database whose schema is behind is not ready.
func TestReadyzRefusesSchemaBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := models.Open(ctx, "sqlite", filepath.Join(t.TempDir(), "empty.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := httptest.NewServer(web.New(testHandler(db, offers.NewIndex(db)), web.Options{}))
	defer srv.Close()
	res, err := http.Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	must(t, res.StatusCode == http.StatusServiceUnavailable, "readyz on an unmigrated database: %d", res.StatusCode)
	res, err = http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	must(t, res.StatusCode == 200, "healthz must not depend on the database: %d", res.StatusCode)
}

func TestSecurityHeadersAndCompression(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	res, body := a.get("/offers", "Accept-Encoding", "identity")
	h := res.Header
	csp := h.Get("Content-Security-Policy")
	must(t, strings.Contains(csp, "script-src 'self'") && !strings.Contains(csp, "unsafe-inline") && strings.Contains(csp, "frame-ancestors 'none'"), "CSP %q", csp)
	must(t, h.Get("X-Content-Type-Options") == "nosniff" && h.Get("X-Frame-Options") == "DENY" && h.Get("Referrer-Policy") != "", "headers %v", h)
	must(t, h.Get("Strict-Transport-Security") == "", "HSTS must only be sent over TLS")
	must(t, h.Get("X-Request-Id") != "", "no request id")
	// No inline scripts or styles anywhere in the page (the CSP forbids them).
	must(t, !regexp.MustCompile(`<script>|<script [^>]*>[^<]+</script>|style="|<style`).MatchString(body), "inline script or style in the page")

	req, _ := http.NewRequest("GET", a.srv.URL+"/offers", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	tr := &http.Transport{DisableCompression: true}
	gz, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	gz.Body.Close()
	must(t, gz.Header.Get("Content-Encoding") == "gzip", "page not gzipped: %v", gz.Header)
}

func TestStaticAssetsAreHashedAndCachedForever(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	_, page := a.get("/offers")
	m := regexp.MustCompile(`href="(/static/app\.[0-9a-f]{12}\.css)"`).FindStringSubmatch(page)
	must(t, m != nil, "no hashed stylesheet link in the page")
	res, css := a.get(m[1])
	must(t, res.StatusCode == 200 && strings.Contains(css, "--accent"), "css %d", res.StatusCode)
	must(t, res.Header.Get("Cache-Control") == "public, max-age=31536000, immutable", "cache %q", res.Header.Get("Cache-Control"))
	must(t, strings.HasPrefix(res.Header.Get("Content-Type"), "text/css"), "type %q", res.Header.Get("Content-Type"))
	js := regexp.MustCompile(`src="(/static/htmx-2\.0\.11\.min\.[0-9a-f]{12}\.js)"`).FindStringSubmatch(page)
	must(t, js != nil, "no hashed htmx script")
	res, _ = a.get(js[1])
	must(t, res.StatusCode == 200, "htmx %d", res.StatusCode)
	res, _ = a.get("/static/app.000000000000.css")
	must(t, res.StatusCode == 404, "a stale hash must be a 404: %d", res.StatusCode)
	res, _ = a.get(m[1])
	etag := res.Header.Get("ETag")
	res, _ = a.get(m[1], "If-None-Match", etag)
	must(t, etag != "" && res.StatusCode == http.StatusNotModified, "revalidation: etag %q status %d", etag, res.StatusCode)
}

// A panic or an unexpected error becomes a 500 page (or the JSON shape)
// that says nothing of its cause, and the process goes on.
func TestPanicsBecomeOpaque500s(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	a.e.GET("/test/panic", func(echo.Context) error { panic("secret detail") })
	a.e.GET("/api/v1/test/fail", func(echo.Context) error { return errors.New("secret detail") })
	res, body := a.get("/test/panic")
	must(t, res.StatusCode == 500, "status %d", res.StatusCode)
	contains(t, body, "服务器出错了", res.Header.Get("X-Request-Id"))
	must(t, !strings.Contains(body, "secret detail"), "the page leaks the cause")
	res, body = a.get("/api/v1/test/fail")
	must(t, res.StatusCode == 500 && body == `{"error":{"code":"internal","message":"internal error"}}`+"\n", "api %d %q", res.StatusCode, body)
	res, _ = a.get("/healthz")
	must(t, res.StatusCode == 200, "server down after a panic")
}
