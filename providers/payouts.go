package providers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/audit"
	"suanli/locales"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/supply"
	"suanli/payments"
	"suanli/pricing"
	"suanli/rentals"
)

// Payouts pays providers their payable balance: monthly payouts by Stripe
// Connect transfer or bank transfer, and Connect onboarding.
//
// A provider's payable account (kind provider_payable, keyed by provider
// id) is credited with every on-demand charge and, as terms run, with what
// they have earned (prepaid terms wait in provider_unearned), net of the
// platform's commission, and debited with the SLA credits its downtime
// caused, so its balance is exactly what the provider has earned and is
// owed. It never goes below zero: a debit it cannot cover (an SLA credit
// after a payout) is owed in provider_receivable, and a payout first
// offsets that. A payout takes the rest of the balance, as it stands
// inside the payout's transaction, to a clearing account (payment_clearing
// for Stripe, bank_clearing for a bank transfer); a payout that fails
// moves it back.
type Payouts struct {
	DB *models.DB
	// Connect is Stripe Connect; nil (no Stripe key) means every payout
	// is a bank transfer.
	Connect payments.Connect
	// ConnectCountry is the country of new Express accounts (default
	// "HK": Connect payouts do not reach mainland China).
	ConnectCountry string
	// RealName is config.RealNameRequired (also when empty) or
	// config.RealNameOff (--real-name): when required, a provider
	// organisation that is not verified is not paid out; its payable
	// waits (payouts_verified.go).
	RealName string
}

// Ledger transaction kinds of payouts.
const (
	PayoutKind       = "payout"
	PayoutReturnKind = "payout_return"
)

// PayoutPeriod returns the period ("YYYY-MM", Asia/Shanghai) that a run at
// now pays: the month before now's.
func PayoutPeriod(now time.Time) string {
	l := now.In(pricing.Shanghai)
	return time.Date(l.Year(), l.Month(), 1, 0, 0, 0, 0, pricing.Shanghai).AddDate(0, -1, 0).Format("2006-01")
}

// checkPeriod accepts a "YYYY-MM" month that has ended by now.
func checkPeriod(period string, now time.Time) error {
	start, err := time.ParseInLocation("2006-01", period, pricing.Shanghai)
	if err != nil || start.Year() < 2000 || now.Before(start.AddDate(0, 1, 0)) {
		return apperr.Field("period", "err.payout_period")
	}
	return nil
}

// Run creates the period's payouts: for each verified provider with a
// positive payable balance (and, with --real-name required, whose
// organisation verification is done: the others' balances wait,
// untouched), one payout of that whole balance, recorded
// with its ledger transaction in one transaction per provider. The
// payouts table's unique key (provider, period) makes a second run, or
// one running at the same time, create nothing. Stripe payouts are then
// transferred (as are any left pending by an earlier run cut short, but
// for those of providers held by the same gate); a
// transfer Stripe refuses fails its payout and returns the money to
// payable. created counts the payouts this run recorded; errors of single
// providers are joined, and the others still go ahead.
func (p *Payouts) Run(ctx context.Context, period string) (created int, err error) {
	now := p.DB.Now().UTC()
	if err := checkPeriod(period, now); err != nil {
		return 0, err
	}
	provs, err := ledger.PayableProviders(ctx, p.DB)
	if err != nil {
		return 0, err
	}
	var errs []error
	for i := range provs {
		ok, err := p.create(ctx, &provs[i].Provider, period, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("payout of provider %d: %w", provs[i].ID, err))
			continue
		}
		if ok {
			created++
		}
	}
	if err := p.transferPending(ctx); err != nil {
		errs = append(errs, err)
	}
	return created, errors.Join(errs...)
}

// method is how a provider is paid now: by Stripe where it has a Connect
// account that may receive payouts (and Stripe is configured), else by
// bank transfer.
func (p *Payouts) method(pr *models.Provider) (method, clearing string) {
	if p.Connect != nil && pr.StripeAccountID != "" && pr.StripePayoutsEnabled {
		return models.PayoutStripe, ledger.AccPaymentClearing
	}
	return models.PayoutBank, ledger.AccBankClearing
}

