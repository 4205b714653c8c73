package rentercli

import (
	"context"
	"errors"
	"net/http"
)

// Exit codes, one per class of error, so that a script can act on what
// went wrong without reading the message. They are a public contract
// (docs/cli.md, `suanli help`): a code never changes its meaning.
const (
	ExitOK                = 0   // done
	ExitError             = 1   // anything else: the server unreachable or failing, an unexpected answer
	ExitUsage             = 2   // the command line is wrong: unknown command or flag, missing argument
	ExitUnauthorised      = 3   // not logged in, or the token is wrong, expired or revoked
	ExitInsufficientFunds = 4   // the wallet cannot pay for it
	ExitNoCapacity        = 5   // no GPUs free for it (no_capacity), or the offer went meanwhile (offer_taken)
	ExitNotFound          = 6   // no such rental, offer, volume, image or order (or not yours)
	ExitRateLimited       = 7   // still over the rate limit after waiting Retry-After a few times
	ExitImageIncompatible = 8   // the image cannot run there (e.g. it needs a newer CUDA driver)
	ExitRentalFailed      = 9   // the rental failed while the command waited for it
	ExitInvalid           = 10  // the server refused a value (the message names the field)
	ExitForbidden         = 11  // the token may not do that (another organisation's, not an admin)
	ExitConflict          = 12  // the rental or volume is not in a state that allows it
	ExitInterrupted       = 130 // interrupted (Ctrl-C) while waiting; what was started goes on
)

// exitCodes documents the table for `suanli help` (in this order).
var exitCodes = []struct {
	code int
	key  string
}{
	{ExitOK, "cli.exit.ok"},
	{ExitError, "cli.exit.error"},
	{ExitUsage, "cli.exit.usage"},
	{ExitUnauthorised, "cli.exit.unauthorised"},
	{ExitInsufficientFunds, "cli.exit.insufficient_funds"},
	{ExitNoCapacity, "cli.exit.no_capacity"},
	{ExitNotFound, "cli.exit.not_found"},
	{ExitRateLimited, "cli.exit.rate_limited"},
	{ExitImageIncompatible, "cli.exit.image_incompatible"},
	{ExitRentalFailed, "cli.exit.rental_failed"},
	{ExitInvalid, "cli.exit.invalid"},
	{ExitForbidden, "cli.exit.forbidden"},
	{ExitConflict, "cli.exit.conflict"},
	{ExitInterrupted, "cli.exit.interrupted"},
}

// cliError is an error with its exit code and a message already in the
// reader's language.
type cliError struct {
	code int
	msg  string
}

func (e *cliError) Error() string { return e.msg }

// apiError is the server's error answer: the one error shape
// {"error":{"code","message","param"}} and the HTTP status.
type apiError struct {
	status  int
	code    string
	message string
	param   string
}

func (e *apiError) Error() string {
	if e.param != "" {
		return e.message + " (" + e.param + ")"
	}
	return e.message
}

// exitCodeFor maps an API error to its exit code: by the error's code
// first (the typed errors a launcher acts on), else by the HTTP status.
func exitCodeFor(e *apiError) int {
	switch e.code {
	case "unauthorised", "unauthorized":
		return ExitUnauthorised
	case "insufficient_funds":
		return ExitInsufficientFunds
	case "no_capacity", "offer_taken":
		return ExitNoCapacity
	case "not_found":
		return ExitNotFound
	case "rate_limited":
		return ExitRateLimited
	case "image_incompatible":
		return ExitImageIncompatible
	case "invalid", "malformed", "too_large":
		return ExitInvalid
	case "forbidden":
		return ExitForbidden
	case "conflict":
		return ExitConflict
	}
	switch e.status {
	case http.StatusUnauthorized:
		return ExitUnauthorised
	case http.StatusPaymentRequired:
		return ExitInsufficientFunds
	case http.StatusNotFound:
		return ExitNotFound
	case http.StatusTooManyRequests:
		return ExitRateLimited
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusRequestEntityTooLarge:
		return ExitInvalid
	case http.StatusForbidden:
		return ExitForbidden
	case http.StatusConflict:
		return ExitConflict
	}
	return ExitError
}

// exitCodeOf is the exit code of the error a command returned.
func exitCodeOf(err error) int {
	var ce *cliError
	var ae *apiError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ce):
		return ce.code
	case errors.As(err, &ae):
		return exitCodeFor(ae)
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	}
	return ExitError
}
