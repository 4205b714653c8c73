// Package platformaudit runs the platform's audits (DESIGN.md §8): on a
// schedule, the platform's own account rents an idle GPU of each offer
// through the ordinary renter path (rentals.Service.Rent, exactly as a
// renter's rental), the platform image's verifier runs at the
// container's start and posts its result (witness.Service.Submit records
// it as platform-audited), and the rental is released once the result
// came or its deadline passed.
//
// Money: the audit account's wallet pays for its rentals like any
// renter's, so the provider is paid for the GPU time as usual; the
// platform funds that wallet with a promotional credit (a ledger
// transaction from the platform's promotion account, balanced like every
// other), just enough for the next rental to start. Nothing is created
// or lost. The audit rental is an ordinary one on the standard SLA tier:
// a real outage during it is credited as for anyone.
package platformaudit

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/billing"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/witnessstore"
	"suanli/offers"
	"suanli/pricing"
	"suanli/rentals"
)

// Email is the platform audit account's address (a reserved domain: no
// mail is ever delivered to it).
const Email = "platform-audit@audit.suanli.invalid"

// Defaults of Service.
const (
	// DefaultEvery: each offer is audited about once a day.
	DefaultEvery = 24 * time.Hour
	// DefaultDeadline: an audit rental whose verifier has not posted in
	// this long is released and recorded as timed out.
	DefaultDeadline = 10 * time.Minute
	// DefaultPerPass bounds how many audits one pass starts.
	DefaultPerPass = 3
)

// Service runs audit passes.
type Service struct {
	DB       *models.DB
	Rentals  *rentals.Service
	Accounts *accounts.Service
	// Every, Deadline and PerPass: see the defaults.
	Every, Deadline time.Duration
	PerPass         int
}

// PassResult is what one pass did.
type PassResult struct {
	Started, TimedOut, Released, Skipped int
}

// Pass ends the audits whose deadline passed, releases the rentals of
// ended audits, and starts audits of the offers that are due.
func (s *Service) Pass(ctx context.Context) (PassResult, error) {
	var res PassResult
	now := s.DB.Now().UTC()
	expired, err := witnessstore.ExpiredAudits(ctx, s.DB, now)
	if err != nil {
		return res, err
	}
	for _, a := range expired {
		ok, err := witnessstore.FinishAuditRun(ctx, s.DB, a.ID, witnessstore.AuditTimedOut, "the verifier posted no result before the deadline", now)
		if err != nil {
			return res, err
		}
		if ok {
			res.TimedOut++
		}
	}
	u, org, m, err := s.account(ctx)
	if err != nil {
		return res, err
	}
	done, err := witnessstore.AuditRentalsToRelease(ctx, s.DB, org.ID)
	if err != nil {
		return res, err
	}
	for _, id := range done {
		if _, err := s.Rentals.Release(ctx, id, true); err != nil {
			slog.Warn("releasing an audit rental", "rental", id, "err", err)
			continue
		}
		res.Released++
	}
	due, err := witnessstore.AuditCandidates(ctx, s.DB, now.Add(-cmp.Or(s.Every, DefaultEvery)), cmp.Or(s.PerPass, DefaultPerPass))
	if err != nil || len(due) == 0 {
		return res, err
	}
	for _, o := range due {
		started, err := s.start(ctx, u, org, m, o)
		if err != nil {
			return res, err
		}
		if started {
			res.Started++
		} else {
			res.Skipped++
		}
	}
	return res, nil
}

