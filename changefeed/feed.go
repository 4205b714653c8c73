// Package changefeed tells a process's waiting pages that what they show
// changed, whichever process changed it: a rental's live card waits on
// its rental, and its usage section on its GPUs' samples, instead of
// asking the database every few seconds.
//
// The database names each change (the triggers of migrations 00031 and
// 00036: topic and id, package models/changelog); Run reads them from
// one source per process and Publish fans them out to the subscriptions
// in memory. A
// subscription's channel holds at most one wake-up: changes that come
// while its reader is busy fold into one, and a slow reader never blocks
// the feed.
package changefeed

import (
	"crypto/rand"
	"hash/maphash"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// The topics the triggers name (see migrations 00031 and 00036).
const (
	// TopicRental: a rental's row (not the meter's columns), timeline,
	// GPUs, launch progress, registry credential, name or labels.
	TopicRental = "rental"
	// TopicVolume: a volume's row (not the meter's columns).
	TopicVolume = "volume"
	// TopicOrg: what an organisation's wallet runway depends on besides
	// time (a credit, a rental or volume that starts, stops or changes its
	// rate) and the organisation's row.
	TopicOrg = "org"
	// TopicUser: a user's memberships, admin flag, suspension or session
	// epoch: what authorised a waiting page may no longer hold.
	TopicUser = "user"
	// TopicNode: a node's name, status, health or simulated flag.
	TopicNode = "node"
	// TopicSession: a browser session ended (its row was deleted: a
	// logout, a renewed token, a purge). The id is the row's rowid on
	// SQLite, hashtext(token) on PostgreSQL (models/changelog.Session).
	TopicSession = "session"
	// TopicGPU: a new telemetry sample of a GPU (table gpu_samples: one
	// per rented GPU about every 30 s), for the rental page's usage
	// section. Its other changes (state, health) are not this topic's.
	TopicGPU = "gpu"
)

// Key names one thing that changes: a topic and an id.
type Key struct {
	Topic string
	ID    int64
}

// Rental is the key of a rental's changes.
func Rental(id int64) Key { return Key{TopicRental, id} }

// Volume is the key of a volume's changes.
func Volume(id int64) Key { return Key{TopicVolume, id} }

// Org is the key of an organisation's changes.
func Org(id int64) Key { return Key{TopicOrg, id} }

// User is the key of a user's changes.
func User(id int64) Key { return Key{TopicUser, id} }

// Node is the key of a node's changes.
func Node(id int64) Key { return Key{TopicNode, id} }

// GPU is the key of a GPU's telemetry samples (see TopicGPU).
func GPU(id int64) Key { return Key{TopicGPU, id} }

// RentalKeys are the keys of what a rental's answers show: the rental
// (its row, timeline, GPUs, launch, labels) and, where set, its
// organisation (the wallet's runway), volume, node and the node holding
// the files it left behind.
func RentalKeys(rental int64, org, volume, node, leftNode *int64) []Key {
	keys := []Key{Rental(rental)}
	for _, k := range []struct {
		id  *int64
		key func(int64) Key
	}{{org, Org}, {volume, Volume}, {node, Node}, {leftNode, Node}} {
		if k.id != nil {
			keys = append(keys, k.key(*k.id))
		}
	}
	return keys
}

// Session is the key of a session's end (see TopicSession).
func Session(id int64) Key { return Key{TopicSession, id} }

// versionSlots is how many slots Version hashes keys into: a fixed
// size, so memory does not grow with the rentals that ever changed. A
// slot holds the feed's sequence number of its keys' last change. Two
// keys sharing a slot only make a version change more often.
const versionSlots = 1 << 14

// Feed fans changes out to subscriptions. The zero value is not usable:
// call New.
type Feed struct {
	mu   sync.Mutex
	subs map[Key]map[*Subscription]struct{}
	// all holds every subscription, for PublishAll.
	all map[*Subscription]struct{}
	// subsChanged is closed when len(all) changes (SubscribersChanged).
	subsChanged chan struct{}

	// live is set while the source is read without a gap (Run): only
	// then may Version promise that nothing changed.
	live atomic.Bool
	// proc names this feed among every process's (and this process's
	// earlier runs): every feed counts from the same start, so without
	// it two processes, or one before and after a restart, would give
	// the same version to different states.
	proc  string
	epoch atomic.Uint64
	// seq counts the changes published (PublishAll's too).
	seq   atomic.Uint64
	slots [versionSlots]atomic.Uint64
	seed  maphash.Seed

	ready     chan struct{}
	readyOnce sync.Once
	done      chan struct{}
	closeOnce sync.Once
}

// New returns a feed with no source yet: Run reads one.
func New() *Feed {
	return &Feed{subs: map[Key]map[*Subscription]struct{}{}, all: map[*Subscription]struct{}{},
		proc: rand.Text(), seed: maphash.MakeSeed(), ready: make(chan struct{}), done: make(chan struct{})}
}

// Subscription is one waiter's interest in some keys.
type Subscription struct {
	// C receives a value when one of the keys may have changed since the
	// last receive (several changes fold into one).
	C    <-chan struct{}
	c    chan struct{}
	feed *Feed
	keys []Key
	once sync.Once
}

// Subscribe returns a subscription to changes of keys. Close it when done.
func (f *Feed) Subscribe(keys ...Key) *Subscription {
	c := make(chan struct{}, 1)
	s := &Subscription{C: c, c: c, feed: f, keys: keys}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.all[s] = struct{}{}
	f.countChanged()
	for _, k := range keys {
		m := f.subs[k]
		if m == nil {
			m = map[*Subscription]struct{}{}
			f.subs[k] = m
		}
		m[s] = struct{}{}
	}
	return s
}

// Close ends the subscription; C receives nothing more. Closing twice is
// harmless.
func (s *Subscription) Close() {
	s.once.Do(func() {
		f := s.feed
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.all, s)
		f.countChanged()
		for _, k := range s.keys {
			if m := f.subs[k]; m != nil {
				delete(m, s)
				if len(m) == 0 {
					delete(f.subs, k)
				}
			}
		}
	})
}

