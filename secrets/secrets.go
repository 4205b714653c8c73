// Package secrets keeps what the platform must store but never show
// again — a renter's registry password — sealed with AES-256-GCM under a
// key derived from the platform's secret key (SUANLI_SECRET_KEY), with a
// fresh random nonce each time. A sealed value is bound to what it
// belongs to (its context, GCM's additional data), so one copied to
// another row does not open there, and any change to it is detected.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeyBytes is the least a platform secret key holds.
const KeyBytes = 32

// Key is the platform's secret key. Each use derives its own AES key from
// it (Box), so that one purpose's ciphertexts never open under another's.
type Key struct{ master []byte }

// ErrKeyFormat is a secret key that is not 64 hex digits or the base64 of
// at least KeyBytes bytes.
var ErrKeyFormat = fmt.Errorf("want 64 hex digits or the base64 of at least %d random bytes, e.g. from `openssl rand -base64 32`", KeyBytes)

// ParseKey reads a secret key written as hex or base64 (standard or URL
// alphabet, padded or not) of at least KeyBytes bytes.
func ParseKey(s string) (*Key, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) >= KeyBytes {
		return &Key{master: b}, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) >= KeyBytes {
			return &Key{master: b}, nil
		}
	}
	return nil, ErrKeyFormat
}

// GenerateKey returns a new random key, written as ParseKey reads it.
func GenerateKey() string {
	b := make([]byte, KeyBytes)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on a supported platform
	}
	return base64.StdEncoding.EncodeToString(b)
}

// LoadOrCreate reads the key in the file at path, first writing a new
// one there (readable by its owner only) when there is no such file. It
// is the key of a single-host installation that configured none.
func LoadOrCreate(path string) (*Key, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := create(path); err != nil {
			return nil, err
		}
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	k, err := ParseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// create writes a new key to path unless a file is there: written whole
// to a temporary file first and then linked into place, so that a
// process starting at the same moment reads either no key file or a
// complete one, and of two such processes one key wins.
func create(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".secret-key-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.WriteString(GenerateKey() + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Link(f.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// Box seals and opens values for one purpose, and keys digests of what
// may hold such values (NewMAC).
type Box struct {
	aead   cipher.AEAD
	macKey []byte
}

// Box returns the box of a purpose (such as "registry-credentials"): AES-256-GCM
// under a key derived from k with HKDF-SHA256, the purpose as its info.
func (k *Key) Box(purpose string) *Box {
	sub, err := hkdf.Key(sha256.New, k.master, nil, "suanli "+purpose, 32)
	if err != nil {
		panic(err) // only for a length HKDF-SHA256 cannot give; 32 it can
	}
	block, err := aes.NewCipher(sub)
	if err != nil {
		panic(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	mac, err := hkdf.Key(sha256.New, k.master, nil, "suanli "+purpose+" mac", 32)
	if err != nil {
		panic(err)
	}
	return &Box{aead: aead, macKey: mac}
}

// NewMAC returns an HMAC-SHA256 under a key of the box's purpose (not its
// sealing key): a digest of something that may hold a sealed value's
// plaintext — a request body with a password — that, stored, is no help
// in guessing it without the platform key.
func (b *Box) NewMAC() hash.Hash { return hmac.New(sha256.New, b.macKey) }

// sealedPrefix names the format of a sealed value, so that another one
// (a new cipher, a rotated key) can be told apart later.
const sealedPrefix = "v1."

// ErrOpen is a sealed value that does not open: changed, sealed under
// another key, or for another context.
var ErrOpen = errors.New("secrets: the sealed value does not open with this key and context")

// Seal encrypts plaintext bound to context, under a fresh random nonce:
// "v1." and the base64url of nonce, ciphertext and tag.
func (b *Box) Seal(plaintext, context []byte) string {
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand never fails on a supported platform
	}
	out := b.aead.Seal(nonce, nonce, plaintext, context)
	return sealedPrefix + base64.RawURLEncoding.EncodeToString(out)
}

// Open decrypts what Seal made for the same context; anything else is
// ErrOpen.
func (b *Box) Open(sealed string, context []byte) ([]byte, error) {
	rest, ok := strings.CutPrefix(sealed, sealedPrefix)
	if !ok {
		return nil, ErrOpen
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(raw) < b.aead.NonceSize()+b.aead.Overhead() {
		return nil, ErrOpen
	}
	n := b.aead.NonceSize()
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], context)
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}
