package web_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"suanli/dbtest"
	"suanli/models"
	"suanli/openapi"
	"suanli/routenames"
)

// apiValidator is compiled once for the whole test binary.
var apiValidator = sync.OnceValues(openapi.NewValidator)

// validateAPI wraps the application so that every /api/v1 request and
// answer is checked against the OpenAPI document: the operation is
// documented (or the answer is the router's 404/405), the status is
// documented for it, the JSON body matches the schema, and the body of a
// request the server accepted matches the request schema. A mismatch
// fails the test that made the app.
func validateAPI(t *testing.T, next http.Handler) http.Handler {
	v, err := apiValidator()
	if err != nil {
		t.Fatalf("openapi: %v", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Routes that a test adds to the router itself live under /api/v1/test/.
		if !strings.HasPrefix(r.URL.Path, "/api/v1/") || strings.HasPrefix(r.URL.Path, "/api/v1/test/") {
			next.ServeHTTP(w, r)
			return
		}
		var reqBody []byte
		if r.Body != nil {
			reqBody, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(reqBody))
		}
		tee := &teeWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(tee, r)
		body := tee.buf.Bytes()
		if tee.Header().Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Errorf("openapi: %s %s: bad gzip: %v", r.Method, r.URL.Path, err)
				return
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Errorf("openapi: %s %s: bad gzip: %v", r.Method, r.URL.Path, err)
				return
			}
		}
		if err := v.CheckResponse(r.Method, r.URL.Path, tee.status, tee.Header(), body); err != nil {
			t.Errorf("openapi: %v", err)
		}
		if tee.status/100 == 2 && len(bytes.TrimSpace(reqBody)) > 0 {
			if err := v.CheckRequest(r.Method, r.URL.Path, reqBody); err != nil {
				t.Errorf("openapi: request the server accepted: %s %s: %v", r.Method, r.URL.Path, err)
			}
		}
	})
}

// teeWriter copies what the application writes.
type teeWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	buf         bytes.Buffer
}

func (w *teeWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *teeWriter) Write(b []byte) (int, error) {
	w.wroteHeader = true
	w.buf.Write(b)
	return w.ResponseWriter.Write(b)
}

