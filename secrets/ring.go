package secrets

import (
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Ring seals with one current key and opens with it or any older one, so
// that a key can be rotated: configure the new key as current and keep
// the old one as old until Reseal has run over every stored value.
// Its sealed values name their key ("k.<id>." before Box's format), so
// opening never has to try every key.
type Ring struct {
	purpose string
	current keyed
	old     []keyed
}

type keyed struct {
	id  string
	box *Box
}

func keyedBox(k *Key, purpose string) keyed {
	id, err := hkdf.Key(sha256.New, k.master, nil, "suanli "+purpose+" key id", 4)
	if err != nil {
		panic(err)
	}
	return keyed{id: hex.EncodeToString(id), box: k.Box(purpose)}
}

// NewRing returns the ring of a purpose: current seals, current and old open.
func NewRing(purpose string, current *Key, old ...*Key) *Ring {
	r := &Ring{purpose: purpose, current: keyedBox(current, purpose)}
	for _, k := range old {
		r.old = append(r.old, keyedBox(k, purpose))
	}
	return r
}

// KeyID names the current key as sealed values name it.
func (r *Ring) KeyID() string { return r.current.id }

// Seal encrypts plaintext bound to context under the current key.
func (r *Ring) Seal(plaintext, context []byte) string {
	return "k." + r.current.id + "." + r.current.box.Seal(plaintext, context)
}

// Open decrypts what Seal made for the same context under the current
// key or an old one; anything else is ErrOpen.
func (r *Ring) Open(sealed string, context []byte) ([]byte, error) {
	rest, ok := strings.CutPrefix(sealed, "k.")
	if !ok {
		return nil, ErrOpen
	}
	id, inner, ok := strings.Cut(rest, ".")
	if !ok {
		return nil, ErrOpen
	}
	for _, k := range append([]keyed{r.current}, r.old...) {
		if k.id == id {
			return k.box.Open(inner, context)
		}
	}
	return nil, ErrOpen
}

// Current reports whether sealed was sealed under the current key: what
// Reseal need not touch.
func (r *Ring) Current(sealed string) bool {
	return strings.HasPrefix(sealed, "k."+r.current.id+".")
}

// Reseal opens sealed (under any of the ring's keys) and seals it again
// under the current key; a value already under it is returned unchanged.
func (r *Ring) Reseal(sealed string, context []byte) (string, error) {
	if r.Current(sealed) {
		return sealed, nil
	}
	plain, err := r.Open(sealed, context)
	if err != nil {
		return "", err
	}
	return r.Seal(plain, context), nil
}

// Digest is a keyed digest (HMAC-SHA256, hex) of data under the current
// key: a blind index, so that a table can find "the same ID number" —
// one person, one verified account — without holding the number. A
// rotation changes every digest: Reseal's caller computes them again.
func (r *Ring) Digest(data []byte) string { return r.current.digest(data) }

// Digests is data's keyed digest under every key of the ring, the
// current key's first: while old keys are kept (a rotation whose Reseal
// has not run), a blind index written under an old key is still found
// by one of them, and a code digested before the rotation still matches.
func (r *Ring) Digests(data []byte) []string {
	out := []string{r.current.digest(data)}
	for _, k := range r.old {
		out = append(out, k.digest(data))
	}
	return out
}

func (k keyed) digest(data []byte) string {
	m := k.box.NewMAC()
	m.Write(data)
	return hex.EncodeToString(m.Sum(nil))
}
