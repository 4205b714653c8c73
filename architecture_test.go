package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The dependency rules of docs/architecture.md (DESIGN.md §2), checked
// on the import declarations of every Go file of the module, read with
// go/parser (build tags are ignored: every file counts, whatever it is
// built for). A rule names the packages it is about, the imports they may
// not have and whether it holds for _test files too. An edge a rule
// forbids fails the test, naming the file and the import, unless it is
// a lasting exception (exceptions, each with its reason) or a violation
// still being removed (allowList). An entry of either list that no file
// needs any more fails the test too, so the lists only shrink.

const module = "suanli"

// useCases are the use-case packages: each owns one concern, opens its
// transactions and asks models/ for every query.
var useCases = []string{
	"suanli/offers", "suanli/tco", "suanli/fleet", "suanli/benchmarks", "suanli/rentals", "suanli/billing",
	"suanli/sla", "suanli/providers", "suanli/metrics", "suanli/audit", "suanli/accounts", "suanli/images", "suanli/volumes",
	"suanli/workspace",
	"suanli/idlestop",
	"suanli/standingorders",
	"suanli/spendalerts",
	"suanli/interruptions",
	"suanli/launch",
	"suanli/identity",
	"suanli/invoices",
}

// edge is one import of one file: the file relative to the module root
// (slash-separated) and the imported path.
type edge struct {
	file, imp string
}

// depRule forbids the packages matched by from to import what forbid
// matches.
type depRule struct {
	name   string
	from   func(pkg string) bool
	forbid func(imp string) bool
	// tests: the rule holds for _test files too.
	tests bool
}

// under reports whether pkg is one of roots or a package below one.
func under(roots ...string) func(string) bool {
	return func(pkg string) bool {
		for _, r := range roots {
			if pkg == r || strings.HasPrefix(pkg, r+"/") {
				return true
			}
		}
		return false
	}
}

// stdlib reports whether imp is in the standard library: its first
// element has no dot, and it is not this module (whose name has none).
func stdlib(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return !strings.Contains(first, ".") && first != module
}

func not(f func(string) bool) func(string) bool { return func(s string) bool { return !f(s) } }

func anyOf(fs ...func(string) bool) func(string) bool {
	return func(s string) bool {
		for _, f := range fs {
			if f(s) {
				return true
			}
		}
		return false
	}
}

var (
	isUseCase = under(useCases...)
	isEdge    = under("suanli/handlers", "suanli/web", "suanli/views", "suanli/workers")
	// remoteOK is what code that runs on a provider's GPU host may use:
	// the standard library, go-nvml, Docker's Engine API client (the
	// docker launcher), agent and gpu themselves, and the pure shared
	// packages (no imports but the standard library, checked by the rule
	// "pure shared packages"), the tunnel to the server (package tunnel,
	// yamux over a WebSocket); its tests also an SSH client and the test
	// Docker daemon (dockertest).
	remoteOK = anyOf(stdlib, under("github.com/NVIDIA/go-nvml", "suanli/agent", "suanli/gpu", "suanli/locales", "suanli/catalog",
		"github.com/docker/docker", "github.com/docker/go-connections", "github.com/containerd/errdefs",
		"golang.org/x/crypto/ssh", "suanli/dockertest", "suanli/tunnel", "github.com/hashicorp/yamux", "github.com/coder/websocket"))
	// infraClients are the clients of the queue, of Stripe, of
	// PostgreSQL and of Prometheus: workers, payments, models and web own
	// them, never a use case.
	infraClients = under("github.com/riverqueue/river", "github.com/stripe/stripe-go", "github.com/jackc/pgx", "github.com/prometheus")
)

