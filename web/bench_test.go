package web_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"suanli/dbtest"
	"suanli/demo"
	"suanli/offers"
	"suanli/web"
)

// BenchmarkOffersPage100k renders the benchmark page (full page,
// 50 results) through the real router over 100,000 synthetic offers.
func BenchmarkOffersPage100k(b *testing.B) {
	db := dbtest.SQLite(b)
	ctx := context.Background()
	if err := demo.SeedScale(ctx, db, 100_000); err != nil {
		b.Fatal(err)
	}
	ix := offers.NewIndex(db)
	if _, err := ix.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	e := web.New(testHandler(db, ix), web.Options{})
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("GET", "/offers?gpu=h100-sxm&city=chengdu&sort=price", nil)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("status %d", rec.Code)
		}
	}
}

// BenchmarkHealthz measures the middleware stack around the smallest handler.
func BenchmarkHealthz(b *testing.B) {
	db := dbtest.SQLite(b)
	e := web.New(testHandler(db, offers.NewIndex(db)), web.Options{})
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("GET", "/healthz", nil)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("status %d", rec.Code)
		}
	}
}
