package apperr

import (
	"strings"
	"unicode/utf8"
)

// Storable reports whether s is text PostgreSQL can store: valid UTF-8
// without a NUL character. Anything else a request carries is refused
// with Malformed before it reaches a query.
func Storable(s string) bool {
	return utf8.ValidString(s) && !strings.Contains(s, "\x00")
}

// Malformed is the answer to text that is not Storable, in param ("path",
// "body" or a parameter's name; at most 64 characters of it, made
// printable, since the name may be what is wrong).
func Malformed(param string) *Error {
	p := []rune{}
	for _, r := range param {
		if len(p) == 64 {
			break
		}
		if r == utf8.RuneError || r < 0x20 || r == 0x7f {
			r = '?'
		}
		p = append(p, r)
	}
	return &Error{Code: EMALFORMED, Field: string(p), Key: "request.err.malformed",
		Message: "the request holds a NUL character or bytes that are not UTF-8 text"}
}