// Flush and Hijack keep streaming answers working through the wrapper.
func (w *teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *teeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

var (
	echoParam = regexp.MustCompile(`:([a-z_]+)`)
	docParam  = regexp.MustCompile(`\{[a-z_]+\}`)
)

// Every /api/v1 route of the route table is in the document, and every
// operation of the document is a route.
func TestOpenAPICoversTheRouteTable(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	routes := map[string]bool{}
	for _, r := range a.e.Routes() {
		if !strings.HasPrefix(r.Path, "/api/v1/") {
			continue
		}
		routes[r.Method+" "+echoParam.ReplaceAllString(r.Path, "{}")] = true
	}
	// Parameters compared by place, not name ({id}/{sid} and :id/:sid).
	documented := map[string]bool{}
	for _, op := range openapi.Operations() {
		documented[op.Method+" "+docParam.ReplaceAllString(op.Path, "{}")] = true
	}
	var missing, extra []string
	for k := range routes {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !routes[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	for _, k := range missing {
		t.Errorf("route %s is not in the OpenAPI document", k)
	}
	for _, k := range extra {
		t.Errorf("the OpenAPI document has %s, which is no route", k)
	}
}

// The document is served, and it is the embedded one.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	res, body := a.get("/api/v1/openapi.json")
	must(t, res.StatusCode == http.StatusOK, "status %d", res.StatusCode)
	must(t, strings.HasPrefix(res.Header.Get("Content-Type"), "application/json"), "content type %q", res.Header.Get("Content-Type"))
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	must(t, json.Unmarshal([]byte(body), &doc) == nil, "not JSON")
	must(t, doc.OpenAPI == "3.1.0", "openapi %q", doc.OpenAPI)
	must(t, doc.Paths["/api/v1/rentals"] != nil, "no /api/v1/rentals")
}

// /api/docs shows every operation of the document with its parameters and
// fields, in Chinese and English chrome, and says in Chinese that the
// descriptions are English.
func TestAPIDocsPage(t *testing.T) {
	t.Parallel()
	a := newSQLiteApp(t)
	for _, lang := range []string{"zh-CN", "en"} {
		res, body := a.get(a.url(routenames.APIDocs), "Accept-Language", lang)
		must(t, res.StatusCode == http.StatusOK, "%s: status %d", lang, res.StatusCode)
		for _, op := range openapi.Operations() {
			contains(t, body, `id="`+op.Anchor()+`"`, `data-path="`+op.Path+`"`)
		}
		// A parameter, a request field and a nested response field.
		contains(t, body, "<code>per_page</code>", "<code>ssh_public_key</code>", "<code>offers[].datacenter.city</code>", "Idempotency-Key")
		switch lang {
		case "zh-CN":
			contains(t, body, "API 参考", "接口和字段的说明仅有英文版本")
		case "en":
			contains(t, body, "API reference")
			must(t, !strings.Contains(body, `id="apidocs-english"`), "the English page says its descriptions are English only")
		}
	}
}

// Every list endpoint pages the same way: page and per_page (at most
// 200, else a 400 naming it), total beside the items.
func TestAPIPagination(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		org, token, body := idemRenter(t, a, "pages@example.com")
		for i := range 3 {
			st, _, resp, _ := idemPost(a, "/api/v1/rentals", token, "", body)
			must(t, st == http.StatusCreated, "rental %d: %d %s", i, st, resp)
		}
		var nodeID int64
		if err := db.R.Raw(`SELECT id FROM nodes ORDER BY id LIMIT 1`).Scan(&nodeID).Error; err != nil || nodeID == 0 {
			t.Fatalf("a node: %v", err)
		}
		lists := []struct{ path, key string }{
			{"/api/v1/offers", "offers"},
			{"/api/v1/rentals", "rentals"},
			{"/api/v1/wallet/ledger", "entries"},
			{"/api/v1/nodes/" + idParam(nodeID) + "/benchmarks", "reports"},
		}
		auth := []string{"Authorization", "Bearer " + token}
		for _, l := range lists {
			for _, bad := range []struct{ q, param string }{{"per_page=201", "per_page"}, {"per_page=0", "per_page"}, {"page=0", "page"}, {"page=x", "page"}} {
				res, body := a.get(l.path+"?"+bad.q, auth...)
				must(t, res.StatusCode == http.StatusBadRequest, "%s?%s: %d", l.path, bad.q, res.StatusCode)
				_, param, _ := errorCode(t, body)
				must(t, param == bad.param, "%s?%s: param %q", l.path, bad.q, param)
			}
			var first, second map[string]json.RawMessage
			res, body := a.get(l.path+"?per_page=1", auth...)
			must(t, res.StatusCode == http.StatusOK && json.Unmarshal([]byte(body), &first) == nil, "%s: %d %s", l.path, res.StatusCode, body)
			var total, perPage int
			var items []json.RawMessage
			must(t, json.Unmarshal(first["total"], &total) == nil && json.Unmarshal(first["per_page"], &perPage) == nil &&
				json.Unmarshal(first[l.key], &items) == nil, "%s: %s", l.path, body)
			must(t, perPage == 1 && len(items) == min(total, 1), "%s: total %d per_page %d items %d", l.path, total, perPage, len(items))
			if total > 1 {
				_, body = a.get(l.path+"?per_page=1&page=2", auth...)
				must(t, json.Unmarshal([]byte(body), &second) == nil, "%s page 2: %s", l.path, body)
				must(t, string(second[l.key]) != string(first[l.key]), "%s: page 2 is page 1", l.path)
			}
			res, body = a.get(l.path+"?page=100000", auth...)
			_, param, _ := errorCode(t, body)
			must(t, res.StatusCode == http.StatusBadRequest && param == "page", "%s past the end: %d %s", l.path, res.StatusCode, body)
		}
		res, body := a.get("/api/v1/rentals?per_page=2", auth...)
		must(t, res.StatusCode == http.StatusOK && strings.Contains(body, `"total":3`), "rentals of org %d: %s", org, body)
	})
}