var depRules = []depRule{
	{name: "views receive plain view models: no models, no gorm, no use case",
		from: under("suanli/views"), forbid: anyOf(under("suanli/models", "gorm.io"), isUseCase), tests: true},
	{name: "handlers never query: no gorm",
		from: under("suanli/handlers"), forbid: under("gorm.io"), tests: true},
	{name: "agent and gpu run on remote hosts: stdlib, go-nvml, each other and pure shared packages only",
		from: under("suanli/agent", "suanli/gpu"), forbid: not(remoteOK), tests: true},
	{name: "the tunnel runs on both ends: stdlib, yamux and the WebSocket library only",
		from: under("suanli/tunnel"), forbid: not(anyOf(stdlib, under("github.com/hashicorp/yamux", "github.com/coder/websocket")))},
	{name: "pure shared packages import the standard library only",
		from: under("suanli/locales", "suanli/catalog", "suanli/cnid"), forbid: not(stdlib)},
	{name: "use cases never import the edge (handlers, web, views, workers)",
		from: isUseCase, forbid: isEdge},
	// models/ (its leaf packages too: models/ledger, models/supply, …)
	// is below every use case.
	{name: "models never imports a use case or the edge",
		from: under("suanli/models"), forbid: anyOf(isUseCase, isEdge)},
	// The leaf packages build on models' records and DB; models itself
	// never imports them, so the records stay one package every leaf
	// shares and no leaf is a cycle away from another.
	{name: "models never imports its leaf packages",
		from:   func(pkg string) bool { return pkg == "suanli/models" },
		forbid: func(imp string) bool { return strings.HasPrefix(imp, "suanli/models/") }},
	{name: "nothing imports web except main",
		from: func(pkg string) bool { return pkg != module }, forbid: under("suanli/web")},
	// handlers/ holds what every handler shares (the Handler, form and
	// pagination helpers); its area packages (handlers/provider, …)
	// build on it, and web mounts them all on the one route table.
	{name: "handlers are imported only by main, web and handlers' own area packages",
		from: not(anyOf(func(pkg string) bool { return pkg == module }, under("suanli/web", "suanli/handlers"))), forbid: under("suanli/handlers")},
	{name: "use cases do not use river, stripe-go, pgx or prometheus",
		from: isUseCase, forbid: infraClients},
	// The renter CLI proves the API is enough: it reaches the server only
	// through the client generated from the OpenAPI document.
	{name: "the renter CLI uses only the generated API client and locales of this module",
		from: under("suanli/rentercli"), forbid: func(imp string) bool {
			// Its own packages (rentercli/sshcmd) are held to the same rule.
			return under(module)(imp) && !under("suanli/apiclient", "suanli/locales", "suanli/rentercli")(imp)
		}},
	// The load tools drive a running server as its clients do, so what
	// they measure is what a client gets.
	{name: "the load tools under scripts/ use only the standard library and the generated API client",
		from: under("suanli/scripts"), forbid: not(anyOf(stdlib, under("suanli/apiclient")))},
}

// exceptions are edges the rules forbid that are part of the design,
// each with its reason. They are not expected to go away.
var exceptions = map[edge]string{
	// metrics is the Prometheus collector: reading the market's figures
	// into Prometheus gauges is all it does.
	{"metrics/metrics.go", "github.com/prometheus/client_golang/prometheus"}: "metrics is the Prometheus collector",
}

// allowList held the forbidden edges while they were being removed (views
// taking records); it is empty, and an entry no file needs fails the test.
// Add none.
var allowList = []edge{}

// moduleImports reads the imports of every Go file of the module below
// root: the file's edges and its package's import path.
func moduleImports(tb testing.TB, root string) (edges []edge, pkgOf map[string]string) {
	tb.Helper()
	pkgOf = map[string]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := module
		if dir := filepath.ToSlash(filepath.Dir(rel)); dir != "." {
			pkg = module + "/" + dir
		}
		pkgOf[rel] = pkg
		for _, is := range f.Imports {
			imp, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				return err
			}
			edges = append(edges, edge{rel, imp})
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("reading the module's imports: %v", err)
	}
	return edges, pkgOf
}

// violations are the edges that break a rule, with the rule broken.
func violations(edges []edge, pkgOf map[string]string) map[edge]string {
	out := map[edge]string{}
	for _, e := range edges {
		test := strings.HasSuffix(e.file, "_test.go")
		for _, r := range depRules {
			if test && !r.tests {
				continue
			}
			if r.from(pkgOf[e.file]) && r.forbid(e.imp) {
				out[e] = r.name
				break
			}
		}
	}
	return out
}

// TestArchitectureDependencyRules fails on an import a dependency rule
// forbids, and on an exception or allow-list entry nothing needs.
func TestArchitectureDependencyRules(t *testing.T) {
	edges, pkgOf := moduleImports(t, ".")
	if len(pkgOf) < 100 {
		t.Fatalf("read only %d Go files: is the test running in the module root?", len(pkgOf))
	}
	bad := violations(edges, pkgOf)
	allowed := map[edge]bool{}
	for _, e := range allowList {
		if allowed[e] {
			t.Errorf("allow-list entry %s imports %q is listed twice", e.file, e.imp)
		}
		allowed[e] = true
	}
	var msgs []string
	for e, rule := range bad {
		if _, ok := exceptions[e]; ok || allowed[e] {
			continue
		}
		msgs = append(msgs, e.file+" imports "+strconv.Quote(e.imp)+": "+rule)
	}
	sort.Strings(msgs)
	for _, m := range msgs {
		t.Error("forbidden import: " + m)
	}
	for e, why := range exceptions {
		if _, ok := bad[e]; !ok {
			t.Errorf("exception %s imports %q (%s) is no longer needed: delete it", e.file, e.imp, why)
		}
	}
	for _, e := range allowList {
		if _, ok := bad[e]; !ok {
			t.Errorf("allow-list entry %s imports %q is no longer needed (the import is gone or no rule forbids it): delete it", e.file, e.imp)
		}
	}
}

