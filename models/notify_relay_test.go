package models_test

import (
	"context"
	"testing"
	"time"

	"suanli/dbtest"
	"suanli/models"
	"suanli/models/platform"
)

func TestNotifyRelay(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		if db.PGX == nil {
			t.Skip("LISTEN/NOTIFY is PostgreSQL's; on SQLite one process does everything")
		}
		ctx, cancel := context.WithCancel(context.Background())
		a, b := platform.NewNotifyRelay(db.PGX, "suanli_test_relay"), platform.NewNotifyRelay(db.PGX, "suanli_test_relay")
		got := make(chan string, 100)
		done := make(chan struct{})
		go func() { a.Run(ctx, func(p string) { got <- p }); close(done) }()
		defer func() { cancel(); <-done }()
		// a listens once its connection is up: b sends until it hears.
		deadline := time.After(10 * time.Second)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
	wait:
		for {
			select {
			case p := <-got:
				if p != "node:7|x" {
					t.Fatalf("received %q", p)
				}
				break wait
			case <-tick.C:
				b.Send("node:7|x")
			case <-deadline:
				t.Fatal("no notification within 10s")
			}
		}
		// a's own notifications never come back to it.
		for len(got) > 0 {
			<-got
		}
		a.Send("own")
		b.Send("theirs")
		select {
		case p := <-got:
			if p != "theirs" {
				t.Errorf("received %q, want only the other process's", p)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no notification within 5s")
		}
	})
}
