package rentercli

import (
	"context"
	"errors"
	"net/http"
	"time"

	"suanli/apiclient"
)

// waitRunning reads the rental every pollEvery (GET
// /api/v1/rentals/{id}) until it runs, showing where it is on standard
// error, and returns it with the answer's body. A rental that fails, or
// ends otherwise, while waited for is exit 9; Ctrl-C is exit 130 (the
// rental goes on); no answer in timeout is exit 1.
func (a *app) waitRunning(c *apiclient.ClientWithResponses, id int, timeout time.Duration) (*apiclient.Rental, []byte, error) {
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
		r := res.JSON200
		if r == nil {
			return nil, nil, a.errorf(ExitError, "cli.err.unexpected", "GET /api/v1/rentals/{id}")
		}
		switch r.State {
		case apiclient.RentalStateRunning:
			p.done()
			return r, res.Body, nil
		case apiclient.RentalStateFailed:
			p.done()
			return r, res.Body, a.errorf(ExitRentalFailed, "cli.err.rental_failed", id, failureOf(r))
		case apiclient.RentalStateStopped, apiclient.RentalStateReleased, apiclient.RentalStateInterrupted:
			p.done()
			return r, res.Body, a.errorf(ExitRentalFailed, "cli.err.rental_ended", id, a.stateWord(string(r.State)), r.StatusMessage)
		}
		p.show(a.progressLine(r))
		if time.Now().After(deadline) {
			p.done()
			return r, res.Body, a.errorf(ExitError, "cli.err.wait_timeout", id, timeout, a.stateWord(string(r.State)))
		}
		select {
		case <-a.ctx.Done():
			p.done()
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
