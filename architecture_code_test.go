package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Two rules of docs/architecture.md that imports cannot show, checked on
// the syntax of every production file: only models/ (with migrations/
// and dbtest/) builds queries, and domain time comes from the injected
// clock (models.DB.Now, models.Now(tx)), not from time.Now.

// queryMethods are gorm's query-building and executing methods. A call
// of one of them on anything but an imported package (strings.Count is
// not a query) outside the query packages is a query built there.
var queryMethods = map[string]bool{
	"Where": true, "Raw": true, "Exec": true, "Model": true, "Table": true,
	"First": true, "Take": true, "Last": true, "Find": true, "Create": true, "Save": true,
	"Updates": true, "Update": true, "UpdateColumn": true, "UpdateColumns": true, "Delete": true,
	"Joins": true, "Preload": true, "Pluck": true, "Count": true, "Clauses": true, "Order": true,
	"Group": true, "Having": true, "Limit": true, "Distinct": true, "SavePoint": true,
	"RollbackTo": true, "ExecContext": true, "QueryContext": true, "QueryRowContext": true,
}

// queryPackages may build queries.
var queryPackages = []string{"models/", "migrations/", "dbtest/"}

// clockFree may read time.Now: the main package (it sets the clock),
// models/db.go (the clock itself), the node agent and its NVML reader (a
// separate process on a GPU host, with its own clock), the renter CLI (a
// client of the API in the renter's own process, with no domain logic:
// its clock only times how long it waits for an answer), stripemock
// (a test tool) and the load tools under scripts/ (API clients that pace
// and time their requests).
var clockFree = []string{"models/db.go", "agent/", "gpu/", "rentercli/", "stripemock/", "scripts/"}

// wallClock lists the files that read time.Now for a reason other than
// domain time, with the reason.
var wallClock = map[string]string{
	"metrics/metrics.go":             "how old the cached reading is: elapsed time",
	"rentals/provision.go":           "how long one job run may wait for an agent: elapsed time",
	"web/idempotency.go":             "when expired keys were last purged: elapsed time",
	"web/middleware.go":              "a request's latency: elapsed time",
	"web/metrics.go":                 "a request's latency: elapsed time",
	"offers/index.go":                "how long an index rebuild took: elapsed time",
	"workers/metrics.go":             "how long a job took: elapsed time",
	"mail/smtp.go":                   "the Date header of a mail sent now",
	"web/ratelimit.go":               "a rate limit's window: elapsed time",
	"web/heartbeat_limit.go":         "a rate limit's window: elapsed time",
	"payments/stripe.go":             "Stripe compares checkout expiry and webhook signatures with its own clock",
	"handlers/rentalwatch/events.go": "an event stream's write deadline: the network's clock",
}

// productionFiles parses every non-test, non-generated Go file of the
// module outside the main package's directory and calls fn with its
// slash-separated path, its syntax and its import names.
func productionFiles(tb testing.TB, fn func(path string, f *ast.File, imports map[string]bool)) {
	tb.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && p != "." {
				return filepath.SkipDir
			}
			return nil
		}
		p = filepath.ToSlash(p)
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.HasSuffix(p, "_templ.go") || !strings.Contains(p, "/") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		imports := map[string]bool{}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			name := path[strings.LastIndex(path, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			imports[name] = true
		}
		fn(p, f, imports)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

func hasPrefix(p string, prefixes []string) bool {
	for _, pre := range prefixes {
		if strings.HasPrefix(p, pre) {
			return true
		}
	}
	return false
}

// Outside models/, migrations/ and dbtest/ no production file builds a
// query: use cases open a transaction and call a named models function.
func TestOnlyModelsBuildQueries(t *testing.T) {
	var bad []string
	productionFiles(t, func(p string, f *ast.File, imports map[string]bool) {
		if hasPrefix(p, queryPackages) {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !queryMethods[sel.Sel.Name] {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && imports[id.Name] {
				return true // a package's function, not a method
			}
			bad = append(bad, p+":"+sel.Sel.Name)
			return true
		})
	})
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s: a query built outside models/ (name it in models and call it)", b)
	}
}

// Domain time comes from the injected clock: a use case, handler or
// worker that reads time.Now would ignore the clock tests set.
func TestDomainTimeComesFromTheClock(t *testing.T) {
	used := map[string]bool{}
	productionFiles(t, func(p string, f *ast.File, imports map[string]bool) {
		if hasPrefix(p, clockFree) {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Now" {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); !ok || id.Name != "time" || !imports["time"] {
				return true
			}
			if _, ok := wallClock[p]; ok {
				used[p] = true
				return true
			}
			t.Errorf("%s reads time.Now: take the time from the database's clock (models.DB.Now, models.Now(tx))", p)
			return true
		})
	})
	for p, why := range wallClock {
		if !used[p] {
			t.Errorf("wallClock lists %s (%s), which no longer reads time.Now: delete the entry", p, why)
		}
	}
}