// start rents one GPU of the offer for an audit. An offer that cannot be
// rented now (no idle GPU, no image) is recorded as a failed audit, so
// that it waits Every like an audited one instead of being tried each
// pass; only errors of the database stop the pass.
func (s *Service) start(ctx context.Context, u *models.User, org *models.Org, m *models.Membership, o models.Offer) (bool, error) {
	now := s.DB.Now().UTC()
	run := witnessstore.AuditRun{OfferID: o.ID, Status: witnessstore.AuditRunning, StartedAt: now, Deadline: now.Add(cmp.Or(s.Deadline, DefaultDeadline))}
	if err := witnessstore.InsertAuditRun(ctx, s.DB, &run); err != nil {
		return false, err
	}
	fail := func(reason string) (bool, error) {
		_, err := witnessstore.FinishAuditRun(ctx, s.DB, run.ID, witnessstore.AuditFailed, reason, now)
		return false, err
	}
	if err := s.fund(ctx, org.ID, o, now); err != nil {
		return false, err
	}
	key, err := throwawayKey()
	if err != nil {
		return false, err
	}
	r, err := s.Rentals.Rent(ctx, u, org, m, rentals.RentInput{OrgID: org.ID, OfferID: o.ID, GPUs: 1, SLA: pricing.Tiers[0].Name,
		Term: pricing.OnDemand, SSHPublicKey: key})
	if err != nil {
		if _, ok := apperr.As(err); ok {
			// The renter's answer (no free GPU, no image offered …):
			// nothing to audit now.
			slog.Info("audit: the offer cannot be rented now", "offer", o.ID, "err", err)
			return fail(err.Error())
		}
		return false, err
	}
	// The run names its rental before the verifier can post (it starts
	// only once the rental is provisioned), so the result counts as the
	// audit's.
	if err := witnessstore.SetAuditRental(ctx, s.DB, run.ID, r.ID); err != nil {
		return false, err
	}
	slog.Info("audit started", "offer", o.ID, "rental", r.ID, "run", run.ID)
	return true, nil
}

// fund gives, in one transaction, the audit wallet what the offer's next
// rental needs to start (an hour of one GPU), from the platform's
// promotion account: the platform pays for its own audits.
func (s *Service) fund(ctx context.Context, orgID int64, o models.Offer, now time.Time) error {
	need, err := offers.StartNeeds(o, 1, pricing.OnDemand, pricing.Tiers[0], false, now)
	if err != nil {
		return err
	}
	bal, err := ledger.WalletBalance(ctx, s.DB, orgID)
	if err != nil {
		return err
	}
	if bal >= need {
		return nil
	}
	return s.DB.Tx(ctx, func(tx *gorm.DB) error {
		return billing.CreditPromo(tx, orgID, need-bal, "audit_funding", fmt.Sprintf("platform audit of offer %d", o.ID), nil, nil, now)
	})
}

// account is the platform audit account, its personal organisation and
// membership, made the first time (idempotent: found by its address).
func (s *Service) account(ctx context.Context) (*models.User, *models.Org, *models.Membership, error) {
	u, err := s.DB.UserByEmail(ctx, Email)
	if apperr.Code(err) == apperr.ENOTFOUND {
		pw := make([]byte, 24)
		if _, err := rand.Read(pw); err != nil {
			return nil, nil, nil, err
		}
		// A password nobody knows: the account is never logged in to.
		u, err = s.Accounts.CreateUser(ctx, Email, fmt.Sprintf("%x", pw), "Suanli platform audit", false)
		if apperr.Code(err) == apperr.ECONFLICT || ledger.IsUniqueViolation(err) {
			u, err = s.DB.UserByEmail(ctx, Email) // made by another process meanwhile
		}
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("the platform audit account: %w", err)
	}
	var orgID int64
	if err := s.DB.Tx(ctx, func(tx *gorm.DB) error {
		var err error
		orgID, err = models.PersonalOrgOf(tx, u.ID)
		return err
	}); err != nil {
		return nil, nil, nil, err
	}
	org, err := s.DB.OrgByID(ctx, orgID)
	if err != nil {
		return nil, nil, nil, err
	}
	m, err := s.DB.MembershipOf(ctx, orgID, u.ID)
	if err != nil {
		return nil, nil, nil, err
	}
	if m == nil {
		return nil, nil, nil, errors.New("the platform audit account is not a member of its organisation")
	}
	return u, org, m, nil
}

// throwawayKey is an SSH public key whose private half is thrown away:
// an audit rental is never logged in to.
func throwawayKey() (string, error) {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", err
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))) + " suanli-audit", nil
}
