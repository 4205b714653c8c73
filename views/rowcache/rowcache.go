// Package rowcache keeps rendered HTML fragments (an offer table's rows,
// a filter form) within a fixed byte budget, so that what the pages cache
// stays the same size however many offers, languages, cities and query
// strings the traffic brings.
//
// A key names everything the fragment depends on; for a row that includes
// a revision of its offer (the index entry's pointer), so a changed offer
// is a miss and its old rows are never read again. Entries are evicted
// with CLOCK (second chance) in shards, each behind its own mutex: a hit
// costs a map lookup and a bit set, and an entry nobody reads, such as the
// rows of an offer's old revision, is the first to go.
package rowcache

import (
	"sync"
	"unsafe"
)

// maxShards bounds the number of independently locked parts of a cache;
// 64 keeps lock contention negligible on a 16-core server.
const maxShards = 64

// minShardBytes is the smallest budget a shard gets: a small cache (a
// test's) has fewer shards rather than shards too small to hold a row.
const minShardBytes = 64 << 10

// Cache is a concurrency-safe map from K to an HTML fragment whose
// fragments and keys together stay within the budget given to New.
type Cache[K comparable] struct {
	shards      []shard[K]
	hash        func(K) uint64
	shardBudget int64
	// overhead is what an entry costs beyond its fragment and the key's
	// own variable bytes: the key twice (map and ring), the map's index
	// and the ring slot's string header and flags.
	overhead int64
}

type shard[K comparable] struct {
	mu    sync.Mutex
	index map[K]int32
	ring  []slot[K]
	hand  int
	bytes int64
	// Padding keeps neighbouring shards' locks off one cache line.
	_ [64]byte
}

type slot[K comparable] struct {
	key  K
	html string
	cost int32
	used bool
}

// New returns a cache that holds at most budget bytes of fragments and
// keys (as counted by Put). hash spreads keys over the shards; it need
// not be strong, only vary in its high bits.
func New[K comparable](budget int64, hash func(K) uint64) *Cache[K] {
	n := 1
	for n < maxShards && budget/int64(n*2) >= minShardBytes {
		n *= 2
	}
	var k K
	var s slot[K]
	return &Cache[K]{
		shards:      make([]shard[K], n),
		hash:        hash,
		shardBudget: budget / int64(n),
		overhead:    int64(unsafe.Sizeof(k)+unsafe.Sizeof(s)) + 16,
	}
}

func (c *Cache[K]) shard(k K) *shard[K] {
	if len(c.shards) == 1 {
		return &c.shards[0]
	}
	// Mix (Fibonacci hashing) so that sequential ids spread, then take
	// the high bits.
	h := c.hash(k) * 0x9E3779B97F4A7C15
	return &c.shards[h>>58&uint64(len(c.shards)-1)]
}

// Get returns k's fragment and whether it was cached.
func (c *Cache[K]) Get(k K) (string, bool) {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.index[k]
	if !ok {
		return "", false
	}
	s.ring[i].used = true
	return s.ring[i].html, true
}

// Put stores html under k, evicting entries not read since the clock hand
// last passed them until it fits. keyBytes is what the key holds beyond
// its fixed size that the cache keeps alive (the bytes of strings not
// shared with other keys). A fragment bigger than a shard's budget is not
// stored.
func (c *Cache[K]) Put(k K, html string, keyBytes int) {
	cost := int64(len(html)+keyBytes) + c.overhead
	if cost > c.shardBudget {
		return
	}
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.index[k]; ok {
		// Two requests rendered the same fragment at once: keep the one
		// stored, it is the same HTML.
		s.ring[i].used = true
		return
	}
	for s.bytes+cost > c.shardBudget {
		s.evict()
	}
	if s.index == nil {
		s.index = make(map[K]int32)
	}
	s.index[k] = int32(len(s.ring))
	s.ring = append(s.ring, slot[K]{key: k, html: html, cost: int32(cost)})
	s.bytes += cost
}

// evict removes one entry: the first at or after the hand that was not
// read since the hand last passed it, clearing the marks it passes. The
// last entry moves into the freed slot, so the ring stays dense.
func (s *shard[K]) evict() {
	for {
		if s.hand >= len(s.ring) {
			s.hand = 0
		}
		v := &s.ring[s.hand]
		if v.used {
			v.used = false
			s.hand++
			continue
		}
		delete(s.index, v.key)
		s.bytes -= int64(v.cost)
		last := len(s.ring) - 1
		if s.hand != last {
			s.ring[s.hand] = s.ring[last]
			s.index[s.ring[s.hand].key] = int32(s.hand)
		}
		// Zero the vacated slot so its fragment and key can be collected.
		s.ring[last] = slot[K]{}
		s.ring = s.ring[:last]
		return
	}
}

// Stats is what a cache holds now.
type Stats struct {
	Entries int
	Bytes   int64
}

// Stats counts the entries and their bytes, as Put counted them.
func (c *Cache[K]) Stats() Stats {
	var st Stats
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		st.Entries += len(s.ring)
		st.Bytes += s.bytes
		s.mu.Unlock()
	}
	return st
}

// Budget is the most bytes the cache holds.
func (c *Cache[K]) Budget() int64 { return c.shardBudget * int64(len(c.shards)) }
