package cnid

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

// Valid resident IDs: the standard's own example and numbers whose check
// characters were computed by hand from the weights.
var validIDs = []string{"11010519491231002X", "510107199003071236", "440304198812125416", "510124200001010036"}

func TestResidentIDAcceptsValidNumbers(t *testing.T) {
	for _, id := range validIDs {
		got, err := ResidentID(id, now)
		if err != nil || got != id {
			t.Errorf("ResidentID(%q) = %q, %v; want it accepted", id, got, err)
		}
	}
}

func TestResidentIDLowercaseCheckCharacterIsNormalised(t *testing.T) {
	got, err := ResidentID(" 11010519491231002x ", now)
	if err != nil || got != "11010519491231002X" {
		t.Fatalf("got %q, %v; want the X upper-cased and accepted", got, err)
	}
}

// Changing any one character of a valid number is caught: GB 11643's
// check digit detects every single-character substitution.
func TestResidentIDEveryAlteredCharacterIsRefused(t *testing.T) {
	for _, id := range validIDs {
		for i := range 18 {
			for _, c := range "0123456789X" {
				if byte(c) == id[i] || (c == 'X' && i < 17) {
					continue
				}
				alt := id[:i] + string(c) + id[i+1:]
				if _, err := ResidentID(alt, now); err == nil {
					t.Errorf("ResidentID(%q) accepted (altered position %d of %s)", alt, i, id)
				}
			}
		}
	}
}

func TestResidentIDRefusals(t *testing.T) {
	for _, c := range []struct {
		name, id string
		want     error
	}{
		{"17 characters", "11010519491231002", ErrLength},
		{"19 characters", "11010519491231002X1", ErrLength},
		{"15-digit old format", "110105491231002", ErrLength},
		{"empty", "", ErrLength},
		{"letter inside", "1101051949123100AX", ErrCharacter},
		{"X not last", "X10105194912310021", ErrCharacter},
		{"full-width digit", "１1010519491231002", ErrLength},
		{"no such province", "99010519491231002X", ErrRegion},
		{"13th month", "110105194913310026", ErrBirthDate},
		{"30 February", "110105200002300026", ErrBirthDate},
		{"born in the future", "110105203001010020", ErrBirthDate},
		{"born before 1900", "110105189901010020", ErrBirthDate},
		{"wrong check digit", "110105194912310021", ErrCheck},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ResidentID(c.id, now); !errors.Is(err, c.want) {
				t.Errorf("ResidentID(%q) = %v, want %v", c.id, err, c.want)
			}
		})
	}
}

// Valid credit codes: the standard's example (91350100M000100Y43) and
// codes whose check characters were computed from the weights.
var validCodes = []string{"91350100M000100Y43", "91510100MA6CFC8W34", "12100000400000624D"}

func TestCreditCodeAcceptsValidCodes(t *testing.T) {
	for _, code := range validCodes {
		if got, err := CreditCode(code); err != nil || got != code {
			t.Errorf("CreditCode(%q) = %q, %v; want it accepted", code, got, err)
		}
	}
}

func TestCreditCodeLowercaseIsNormalised(t *testing.T) {
	got, err := CreditCode("12100000400000624d")
	if err != nil || got != "12100000400000624D" {
		t.Fatalf("got %q, %v; want the check character upper-cased and accepted", got, err)
	}
}

func TestCreditCodeEveryAlteredCharacterIsRefused(t *testing.T) {
	for _, code := range validCodes {
		for i := range 18 {
			for _, c := range creditAlphabet {
				if byte(c) == code[i] {
					continue
				}
				alt := code[:i] + string(c) + code[i+1:]
				if _, err := CreditCode(alt); err == nil {
					t.Errorf("CreditCode(%q) accepted (altered position %d of %s)", alt, i, code)
				}
			}
		}
	}
}

func TestCreditCodeRefusals(t *testing.T) {
	for _, c := range []struct {
		name, code string
		want       error
	}{
		{"17 characters", "91350100M000100Y4", ErrLength},
		{"19 characters", "91350100M000100Y430", ErrLength},
		{"letter I", "91350100I000100Y43", ErrCharacter},
		{"letter O", "91350100O000100Y43", ErrCharacter},
		{"check character S", "91350100M000100Y4S", ErrCharacter},
		{"punctuation", "91350100M-00100Y43", ErrCharacter},
		{"wrong check", "91350100M000100Y44", ErrCheck},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := CreditCode(c.code); !errors.Is(err, c.want) {
				t.Errorf("CreditCode(%q) = %v, want %v", c.code, err, c.want)
			}
		})
	}
}

func TestMask(t *testing.T) {
	for in, want := range map[string]string{
		"510107199003071236": "5101**********1236",
		"13800138000":        "1380***8000",
		"12345678":           "*******8",
		"":                   "",
	} {
		if got := Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
		if in != "" && strings.Contains(Mask(in), in[4:len(in)-4]) && len(in) > 8 && in[4:len(in)-4] != strings.Repeat("*", len(in)-8) {
			t.Errorf("Mask(%q) shows its middle", in)
		}
	}
}
