package rentercli

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"suanli/apiclient"
)

// waitRunning waits (pollRental) until the rental runs. One that ends
// otherwise while waited for is exit 9, as one that fails.
func (a *app) waitRunning(c *apiclient.ClientWithResponses, id int, timeout time.Duration) (*apiclient.Rental, []byte, error) {
	return a.pollRental(c, id, timeout, func(r *apiclient.Rental) (bool, error) {
		switch r.State {
		case apiclient.RentalStateRunning:
			return true, nil
		case apiclient.RentalStateStopped, apiclient.RentalStateReleased, apiclient.RentalStateInterrupted:
			return true, a.errorf(ExitRentalFailed, "cli.err.rental_ended", id, a.stateWord(string(r.State)), r.StatusMessage)
		}
		return false, nil
	})
}

// waitStatus waits (pollRental) until the rental's status is one of want
// (a stop or a release taking effect on the node).
func (a *app) waitStatus(c *apiclient.ClientWithResponses, id int, timeout time.Duration, want ...apiclient.RentalState) (*apiclient.Rental, []byte, error) {
	return a.pollRental(c, id, timeout, func(r *apiclient.Rental) (bool, error) {
		return slices.Contains(want, r.State), nil
	})
}

// pollRental reads the rental every pollEvery (GET
// /api/v1/rentals/{id}), showing where it is on standard error, until
// settled says it is (with the error to end with, if any), and returns
// it with the answer's body. A rental that fails while waited for is
// exit 9; Ctrl-C is exit 130 (the rental goes on); no answer in timeout
// is exit 1.
func (a *app) pollRental(c *apiclient.ClientWithResponses, id int, timeout time.Duration, settled func(*apiclient.Rental) (bool, error)) (*apiclient.Rental, []byte, error) {
	p := newProgress(a.stderr, isTerminal(a.stderr))
	defer p.done()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(a.pollEvery)
	defer tick.Stop()
	for {
		res, err := c.GetRentalWithResponse(a.ctx, apiclient.Id(id))
		if err := a.answer(err, res, http.StatusOK); err != nil {
			if errors.Is(err, context.Canceled) {
				return nil, nil, a.errorf(ExitInterrupted, "cli.err.wait_interrupted", id)
			}
			return nil, nil, err
		}
		r := res.JSON200 // answer has checked it is there
		if r.State == apiclient.RentalStateFailed {
			return r, res.Body, a.errorf(ExitRentalFailed, "cli.err.rental_failed", id, failureOf(r))
		}
		if done, err := settled(r); done {
			return r, res.Body, err
		}
		p.show(a.progressLine(r))
		if time.Now().After(deadline) {
			return r, res.Body, a.errorf(ExitError, "cli.err.wait_timeout", id, timeout, a.stateWord(string(r.State)))
		}
		select {
		case <-a.ctx.Done():
			return nil, nil, a.errorf(ExitInterrupted, "cli.err.wait_interrupted", id)
		case <-tick.C:
		}
	}
}

// progressLine says where a rental on its way is: its state in words,
// and what the API says about the step (status_message: the image
// pull's progress, a node tried again, a silent node).
func (a *app) progressLine(r *apiclient.Rental) string {
	line := a.T("cli.progress.line", r.Id, a.stateWord(string(r.State)))
	if r.StatusMessage != "" {
		line += a.T("cli.progress.sep") + r.StatusMessage
	}
	return line
}

// failureOf is why a rental failed, as the API says it.
func failureOf(r *apiclient.Rental) string {
	if r.StatusMessage != "" {
		return r.StatusMessage
	}
	if r.Failure != nil {
		return *r.Failure
	}
	return ""
}

// stateWord is a rental's state in the reader's language (the API's word
// when the catalogue has none).
func (a *app) stateWord(state string) string { return a.word("cli.status.", state) }