// clearingOf is the clearing account a payout's money went to.
func clearingOf(po *models.Payout) string {
	if po.Method == models.PayoutStripe {
		return ledger.AccPaymentClearing
	}
	return ledger.AccBankClearing
}

// create records one provider's payout for the period, if it has none
// and its balance is positive.
func (p *Payouts) create(ctx context.Context, pr *models.Provider, period string, now time.Time) (bool, error) {
	method, clearing := p.method(pr)
	created := false
	err := p.DB.Tx(ctx, func(tx *gorm.DB) error {
		// Not verified (--real-name required): no money moves.
		if held, err := p.heldIn(tx, pr); err != nil || held {
			return err
		}
		// The balance read under the lock is what is paid: charges and
		// SLA credits posted meanwhile wait for it, so a payout never
		// exceeds the balance.
		bal, err := ledger.LockPayable(tx, pr.ID)
		if err != nil || bal <= 0 {
			return err
		}
		// What the provider owes (SLA credits and refunds its payable could
		// not cover) is taken off first; only the rest is paid.
		owed, err := ledger.LockBalance(tx, ledger.AccProviderReceivable, pr.ID)
		if err != nil {
			return err
		}
		if offset := min(bal, max(-owed, 0)); offset > 0 {
			if err := ledger.Post(tx, &ledger.LedgerTxn{Kind: rentals.ReceivableOffsetKind, CreatedAt: now,
				Memo:    fmt.Sprintf("provider %d: %s owed to the platform offset before the %s payout", pr.ID, pricing.FenToYuanString(offset), period),
				MemoMsg: locales.M("memo.receivable_offset", pricing.FenToYuanString(offset), period)},
				ledger.Leg{Kind: ledger.AccProviderPayable, OrgID: pr.ID, AmountFen: -offset},
				ledger.Leg{Kind: ledger.AccProviderReceivable, OrgID: pr.ID, AmountFen: offset}); err != nil {
				return err
			}
			if err := audit.Record(ctx, tx, audit.PayoutOffset, fmt.Sprintf("provider:%d", pr.ID), audit.Fen(offset), fmt.Sprintf("%s: offset what the provider owed", period),
				locales.M("audit.payout_offset", period)); err != nil {
				return err
			}
			if bal -= offset; bal == 0 {
				return nil
			}
		}
		po := &models.Payout{ProviderID: pr.ID, Period: period, AmountFen: bal, Method: method, Status: models.PayoutPending, CreatedAt: now}
		ok, err := ledger.InsertPayout(tx, po)
		if err != nil || !ok {
			return err
		}
		key := fmt.Sprintf("payout:%d:%s", pr.ID, period)
		txn := &ledger.LedgerTxn{Kind: PayoutKind, IdemKey: &key, CreatedAt: now,
			Memo:    fmt.Sprintf("payout #%d to provider %d for %s (%s)", po.ID, pr.ID, period, method),
			MemoMsg: locales.M("memo.payout", po.ID, period, locales.M("admin.payout.method."+method))}
		if err := ledger.Post(tx, txn,
			ledger.Leg{Kind: ledger.AccProviderPayable, OrgID: pr.ID, AmountFen: -bal},
			ledger.Leg{Kind: clearing, AmountFen: bal}); err != nil {
			// ErrDuplicate too: the payout row was new, so a posted key
			// means something is wrong; roll the payout back.
			return err
		}
		if _, err := ledger.UpdatePayout(tx, po.ID, models.PayoutPending, map[string]any{"txn_id": txn.ID}); err != nil {
			return err
		}
		created = true
		return audit.Record(ctx, tx, audit.PayoutCreated, payoutSubject(po.ID), audit.Fen(bal), fmt.Sprintf("provider %d, %s, %s", pr.ID, period, method),
			locales.M("audit.payout_created", pr.ID, period, locales.M("admin.payout.method."+method)))
	})
	if err != nil && ledger.IsUniqueViolation(err) {
		// Another run recorded it between our check and our insert.
		return false, nil
	}
	if created {
		slog.Info("payout recorded", "provider", pr.ID, "period", period, "method", method)
	}
	return created, err
}

