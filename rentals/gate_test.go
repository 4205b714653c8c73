package rentals_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"suanli/apperr"
	"suanli/config"
	"suanli/dbtest"
	"suanli/identity"
	"suanli/interruptions"
	"suanli/locales"
	"suanli/models"
	"suanli/pricing"
	"suanli/rentals"
)

// The rent gate (issue 21) beyond the first rent: every user action that
// spends the organisation's money anew — a start, a switch or resize, a
// raised bid, a resume, a term's renewal — asks it, so that a renter who
// rented on the trial credit cannot stop, top up cash and go on
// unverified.

// gated puts the real rent gate (identity.Service, real-name verification
// required) in front of the rig's rentals and returns it.
func (r *rig) gated() *identity.Service {
	r.t.Helper()
	g := &identity.Service{DB: r.db, Mode: config.RealNameRequired}
	r.rentals.Gate = g
	return g
}

// payCash pays cash into the renter's wallet: a bank transfer that a
// platform admin confirms.
func (r *rig) payCash(fen int64) {
	r.t.Helper()
	admin, err := r.accounts.CreateUser(r.ctx, "cashier@example.com", "cashier-pass-2026", "Cashier", true)
	if err != nil {
		r.t.Fatal(err)
	}
	tp, _, err := r.wallet.StartTopup(r.ctx, r.user, r.org.ID, fen, models.MethodBank, "en")
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.wallet.ConfirmBankTransfer(r.ctx, admin, tp.ID, fen); err != nil {
		r.t.Fatal(err)
	}
}

// realNameRequired fails the test unless err is the gate's refusal.
func realNameRequired(t *testing.T, what string, err error) {
	t.Helper()
	if ae, ok := apperr.As(err); !ok || ae.Code != apperr.EREALNAMEREQUIRED || ae.Field != identity.FieldRealName {
		t.Errorf("%s: %v, want real_name_required", what, err)
	}
}

// A stopped rental rented on the trial credit does not go back to
// provisioning through a switch or resize once cash was paid in, unless
// its renter is verified; the refused change moves nothing.
func TestGateRefusesAChangeOfAStoppedRental(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{})
		gate := r.gated()
		o := r.rtxOffer()
		r.startAgent(o.NodeID)
		r.waitReady(o.NodeID)
		rt := r.mustRent(o.ID, 1) // the promotional credit only: allowed
		r.waitStatus(rt.ID, models.RentalRunning)
		r.stop(rt.ID)
		r.payCash(10_000)
		before, charged := r.rental(rt.ID), r.walletSum(rt.ID)

		_, err := r.rentals.Change(r.ctx, r.user, r.org, r.member, rt.ID, rentals.ChangeInput{GPUs: 2})
		realNameRequired(t, "an unverified renter's resize of a stopped rental", err)
		_, err = r.rentals.Start(r.ctx, r.user, r.org, rt.ID, rentals.StartInput{})
		realNameRequired(t, "an unverified renter's start", err)
		after := r.rental(rt.ID)
		if after.Status != models.RentalStopped || after.GPUs != 1 || after.OfferID != o.ID || after.Attempts != before.Attempts ||
			len(r.heldGPUs(rt.ID)) != 0 || r.walletSum(rt.ID) != charged {
			t.Fatalf("after the refused change: %s, %d GPUs of offer %d, attempt %d, %d GPUs held, charged %d; want it as it was (stopped, 1 GPU of %d, attempt %d, none held, %d)",
				after.Status, after.GPUs, after.OfferID, after.Attempts, len(r.heldGPUs(rt.ID)), -r.walletSum(rt.ID), o.ID, before.Attempts, -charged)
		}

		if err := gate.VerifyByOperator(r.ctx, r.user); err != nil {
			t.Fatal(err)
		}
		if _, err := r.rentals.Change(r.ctx, r.user, r.org, r.member, rt.ID, rentals.ChangeInput{GPUs: 2}); err != nil {
			t.Fatalf("a verified renter's resize: %v", err)
		}
		if got := r.waitStatus(rt.ID, models.RentalRunning); got.GPUs != 2 {
			t.Errorf("resized rental runs with %d GPUs, want 2", got.GPUs)
		}
		r.checkLedger()
	})
}

