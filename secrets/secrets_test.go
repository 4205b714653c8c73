package secrets

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func mustKey(t *testing.T, s string) *Key {
	t.Helper()
	k, err := ParseKey(s)
	if err != nil {
		t.Fatalf("ParseKey(%q): %v", s, err)
	}
	return k
}

// What is sealed opens again, only with the same key, purpose and
// context, and never shows the plaintext; every nonce is new.
func TestSealOpenRoundTrip(t *testing.T) {
	k := mustKey(t, GenerateKey())
	box := k.Box("registry-credentials")
	secret := []byte("s3cret-pässword\x01with bytes")
	ctx := []byte("rental:7 user:bob")
	sealed := box.Seal(secret, ctx)
	if !strings.HasPrefix(sealed, "v1.") {
		t.Errorf("sealed %q: want the v1. format", sealed)
	}
	if strings.Contains(sealed, "s3cret") || bytes.Contains([]byte(sealed), secret) {
		t.Fatalf("the sealed value shows the plaintext: %q", sealed)
	}
	got, err := box.Open(sealed, ctx)
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open = %q, %v; want the plaintext", got, err)
	}
	// The same plaintext twice: different nonces, different ciphertexts.
	if again := box.Seal(secret, ctx); again == sealed {
		t.Error("two seals of one plaintext are equal: the nonce repeats")
	}
	// An empty plaintext round-trips too.
	if got, err := box.Open(box.Seal(nil, ctx), ctx); err != nil || len(got) != 0 {
		t.Errorf("empty plaintext: %q %v", got, err)
	}

	for name, open := range map[string]func() ([]byte, error){
		"another context":          func() ([]byte, error) { return box.Open(sealed, []byte("rental:8 user:bob")) },
		"no context":               func() ([]byte, error) { return box.Open(sealed, nil) },
		"another purpose's box":    func() ([]byte, error) { return k.Box("other").Open(sealed, ctx) },
		"another key":              func() ([]byte, error) { return mustKey(t, GenerateKey()).Box("registry-credentials").Open(sealed, ctx) },
		"no format prefix":         func() ([]byte, error) { return box.Open(strings.TrimPrefix(sealed, "v1."), ctx) },
		"not base64":               func() ([]byte, error) { return box.Open("v1.***", ctx) },
		"shorter than nonce + tag": func() ([]byte, error) { return box.Open("v1.AAAA", ctx) },
		"empty":                    func() ([]byte, error) { return box.Open("", ctx) },
	} {
		if got, err := open(); !errors.Is(err, ErrOpen) || got != nil {
			t.Errorf("%s: %q %v, want ErrOpen", name, got, err)
		}
	}
}

// Changing any byte of a sealed value (nonce, ciphertext or tag), or
// cutting it short, is detected: it does not open.
func TestTamperingIsDetected(t *testing.T) {
	box := mustKey(t, GenerateKey()).Box("registry-credentials")
	ctx := []byte("rental:1")
	sealed := box.Seal([]byte("hunter2-hunter2"), ctx)
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(sealed, "v1."))
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		for _, bit := range []byte{0x01, 0x80} {
			b := bytes.Clone(raw)
			b[i] ^= bit
			if _, err := box.Open("v1."+base64.RawURLEncoding.EncodeToString(b), ctx); !errors.Is(err, ErrOpen) {
				t.Fatalf("byte %d flipped (%#x): %v, want ErrOpen", i, bit, err)
			}
		}
	}
	for n := range len(raw) {
		if _, err := box.Open("v1."+base64.RawURLEncoding.EncodeToString(raw[:n]), ctx); !errors.Is(err, ErrOpen) {
			t.Fatalf("cut to %d bytes: %v, want ErrOpen", n, err)
		}
	}
	if _, err := box.Open(sealed+"AA", ctx); !errors.Is(err, ErrOpen) {
		t.Fatalf("bytes appended: %v, want ErrOpen", err)
	}
}

// A key is 64 hex digits or base64 of at least 32 bytes; a short or
// malformed one is refused, and the same key text always derives the
// same boxes.
func TestParseKey(t *testing.T) {
	raw := bytes.Repeat([]byte{0xa5}, 32)
	for _, s := range []string{
		strings.Repeat("a5", 32),
		base64.StdEncoding.EncodeToString(raw),
		base64.RawURLEncoding.EncodeToString(append(raw, 0xff, 0xfe)),
		"  " + base64.StdEncoding.EncodeToString(raw) + "\n",
	} {
		k := mustKey(t, s)
		if !bytes.HasPrefix(k.master, raw) {
			t.Errorf("%q: master %x", s, k.master)
		}
	}
	for _, s := range []string{"", "short", strings.Repeat("a5", 20), base64.StdEncoding.EncodeToString(raw[:31]), strings.Repeat("!", 64), "my password"} {
		if _, err := ParseKey(s); !errors.Is(err, ErrKeyFormat) {
			t.Errorf("ParseKey(%q) = %v, want ErrKeyFormat", s, err)
		}
	}
	a, b := mustKey(t, strings.Repeat("a5", 32)), mustKey(t, base64.StdEncoding.EncodeToString(raw))
	sealed := a.Box("p").Seal([]byte("x"), nil)
	if got, err := b.Box("p").Open(sealed, nil); err != nil || string(got) != "x" {
		t.Errorf("the same key written two ways: %q %v", got, err)
	}
}

// Without a configured key, a single host keeps one in a file that only
// its owner may read, made once and read back the same, even when two
// processes start at once.
func TestLoadOrCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "secret.key")
	var wg sync.WaitGroup
	keys := make([]*Key, 4)
	errs := make([]error, 4)
	for i := range keys {
		wg.Go(func() { keys[i], errs[i] = LoadOrCreate(path) })
	}
	wg.Wait()
	for i := range keys {
		if errs[i] != nil {
			t.Fatalf("LoadOrCreate %d: %v", i, errs[i])
		}
		if !bytes.Equal(keys[i].master, keys[0].master) {
			t.Fatalf("LoadOrCreate %d made another key", i)
		}
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v, want mode 0600", st.Mode(), err)
	}
	sealed := keys[0].Box("p").Seal([]byte("kept"), nil)
	again, err := LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := again.Box("p").Open(sealed, nil); err != nil || string(got) != "kept" {
		t.Errorf("after a restart: %q %v", got, err)
	}
	if err := os.WriteFile(path, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreate(path); !errors.Is(err, ErrKeyFormat) || !strings.Contains(err.Error(), path) {
		t.Errorf("a damaged key file: %v, want ErrKeyFormat naming the file", err)
	}
}

// A box's MAC is the same for the same key and purpose, and another for
// another key or purpose; it is not the plain SHA-256.
func TestMAC(t *testing.T) {
	text := GenerateKey()
	sum := func(k *Key, purpose string) []byte {
		m := k.Box(purpose).NewMAC()
		m.Write([]byte("POST /api/v1/rentals\n{\"password\":\"hunter2\"}"))
		return m.Sum(nil)
	}
	a := sum(mustKey(t, text), "p")
	if !bytes.Equal(a, sum(mustKey(t, text), "p")) {
		t.Error("the same key and purpose gave another MAC")
	}
	if bytes.Equal(a, sum(mustKey(t, text), "q")) || bytes.Equal(a, sum(mustKey(t, GenerateKey()), "p")) {
		t.Error("another purpose or key gave the same MAC")
	}
	plain := sha256.Sum256([]byte("POST /api/v1/rentals\n{\"password\":\"hunter2\"}"))
	if bytes.Equal(a, plain[:]) {
		t.Error("the MAC is the plain SHA-256")
	}
}
