package handlers

import (
	"testing"

	"github.com/labstack/echo/v4"
)

// TestReverserAgreesWithEcho: the cached reverser builds every URL as
// echo's own Reverse does, with and without parameters.
func TestReverserAgreesWithEcho(t *testing.T) {
	e := echo.New()
	h := func(echo.Context) error { return nil }
	e.GET("/offers", h).Name = "list"
	e.GET("/offers/:id", h).Name = "one"
	e.GET("/provider/:pid/nodes/:id/live", h).Name = "two"
	e.GET("/files/*", h).Name = "wild"
	e.GET("/a\\:b/:id", h).Name = "escaped"
	rev := reverser(e)
	cases := []struct {
		name   string
		params []any
	}{
		{"list", nil}, {"one", []any{int64(42)}}, {"one", []any{"x y"}}, {"two", []any{int64(7), 9}},
		{"wild", []any{"a/b.txt"}}, {"escaped", []any{int64(3)}}, {"one", nil}, {"two", []any{int64(1)}}, {"missing", nil},
	}
	for range 2 { // the second pass reads the cache
		for _, c := range cases {
			if got, want := rev(c.name, c.params...), e.Reverse(c.name, c.params...); got != want {
				t.Errorf("%s %v: %q, echo says %q", c.name, c.params, got, want)
			}
		}
	}
}