// An interrupted bid whose unverified renter paid cash in meanwhile may
// neither raise its bid nor resume: the resume pass stops it and mails its
// renter why, instead of trying it again on every pass.
func TestGateStopsAnInterruptedRentalOfAnUnverifiedRenter(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{})
		r.gated()
		r.quiet()
		o := r.bidNode(300)
		bid := r.mustRent(o.ID, 1, withBid(320))
		r.waitStatus(bid.ID, models.RentalRunning)
		on := r.mustRent(o.ID, 1)
		r.waitStatus(bid.ID, models.RentalInterrupted)
		r.waitStatus(on.ID, models.RentalRunning)
		r.payCash(10_000)

		_, err := r.rentals.RaiseBid(r.ctx, r.user, r.org, r.member, bid.ID, 400)
		realNameRequired(t, "an unverified renter's raise", err)
		if got := r.rental(bid.ID); *got.BidPerGPUHourFen != 320 {
			t.Errorf("after the refused raise the bid is %d fen, want 320", *got.BidPerGPUHourFen)
		}
		r.stop(on.ID) // its GPU is free: only the gate keeps the bid from resuming
		pass := &interruptions.Service{Rentals: r.rentals}
		if n, err := pass.Pass(r.ctx); err != nil || n != 0 {
			t.Fatalf("the resume pass resumed %d (%v), want none", n, err)
		}
		got := r.rental(bid.ID)
		if got.Status != models.RentalStopped || got.StopReason != interruptions.StopNotAllowed {
			t.Fatalf("the unverified renter's interrupted rental is %s (stop reason %q), want stopped: %s; timeline:%s",
				got.Status, got.StopReason, interruptions.StopNotAllowed, r.timeline(bid.ID))
		}
		lang := r.user.MailLang()
		var mails []models.OutboxMail
		if err := db.R.Where("to_addr = ? AND subject = ?", r.user.Email,
			locales.T(lang, "bids.mail.not_resumed.subject", fmt.Sprint(bid.ID))).Find(&mails).Error; err != nil {
			t.Fatal(err)
		}
		if want := locales.T(lang, "realname.err.required"); len(mails) != 1 || !strings.Contains(mails[0].Body, want) {
			t.Errorf("%d not-resumed mails %+v, want one saying %q", len(mails), mails, want)
		}
		r.checkLedger()
	})
}

// A term's renewal is a new purchase: with cash paid in since the term
// was rented on the trial credit, an unverified renter's term ends at its
// end instead of renewing, and nothing more is charged.
func TestGateEndsATermItRefusesToRenew(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r := newRig(t, db, rigOptions{SilentAfter: 365 * 24 * time.Hour})
		r.gated()
		o := r.rtxOffer()
		r.startAgent(o.NodeID)
		r.waitReady(o.NodeID)
		rt := r.mustRent(o.ID, 1, func(in *rentals.RentInput) { in.Term, in.AutoRenew = pricing.Week, true })
		run := r.waitStatus(rt.ID, models.RentalRunning)
		r.quiet()
		r.payCash(10_000)
		r.clock.Set(run.EndsAt.Add(time.Second))
		res, err := r.rentals.Watch(r.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Renewed != 0 {
			t.Errorf("health pass %+v: the unverified renter's term renewed", res)
		}
		over := r.waitStatus(rt.ID, models.RentalStopped)
		if n := len(r.txns(rt.ID)); n != 1 || over.StopReason != rentals.StopTermEnded || len(r.heldGPUs(rt.ID)) != 0 {
			t.Errorf("refused renewal: %d transactions, stop reason %q, %d GPUs held; want the one term charge, %q, none held",
				n, over.StopReason, len(r.heldGPUs(rt.ID)), rentals.StopTermEnded)
		}
		r.checkLedger()
	})
}