func payoutSubject(id int64) string { return "payout:" + strconv.FormatInt(id, 10) }

// transferPending sends every pending Stripe payout to its account, but
// for those of providers whose organisation is not verified (a
// verification reset or rejected after the payout was recorded): those
// stay pending, their money in clearing, until a run after the
// organisation is verified again (Held lists them for the admin).
func (p *Payouts) transferPending(ctx context.Context) error {
	if p.Connect == nil {
		return nil
	}
	pending, err := ledger.PendingStripePayouts(ctx, p.DB)
	if err != nil {
		return err
	}
	var errs []error
	for i := range pending {
		if err := p.transfer(ctx, &pending[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// transfer sends one Stripe payout. It runs after the payout's commit, so
// Stripe is never asked to pay money the ledger has not set aside; the
// idempotency key "payout-<id>" makes a retry pay once. A refusal fails
// the payout (the money goes back to payable); a network error or a 5xx
// leaves it pending for the next run.
func (p *Payouts) transfer(ctx context.Context, po *models.Payout) error {
	pr, err := supply.ProviderByIDIn(p.DB.R.WithContext(ctx), po.ProviderID)
	if err != nil {
		return err
	}
	// The gate of payouts_verified.go holds the transfer too: no money
	// leaves for a provider whose verification was withdrawn after its
	// payout was recorded.
	held, err := p.heldIn(p.DB.R.WithContext(ctx), pr)
	if err != nil {
		return err
	}
	if held {
		slog.Info("stripe payout transfer held: the provider's organisation is not verified", "payout", po.ID, "provider", pr.ID)
		return nil
	}
	if pr.StripeAccountID == "" {
		return p.fail(ctx, po.ID, "the provider has no Stripe account", nil)
	}
	id, err := p.Connect.Transfer(ctx, pr.StripeAccountID, po.AmountFen, "payout-"+strconv.FormatInt(po.ID, 10), po.ID)
	if err != nil {
		if payments.IsPermanent(err) {
			slog.Warn("stripe refused a payout transfer", "payout", po.ID, "err", err)
			return p.fail(ctx, po.ID, err.Error(), nil)
		}
		slog.Error("stripe payout transfer failed; left pending for the next run", "payout", po.ID, "err", err)
		// EUNAVAILABLE: the console says Stripe is down, not a 500; the
		// job retries.
		return fmt.Errorf("payout %d: %w", po.ID, &apperr.Error{Code: apperr.EUNAVAILABLE,
			Message: "Stripe did not answer; the transfer is retried on the next run", Key: "err.provider_down"})
	}
	now := p.DB.Now().UTC()
	return p.DB.Tx(ctx, func(tx *gorm.DB) error {
		ok, err := ledger.UpdatePayout(tx, po.ID, models.PayoutPending,
			map[string]any{"status": models.PayoutPaid, "stripe_transfer_id": id, "paid_at": now})
		if err != nil || !ok {
			return err
		}
		return audit.Record(ctx, tx, audit.PayoutPaid, payoutSubject(po.ID), audit.Fen(po.AmountFen), "stripe transfer "+id, locales.M("audit.stripe_transfer", id))
	})
}

// fail marks a pending payout failed and returns its amount to the
// provider's payable account, once (ledger key "payout_return:<id>").
func (p *Payouts) fail(ctx context.Context, payoutID int64, reason string, by *int64) error {
	now := p.DB.Now().UTC()
	return p.DB.Tx(ctx, func(tx *gorm.DB) error {
		po, err := ledger.PayoutForUpdate(tx, payoutID)
		if err != nil {
			return err
		}
		if po.Status != models.PayoutPending {
			return apperr.Errorf(apperr.ECONFLICT, "payout #%d is %s, not pending", po.ID, po.Status)
		}
		if _, err := ledger.UpdatePayout(tx, po.ID, models.PayoutPending, map[string]any{"status": models.PayoutFailed, "failure": reason}); err != nil {
			return err
		}
		key := fmt.Sprintf("payout_return:%d", po.ID)
		err = ledger.Post(tx, &ledger.LedgerTxn{Kind: PayoutReturnKind, IdemKey: &key, CreatedBy: by, CreatedAt: now,
			Memo:    fmt.Sprintf("payout #%d to provider %d failed: %s", po.ID, po.ProviderID, reason),
			MemoMsg: locales.M("memo.payout_failed", po.ID, reason)},
			ledger.Leg{Kind: clearingOf(po), AmountFen: -po.AmountFen},
			ledger.Leg{Kind: ledger.AccProviderPayable, OrgID: po.ProviderID, AmountFen: po.AmountFen})
		if err != nil && !errors.Is(err, ledger.ErrDuplicate) {
			return err
		}
		return audit.Record(ctx, tx, audit.PayoutFailed, payoutSubject(po.ID), audit.Fen(po.AmountFen), reason)
	})
}

// MarkPaid is a platform admin recording that a bank-transfer payout was
// paid, with the bank's reference (required). Only a pending bank
// transfer can be marked paid.
func (p *Payouts) MarkPaid(ctx context.Context, admin *models.User, payoutID int64, bankReference string) error {
	if admin == nil || !admin.PlatformAdmin {
		return apperr.Errorf(apperr.EFORBIDDEN, "platform admins only")
	}
	ref, err := payoutFormText("bank_reference", bankReference, 200, "err.bank_reference_required")
	if err != nil {
		return err
	}
	now := p.DB.Now().UTC()
	return p.DB.Tx(ctx, func(tx *gorm.DB) error {
		po, err := ledger.PayoutForUpdate(tx, payoutID)
		if err != nil {
			return err
		}
		if po.Method != models.PayoutBank || po.Status != models.PayoutPending {
			return apperr.Errorf(apperr.ECONFLICT, "payout #%d is not a pending bank transfer", po.ID)
		}
		if _, err := ledger.UpdatePayout(tx, po.ID, models.PayoutPending,
			map[string]any{"status": models.PayoutPaid, "bank_reference": ref, "paid_by": admin.ID, "paid_at": now}); err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.PayoutPaid, payoutSubject(po.ID), audit.Fen(po.AmountFen), "bank reference "+ref, locales.M("provider.earn.bank_ref", ref))
	})
}

// MarkFailed is a platform admin recording that a pending payout could not
// be paid (a bank transfer bounced, say), with the reason (required); its
// amount returns to the provider's payable balance for the next payout.
func (p *Payouts) MarkFailed(ctx context.Context, admin *models.User, payoutID int64, reason string) error {
	if admin == nil || !admin.PlatformAdmin {
		return apperr.Errorf(apperr.EFORBIDDEN, "platform admins only")
	}
	reason, err := payoutFormText("reason", reason, 500, "err.payout_reason_required")
	if err != nil {
		return err
	}
	return p.fail(ctx, payoutID, reason, &admin.ID)
}

// payoutFormText trims an admin's free-text payout field and checks it:
// present and at most max bytes (else missingKey), and text that the
// databases store (valid UTF-8 without NUL bytes; PostgreSQL refuses both).
func payoutFormText(field, v string, max int, missingKey string) (string, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == "" || len(v) > max:
		return "", apperr.Fields{apperr.Field(field, missingKey)}
	case !utf8.ValidString(v) || strings.ContainsRune(v, 0):
		return "", apperr.Fields{apperr.Field(field, "err.text")}
	}
	return v, nil
}

// ConnectOnboard starts or resumes a provider's Stripe Connect onboarding
// for one of its owners or admins: it creates the provider's Express
// account if it has none (storing its id), and returns a one-time account
// link URL to send the user to. Anyone else learns nothing (ENOTFOUND);
// a plain member gets EFORBIDDEN; without Stripe, EUNAVAILABLE.
func (p *Payouts) ConnectOnboard(ctx context.Context, u *models.User, providerID int64, returnURL, refreshURL string) (string, error) {
	pr, err := p.providerFor(ctx, u, providerID)
	if err != nil {
		return "", err
	}
	if p.Connect == nil {
		return "", &apperr.Error{Code: apperr.EUNAVAILABLE, Message: "Stripe Connect is not available; payouts go by bank transfer", Key: "err.connect_unavailable"}
	}
	if returnURL == "" || refreshURL == "" {
		return "", apperr.Invalid("return_url", "return and refresh URLs are required")
	}
	acct := pr.StripeAccountID
	if acct == "" {
		email := cmp.Or(pr.ContactEmail, u.Email)
		id, err := p.Connect.CreateExpressAccount(ctx, email, cmp.Or(p.ConnectCountry, "HK"))
		if err != nil {
			return "", connectDown(err)
		}
		err = p.DB.Tx(ctx, func(tx *gorm.DB) error {
			// Only if no account was stored meanwhile (two clicks at once):
			// the first stored account is the provider's.
			stored, err := supply.SetProviderStripeAccount(tx, pr.ID, id)
			if err != nil || !stored {
				return err
			}
			return audit.Record(ctx, tx, audit.ConnectOnboard, "provider:"+strconv.FormatInt(pr.ID, 10), nil, "Stripe Express account "+id, locales.M("audit.stripe_account", id))
		})
		if err != nil {
			return "", err
		}
		if pr, err = supply.ProviderByID(ctx, p.DB, pr.ID); err != nil {
			return "", err
		}
		if pr.StripeAccountID != id {
			slog.Warn("a second Stripe account was created for a provider and left unused", "provider", pr.ID, "account", id)
		}
		acct = pr.StripeAccountID
	}
	url, err := p.Connect.AccountLink(ctx, acct, returnURL, refreshURL)
	if err != nil {
		return "", connectDown(err)
	}
	return url, nil
}

// providerFor returns a provider that u may manage payouts of: an owner or
// admin of its organisation.
func (p *Payouts) providerFor(ctx context.Context, u *models.User, providerID int64) (*models.Provider, error) {
	if u == nil {
		return nil, errProviderNotFound()
	}
	pr, err := supply.ProviderByID(ctx, p.DB, providerID)
	if apperr.Code(err) == apperr.ENOTFOUND || (err == nil && pr.OrgID == nil) {
		return nil, errProviderNotFound()
	}
	if err != nil {
		return nil, err
	}
	m, err := p.DB.MembershipOf(ctx, *pr.OrgID, u.ID)
	if apperr.Code(err) == apperr.ENOTFOUND {
		return nil, errProviderNotFound()
	}
	if err != nil {
		return nil, err
	}
	if m.Role != models.RoleOwner && m.Role != models.RoleAdmin {
		return nil, apperr.Errorf(apperr.EFORBIDDEN, "only the provider's owners and admins may set up payouts")
	}
	return pr, nil
}

// RefreshConnect reads the provider's Connect account from Stripe and
// stores whether it may take charges and receive payouts (after the
// provider returns from onboarding, or on Stripe's account.updated).
// A provider without an account is returned as it is.
func (p *Payouts) RefreshConnect(ctx context.Context, providerID int64) (*models.Provider, error) {
	pr, err := supply.ProviderByID(ctx, p.DB, providerID)
	if apperr.Code(err) == apperr.ENOTFOUND {
		return nil, errProviderNotFound()
	}
	if err != nil || pr.StripeAccountID == "" {
		return pr, err
	}
	if p.Connect == nil {
		return nil, &apperr.Error{Code: apperr.EUNAVAILABLE, Message: "Stripe Connect is not available; payouts go by bank transfer", Key: "err.connect_unavailable"}
	}
	charges, payouts, err := p.Connect.Account(ctx, pr.StripeAccountID)
	if err != nil {
		return nil, connectDown(err)
	}
	if err := p.DB.Tx(ctx, func(tx *gorm.DB) error {
		return ledger.SetProviderConnect(tx, pr.ID, pr.StripeAccountID, charges, payouts)
	}); err != nil {
		return nil, err
	}
	pr.StripeChargesEnabled, pr.StripePayoutsEnabled = charges, payouts
	return pr, nil
}

// connectDown logs a failed Stripe call and answers EUNAVAILABLE: what
// went wrong at Stripe is for the log, not the user.
func connectDown(err error) error {
	slog.Error("stripe connect call failed", "err", err)
	return &apperr.Error{Code: apperr.EUNAVAILABLE, Message: "Stripe did not answer; try again later", Key: "err.provider_down"}
}
