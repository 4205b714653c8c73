// Package apperr defines the application's error codes. Domain code returns
// an *Error with a code; the web layer maps codes to HTTP statuses once, at
// the edge (the idea of wtf's error.go).
package apperr

import (
	"errors"
	"fmt"
	"strings"
	"suanli/locales"
)

// Error codes. Each maps to exactly one HTTP status in web/errors.go.
const (
	EINVALID   = "invalid"   // bad input: 400 (API) or 422 (forms)
	ENOTFOUND  = "not_found" // 404
	ECONFLICT  = "conflict"  // 409
	EFORBIDDEN = "forbidden" // 403
	// EUNAUTHORIZED: no or bad credentials on the API: 401. The code is
	// spelt as the API's documents spell it (issue 19).
	EUNAUTHORIZED = "unauthorised"
	// EINSUFFICIENTFUNDS: the wallet's balance is below what a start
	// needs (an hour ahead on demand, a term's price): 402. A spending
	// limit is EFORBIDDEN. It refines ECONFLICT (General).
	EINSUFFICIENTFUNDS = "insufficient_funds"
	// ENOCAPACITY: a launch by instance type found no listed offer with
	// enough free GPUs: 409. It refines ECONFLICT.
	ENOCAPACITY = "no_capacity"
	// EOFFERTAKEN: the offer (or the node holding the rental's files)
	// has fewer free GPUs than asked: someone took them first: 409. It
	// refines ECONFLICT.
	EOFFERTAKEN = "offer_taken"
	// EIMAGEINCOMPATIBLE: the image cannot run on the offer: its CUDA
	// runtime needs a newer driver than the node's, or the offer does not
	// allow it: 422. It refines EINVALID (on the field "image").
	EIMAGEINCOMPATIBLE = "image_incompatible"
	// EREALNAMEREQUIRED: renting (not paid entirely from trial credit)
	// needs real-name verification (实名认证) the user has not done: 403.
	// It refines EFORBIDDEN.
	EREALNAMEREQUIRED = "real_name_required"
	// ERATELIMIT: too many attempts: 429.
	ERATELIMIT = "rate_limited"
	// EUNAVAILABLE: a provider we depend on did not answer: 503.
	EUNAVAILABLE = "unavailable"
	// EMALFORMED: a request that is not well-formed text wherever it is
	// (a NUL character, bytes that are not UTF-8): 400, API and pages.
	EMALFORMED = "malformed"
	// ETOOLARGE: a request body over its route's limit: 413.
	ETOOLARGE = "too_large"
	EINTERNAL = "internal" // 500; never carries details to the client
)

// Error is a domain error with a machine-readable code, a message safe to
// show a user, and optionally the input field it concerns.
type Error struct {
	Code    string
	Message string
	// Field names the query or form parameter at fault, when there is one.
	Field string
	// Key and Args let pages show Message in the reader's language: Key is
	// a message-catalog key whose English text is Message.
	Key  string
	Args []any
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Message)
	}
	return e.Code + ": " + e.Message
}

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid returns an EINVALID error about one input field.
func Invalid(field, message string) *Error {
	return &Error{Code: EINVALID, Field: field, Message: message}
}

// NotFound returns an ENOTFOUND error for the thing described.
func NotFound(what string) *Error {
	return &Error{Code: ENOTFOUND, Message: what + " not found"}
}

// Code returns the code of err if it is (or wraps) an *Error, else EINTERNAL.
func Code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// General is the general code a typed code refines (insufficient_funds,
// no_capacity and offer_taken are conflicts, image_incompatible is bad
// input), and any other code itself: code that only tells a conflict from
// bad input (a page that shows the refusal beside its form, a pass that
// waits on a conflict) branches on General, a launcher on the code.
func General(code string) string {
	switch code {
	case EINSUFFICIENTFUNDS, ENOCAPACITY, EOFFERTAKEN:
		return ECONFLICT
	case EIMAGEINCOMPATIBLE:
		return EINVALID
	case EREALNAMEREQUIRED:
		return EFORBIDDEN
	}
	return code
}

// As returns the *Error inside err, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Fields is a form's list of problems, one per field at most. The market
// and accounts return it so that a page can show each message beside its
// field; as a plain error it reads as its first problem (errors.As finds
// that *Error through Unwrap), so a JSON API answers with it.
type Fields []*Error

func (f Fields) Error() string {
	parts := make([]string, len(f))
	for i, e := range f {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

// Unwrap returns the problems, first first.
func (f Fields) Unwrap() []error {
	out := make([]error, len(f))
	for i, e := range f {
		out[i] = e
	}
	return out
}

// OrNil returns nil when there is no problem, else f.
func (f Fields) OrNil() error {
	if len(f) == 0 {
		return nil
	}
	return f
}

// Field returns an EINVALID error about one input field, with its message
// key and arguments (the English text is the message, for logs and the
// API; pages say the key in the reader's language).
func Field(field, key string, args ...any) *Error {
	return FieldCode(EINVALID, field, key, args...)
}

// FieldCode is Field with another code than EINVALID: a typed refusal
// about one input field (EIMAGEINCOMPATIBLE on "image", say).
func FieldCode(code, field, key string, args ...any) *Error {
	return &Error{Code: code, Field: field, Key: key, Args: args, Message: locales.T(locales.EN, key, args...)}
}