// TestArchitectureRulesCatch checks the rules themselves on made-up
// edges, so that a rule that matches nothing cannot pass unnoticed.
func TestArchitectureRulesCatch(t *testing.T) {
	pkgOf := map[string]string{}
	var edges []edge
	add := func(file, imp string) edge {
		dir := filepath.ToSlash(filepath.Dir(file))
		pkgOf[file] = module + "/" + dir
		if dir == "." {
			pkgOf[file] = module
		}
		e := edge{file, imp}
		edges = append(edges, e)
		return e
	}
	forbidden := []edge{
		add("views/pages/x.go", "suanli/models"),
		add("views/pages/x.go", "gorm.io/gorm"),
		add("views/x_test.go", "suanli/rentals"),
		add("handlers/x.go", "gorm.io/gorm/clause"),
		add("agent/x.go", "suanli/models"),
		add("agent/x_test.go", "suanli/fleet"),
		add("gpu/x.go", "github.com/labstack/echo/v4"),
		add("locales/x.go", "suanli/models"),
		add("rentals/x.go", "suanli/workers"),
		add("fleet/x.go", "suanli/views/pages"),
		add("models/x.go", "suanli/billing"),
		add("models/x.go", "suanli/handlers"),
		add("models/ledger/x.go", "suanli/billing"),
		add("models/supply/x.go", "suanli/views"),
		add("models/x.go", "suanli/models/ledger"),
		add("views/x.go", "suanli/models/supply"),
		add("workers/x.go", "suanli/web"),
		add("offers/x.go", "suanli/handlers"),
		add("billing/x.go", "github.com/stripe/stripe-go/v76"),
		add("fleet/x.go", "github.com/jackc/pgx/v5"),
		add("rentals/x.go", "github.com/riverqueue/river"),
		add("sla/x.go", "github.com/prometheus/client_golang/prometheus"),
		add("views/x.go", "suanli/handlers"),
		add("workers/x.go", "suanli/handlers/admin"),
		add("handlers/admin/x.go", "suanli/web"),
		add("scripts/churn/x.go", "suanli/models"),
	}
	fine := []edge{
		add("x.go", "suanli/web"),
		add("main_test.go", "suanli/handlers"),
		add("web/x.go", "suanli/handlers/provider"),
		add("handlers/admin/x.go", "suanli/handlers"),
		add("rentals/x_test.go", "suanli/web"),
		add("agent/x.go", "suanli/gpu"),
		add("agent/x.go", "suanli/locales"),
		add("gpu/x_test.go", "github.com/NVIDIA/go-nvml/pkg/nvml/mock"),
		add("gpu/x_test.go", "suanli/catalog"),
		add("views/pages/x.go", "suanli/pricing"),
		add("handlers/x.go", "suanli/rentals"),
		add("workers/x.go", "github.com/riverqueue/river"),
		add("models/x.go", "gorm.io/gorm"),
		add("models/ledger/x.go", "suanli/models"),
		add("models/platform/x.go", "gorm.io/gorm"),
		add("billing/x.go", "suanli/models/ledger"),
		add("models/x_test.go", "suanli/models/rentalstore"),
		add("rentals/x.go", "suanli/billing"),
		add("scripts/churn/x.go", "suanli/apiclient"),
	}
	bad := violations(edges, pkgOf)
	for _, e := range forbidden {
		if _, ok := bad[e]; !ok {
			t.Errorf("%s importing %q passes the rules", e.file, e.imp)
		}
	}
	for _, e := range fine {
		if rule, ok := bad[e]; ok {
			t.Errorf("%s importing %q is refused: %s", e.file, e.imp, rule)
		}
	}
	if !slices.ContainsFunc(depRules, func(r depRule) bool { return r.tests }) {
		t.Error("no rule holds for _test files")
	}
}

// maxPackageLines is the most hand-written lines a package may hold: its
// non-test .go files (generated ones excepted: _templ.go files and
// generatedFiles) and its .templ
// sources. A package that outgrows it has become more than one concern;
// split it along its seams instead of raising the limit.
const maxPackageLines = 3000

// generatedFiles are the other generated .go files, by path: only these,
// so that a "Code generated" line cannot take a hand-written file out of
// the count.
var generatedFiles = []string{"apiclient/client.gen.go"}

// TestArchitecturePackageSize fails on a package that holds more than
// maxPackageLines hand-written lines.
func TestArchitecturePackageSize(t *testing.T) {
	lines := map[string]int{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != "." {
				return filepath.SkipDir // another module
			}
			return nil
		}
		handWritten := strings.HasSuffix(name, ".templ") ||
			strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") && !strings.HasSuffix(name, "_templ.go")
		if !handWritten || slices.Contains(generatedFiles, filepath.ToSlash(path)) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines[filepath.ToSlash(filepath.Dir(path))] += strings.Count(string(b), "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) < 20 {
		t.Fatalf("counted only %d packages: is the test running in the module root?", len(lines))
	}
	for dir, n := range lines {
		if n > maxPackageLines {
			t.Errorf("package %s holds %d hand-written lines, more than %d: split it along its seams", dir, n, maxPackageLines)
		}
	}
}
