package changefeed_test

import (
	"testing"

	"suanli/changefeed"
)

// pending reports whether s has a wake-up waiting, taking it.
func pending(s *changefeed.Subscription) bool {
	select {
	case <-s.C:
		return true
	default:
		return false
	}
}

// A subscription hears its own keys only; changes that come while it is
// busy fold into one wake-up, and a closed one hears nothing more.
func TestSubscriptionsHearTheirKeysFoldedIntoOne(t *testing.T) {
	f := changefeed.New()
	a := f.Subscribe(changefeed.Rental(1), changefeed.Org(2))
	b := f.Subscribe(changefeed.Rental(3))
	defer b.Close()
	for range 5 {
		f.Publish(changefeed.Rental(1)) // never blocks, though nobody reads
	}
	f.Publish(changefeed.Volume(1)) // nobody's
	if !pending(a) {
		t.Fatal("a did not hear rental 1")
	}
	if pending(a) {
		t.Error("five changes woke a more than once")
	}
	if pending(b) {
		t.Error("b heard rental 1")
	}
	f.Publish(changefeed.Org(2))
	if !pending(a) {
		t.Error("a did not hear org 2")
	}
	f.PublishAll()
	if !pending(a) || !pending(b) {
		t.Error("PublishAll did not wake everyone")
	}
	a.Close()
	a.Close() // harmless
	f.Publish(changefeed.Rental(1))
	if pending(a) {
		t.Error("a closed subscription heard a change")
	}
	if n := f.Subscribers(); n != 1 {
		t.Errorf("%d subscriptions open, want 1", n)
	}
	if _, ok := f.Version(changefeed.Rental(1)); ok {
		t.Error("a feed that reads no source promised a version")
	}
}

// Close tells every waiter to stop.
func TestCloseEndsTheWaits(t *testing.T) {
	f := changefeed.New()
	select {
	case <-f.Done():
		t.Fatal("done before Close")
	default:
	}
	f.Close()
	f.Close()
	<-f.Done()
}