// wake signals s without waiting: a signal already pending stands for
// this one too.
func (s *Subscription) wake() {
	select {
	case s.c <- struct{}{}:
	default:
	}
}

// Settle drops a wake-up waiting on s that tells only of changes from
// before m: the waiter took m before a read of what s's keys name, so
// that read saw them. Changes published one by one that one read covers
// (a heartbeat's samples of a node's GPUs) then cost one read, not two.
// A wake-up for a change since m (or a gap) stays.
func (s *Subscription) Settle(m Mark) {
	select {
	case <-s.c:
		// Taken first, then checked: a change whose wake-up was taken
		// moved its key's version before it woke s.
		if s.feed.ChangedSince(m, s.keys...) {
			s.wake()
		}
	default:
	}
}

// Publish tells k's subscribers that k changed and moves k's version on.
func (f *Feed) Publish(k Key) {
	n := f.seq.Add(1)
	// The largest wins: a slot never goes back to a version it had.
	for sl := &f.slots[f.slot(k)]; ; {
		if old := sl.Load(); old >= n || sl.CompareAndSwap(old, n) {
			break
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs[k] {
		s.wake()
	}
}

// PublishAll tells every subscriber that anything may have changed (the
// source had a gap: a reconnect, pruned rows) and moves every version on.
func (f *Feed) PublishAll() {
	f.epoch.Add(1)
	f.seq.Add(1)
	f.wakeAll()
}

// Mark is where a feed stood when a waiter read what it shows: see
// ChangedSince.
type Mark struct{ seq, epoch uint64 }

// Mark returns where the feed stands now. Taken before a read, it tells
// a waiter that subscribes only after the read (to keys the read named)
// whether a change it did not hear may have slipped in between.
func (f *Feed) Mark() Mark { return Mark{f.seq.Load(), f.epoch.Load()} }

// ChangedSince reports whether one of keys may have changed since m: a
// change to it (or to a key sharing its slot) was published, the source
// had a gap, or the feed is not reading it now. Call it after
// subscribing to keys: a false answer means no change to them went
// unheard.
func (f *Feed) ChangedSince(m Mark, keys ...Key) bool {
	if !f.live.Load() || f.epoch.Load() != m.epoch {
		return true
	}
	for _, k := range keys {
		if f.slots[f.slot(k)].Load() > m.seq {
			return true
		}
	}
	return false
}

func (f *Feed) wakeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.all {
		s.wake()
	}
}

func (f *Feed) slot(k Key) uint64 {
	var h maphash.Hash
	h.SetSeed(f.seed)
	h.WriteString(k.Topic)
	var b [8]byte
	for i := range b {
		b[i] = byte(uint64(k.ID) >> (8 * i))
	}
	h.Write(b[:])
	return h.Sum64() % versionSlots
}

// Version names the state of keys as far as this process's feed knows:
// it differs after any change to one of them. ok is false while the feed
// is not reading its source (not started, reconnecting), when no version
// can promise that nothing changed. Versions are this feed's own: they
// begin with a random name of the feed (crypto/rand, drawn by New), so a
// version another process, or this one before a restart, gave never
// matches one of this feed's, whatever state either names.
func (f *Feed) Version(keys ...Key) (v string, ok bool) {
	if !f.live.Load() {
		return "", false
	}
	var b strings.Builder
	b.WriteString(f.proc)
	b.WriteByte('.')
	b.WriteString(strconv.FormatUint(f.epoch.Load(), 10))
	for _, k := range keys {
		b.WriteByte('.')
		b.WriteString(strconv.FormatUint(f.slots[f.slot(k)].Load(), 10))
	}
	// Read again: a gap that began meanwhile must not go unnoticed.
	if !f.live.Load() {
		return "", false
	}
	return b.String(), true
}

// SubscribersChanged is closed at the next subscribe or close: a waiter
// takes it, then reads Subscribers, then waits on it (for tests that wait
// for streams to let go).
func (f *Feed) SubscribersChanged() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subsChanged == nil {
		f.subsChanged = make(chan struct{})
	}
	return f.subsChanged
}

