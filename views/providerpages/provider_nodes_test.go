package providerpages

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"suanli/locales"
	"suanli/views"
)

// The node page's rentals carry their status chip's class (its colour),
// not the class templ writes for a value it cannot render.
func TestNodePageRentalChip(t *testing.T) {
	vc := views.Ctx{
		Lang: locales.EN, Path: "/provider/1/nodes/2",
		URL:  func(string, ...any) string { return "/x" },
		CSRF: func() string { return "token" },
		User: &views.Viewer{ID: 1, Name: "ops", Email: "ops@example.com", Verified: true},
	}
	vm := ProviderNodeVM{
		Shell:   ProviderShell{ProviderID: 1, ProviderName: "Tianfu GPU Cloud", Approved: true, Role: "owner"},
		Node:    Node{ID: 2},
		Rentals: []Rental{{ID: 7, GPUs: 1, SLA: "standard", Status: "running", CreatedAt: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}},
		Now:     time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC),
	}
	var buf bytes.Buffer
	if err := ProviderNodePage(vc, vm).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if !strings.Contains(page, `class="badge chip status-running"`) {
		i := strings.Index(page, "node-rentals")
		t.Fatalf("the rental's chip lacks status-running: %.300s", page[max(i, 0):])
	}
}
