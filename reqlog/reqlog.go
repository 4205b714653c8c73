// Package reqlog carries the attributes of one request's log line (the
// user, organisation, rental and node it concerned) from wherever they
// become known — the auth middleware, an authorisation check, an agent's
// credential lookup — to the access log written when the request ends.
package reqlog

import (
	"context"
	"log/slog"
	"sync"
)

type bagKey struct{}

// bag is the request's attribute set; a request may fan out to goroutines,
// so it is locked.
type bag struct {
	mu    sync.Mutex
	attrs []slog.Attr
}

// With returns ctx carrying a new, empty attribute bag. The web layer
// calls it once per request.
func With(ctx context.Context) context.Context {
	return context.WithValue(ctx, bagKey{}, &bag{})
}

// Set records key=value for the request's log line; a later Set of the
// same key wins. Without a bag (a job, a test calling a store directly)
// it does nothing.
func Set(ctx context.Context, key string, value any) {
	b, _ := ctx.Value(bagKey{}).(*bag)
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.attrs {
		if b.attrs[i].Key == key {
			b.attrs[i].Value = slog.AnyValue(value)
			return
		}
	}
	b.attrs = append(b.attrs, slog.Any(key, value))
}

// Attrs returns the recorded attributes as slog key/value arguments, in
// the order they were first set.
func Attrs(ctx context.Context) []any {
	b, _ := ctx.Value(bagKey{}).(*bag)
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]any, len(b.attrs))
	for i, a := range b.attrs {
		out[i] = a
	}
	return out
}
