package rowcache

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// key is a row's key as the offer table makes it: an id, a revision
// (the offer's index entry) and what else the row depends on.
type key struct {
	id   int64
	rev  any
	lang string
}

func hashKey(k key) uint64 { return uint64(k.id) }

type revision struct{ n int }

func TestHitAfterPut(t *testing.T) {
	c := New(1<<20, hashKey)
	rev := &revision{}
	k := key{1, rev, "zh"}
	if _, ok := c.Get(k); ok {
		t.Fatal("hit in an empty cache")
	}
	c.Put(k, "<tr>1</tr>", 0)
	if got, ok := c.Get(k); !ok || got != "<tr>1</tr>" {
		t.Fatalf("Get = %q, %v; want the stored row", got, ok)
	}
	if _, ok := c.Get(key{1, rev, "en"}); ok {
		t.Error("another language hit the Chinese row")
	}
}

// A changed offer has a new revision: its old rows are not served.
func TestChangedRevisionMisses(t *testing.T) {
	c := New(1<<20, hashKey)
	old := &revision{n: 1}
	c.Put(key{7, old, "zh"}, "<tr>old</tr>", 0)
	changed := &revision{n: 1} // equal contents, another revision
	if got, ok := c.Get(key{7, changed, "zh"}); ok {
		t.Fatalf("a changed offer got its old row %q", got)
	}
	if _, ok := c.Get(key{7, old, "zh"}); !ok {
		t.Error("the old revision's row is gone though nothing evicted it")
	}
}

// However many rows are put, the cache holds no more bytes than its budget.
func TestBudgetRespected(t *testing.T) {
	for _, budget := range []int64{10_000, 1 << 20, 16 << 20} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			c := New(budget, hashKey)
			rev := &revision{}
			row := strings.Repeat("x", 1500)
			for i := range int64(50_000) {
				c.Put(key{i, rev, "zh"}, row, 2)
				if i%997 == 0 {
					if st := c.Stats(); st.Bytes > budget {
						t.Fatalf("after %d rows the cache holds %d bytes, over its budget %d", i+1, st.Bytes, budget)
					}
				}
			}
			st := c.Stats()
			if st.Bytes > budget || c.Budget() > budget {
				t.Fatalf("cache holds %d bytes (budget %d as split: %d), over %d", st.Bytes, c.Budget(), c.Budget(), budget)
			}
			// It is also used: at least half the budget holds rows.
			if st.Bytes < budget/2 {
				t.Errorf("cache holds %d bytes of a %d budget", st.Bytes, budget)
			}
			if want := int(st.Bytes) / (1500 + 2); st.Entries > want {
				t.Errorf("%d entries in %d bytes: an entry costs less than its row", st.Entries, st.Bytes)
			}
		})
	}
	t.Run("fragment over a shard's budget is not stored", func(t *testing.T) {
		c := New(10_000, hashKey)
		c.Put(key{1, nil, "zh"}, strings.Repeat("x", 20_000), 0)
		if _, ok := c.Get(key{1, nil, "zh"}); ok {
			t.Error("a fragment twice the budget was stored")
		}
	})
}

// Rows read since the clock hand last passed survive; rows nobody reads
// (an old revision's) go first.
func TestEvictionKeepsRowsInUse(t *testing.T) {
	c := New(100_000, hashKey) // one shard
	if len(c.shards) != 1 {
		t.Fatalf("%d shards for a 100 kB budget; the test needs one", len(c.shards))
	}
	row := strings.Repeat("x", 1000)
	rev := &revision{}
	hot := key{0, rev, "zh"}
	c.Put(hot, row, 0)
	for i := range int64(1000) {
		if _, ok := c.Get(hot); !ok {
			t.Fatalf("the row read before each put was evicted after %d puts", i)
		}
		c.Put(key{i + 1, rev, "zh"}, row, 0)
	}
	// The first cold rows were evicted to make room.
	if _, ok := c.Get(key{1, rev, "zh"}); ok {
		t.Error("the first cold row survived 1000 puts into room for ~90")
	}
	// The most recent one is there.
	if _, ok := c.Get(key{1000, rev, "zh"}); !ok {
		t.Error("the last row put is missing")
	}
}

// Many goroutines reading and writing at once (run with -race) see only
// the fragments stored under their keys, and the budget holds.
func TestConcurrentUse(t *testing.T) {
	const budget = 256 << 10
	c := New(budget, hashKey)
	revs := []*revision{{1}, {2}, {3}}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 5000 {
				id := int64((i*7 + g) % 500)
				k := key{id, revs[i%len(revs)], []string{"zh", "en"}[i%2]}
				want := fmt.Sprintf("<tr>%d %p %s</tr>", k.id, k.rev, k.lang) + strings.Repeat(" ", 500)
				if got, ok := c.Get(k); ok {
					if got != want {
						t.Errorf("key %v got %q", k, got)
						return
					}
					continue
				}
				c.Put(k, want, 0)
			}
		})
	}
	wg.Wait()
	if st := c.Stats(); st.Bytes > budget || st.Entries == 0 {
		t.Errorf("after concurrent use: %+v, budget %d", st, budget)
	}
}
