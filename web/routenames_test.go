package web

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"suanli/handlers"
)

// routeNameConstants reads the constants of package routenames from its
// source (constants cannot be listed at run time): name → value.
func routeNameConstants(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "routenames", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no source of package routenames: %v", err)
	}
	consts := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("routenames.%s is not a string literal", n.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					consts[n.Name] = v
				}
			}
		}
	}
	return consts
}

// Every constant of package routenames names a route of the table, and
// every route of the table is named by one constant: a name that is not
// a route (echo's Reverse answers "" for it) fails here.
func TestRouteNamesAreTheRouteTable(t *testing.T) {
	consts := routeNameConstants(t)
	table := map[string]bool{}
	for _, r := range routes(&handlers.Handler{}, newMetrics()) {
		if table[r.name] {
			t.Errorf("route name %q is used by two routes", r.name)
		}
		table[r.name] = true
	}
	byValue := map[string]string{}
	for c, v := range consts {
		if other, dup := byValue[v]; dup {
			t.Errorf("routenames.%s and routenames.%s are both %q", c, other, v)
		}
		byValue[v] = c
		if !table[v] {
			t.Errorf("routenames.%s = %q names no route", c, v)
		}
	}
	for name := range table {
		if _, ok := byValue[name]; !ok {
			t.Errorf("route %q has no constant in package routenames", name)
		}
	}
}