// countChanged wakes SubscribersChanged's waiters; f.mu is held.
func (f *Feed) countChanged() {
	if f.subsChanged != nil {
		close(f.subsChanged)
		f.subsChanged = nil
	}
}

// Subscribers is how many subscriptions are open (for tests and metrics).
func (f *Feed) Subscribers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.all)
}

// Subscribed is how many open subscriptions listen to k (for tests and
// metrics: which keys a waiter follows).
func (f *Feed) Subscribed(k Key) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs[k])
}

// Ready is closed once the feed first reads its source: changes committed
// after that reach the subscribers.
func (f *Feed) Ready() <-chan struct{} { return f.ready }

// Done is closed by Close: waiters stop (the server is shutting down).
func (f *Feed) Done() <-chan struct{} { return f.done }

// Close tells every waiter to stop, so that a server's graceful shutdown
// does not wait for open event streams.
func (f *Feed) Close() { f.closeOnce.Do(func() { close(f.done) }) }

// setLive records whether the source is read without a gap (only Run's
// goroutine calls it). Going live after a gap tells everyone that
// anything may have changed; the epoch moves before Version may answer
// again, so no version from before the gap is ever repeated.
func (f *Feed) setLive(live bool) {
	if !live {
		f.live.Store(false)
		return
	}
	if !f.live.Load() {
		f.epoch.Add(1)
		f.live.Store(true)
		f.wakeAll()
	}
	f.readyOnce.Do(func() { close(f.ready) })
}
