package secrets

import (
	"errors"
	"strings"
	"testing"
)

func newKey(t *testing.T) *Key {
	t.Helper()
	return mustKey(t, GenerateKey())
}

func TestRingRotation(t *testing.T) {
	k1, k2 := newKey(t), newKey(t)
	ctx := []byte("user:7")
	before := NewRing("pii", k1)
	sealed := before.Seal([]byte("510107199003071236"), ctx)
	if strings.Contains(sealed, "510107") {
		t.Fatalf("sealed value shows its plaintext: %s", sealed)
	}

	after := NewRing("pii", k2, k1) // k2 now current, k1 kept to open
	if after.Current(sealed) {
		t.Fatal("a value sealed under the old key reported current")
	}
	plain, err := after.Open(sealed, ctx)
	if err != nil || string(plain) != "510107199003071236" {
		t.Fatalf("old value under the rotated ring: %q, %v", plain, err)
	}
	resealed, err := after.Reseal(sealed, ctx)
	if err != nil || !after.Current(resealed) {
		t.Fatalf("Reseal: %q, %v", resealed, err)
	}
	// Once every value is resealed, the old key can go.
	onlyNew := NewRing("pii", k2)
	if plain, err := onlyNew.Open(resealed, ctx); err != nil || string(plain) != "510107199003071236" {
		t.Fatalf("resealed value without the old key: %q, %v", plain, err)
	}
	if _, err := onlyNew.Open(sealed, ctx); !errors.Is(err, ErrOpen) {
		t.Fatalf("old value opened without its key: %v", err)
	}
	if _, err := after.Open(resealed, []byte("user:8")); !errors.Is(err, ErrOpen) {
		t.Fatalf("value opened for another context: %v", err)
	}
	if _, err := NewRing("other", k2).Open(resealed, ctx); !errors.Is(err, ErrOpen) {
		t.Fatalf("value opened for another purpose: %v", err)
	}
}

func TestRingDigestIsKeyed(t *testing.T) {
	k1, k2 := newKey(t), newKey(t)
	a, b := NewRing("pii", k1), NewRing("pii", k2)
	if a.Digest([]byte("x")) != a.Digest([]byte("x")) {
		t.Fatal("digest not deterministic")
	}
	if a.Digest([]byte("x")) == b.Digest([]byte("x")) || a.Digest([]byte("x")) == a.Digest([]byte("y")) {
		t.Fatal("digest does not depend on key and data")
	}
}

// Digests gives the digest under the current key first, then under each
// old key: what a blind-index lookup needs while a rotation is under way.
func TestRingDigestsUnderEveryKey(t *testing.T) {
	k1, k2, k3 := newKey(t), newKey(t), newKey(t)
	ring := NewRing("pii", k3, k2, k1)
	got := ring.Digests([]byte("x"))
	want := []string{ring.Digest([]byte("x")), NewRing("pii", k2).Digest([]byte("x")), NewRing("pii", k1).Digest([]byte("x"))}
	if len(got) != len(want) {
		t.Fatalf("%d digests, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("digest %d: %s, want %s", i, got[i], want[i])
		}
	}
	if d := NewRing("pii", k1).Digests([]byte("x")); len(d) != 1 || d[0] != want[2] {
		t.Errorf("a ring of one key: %v", d)
	}
}
