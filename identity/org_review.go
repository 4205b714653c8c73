package identity

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/audit"
	"suanli/locales"
	"suanli/models"
	"suanli/models/identitystore"
)

// requireOrgReviewer returns EFORBIDDEN unless u is a platform admin:
// only the platform's review sees a submission in full.
func requireOrgReviewer(u *models.User) error {
	if u == nil || !u.PlatformAdmin {
		return apperr.Errorf(apperr.EFORBIDDEN, "platform admins only")
	}
	return nil
}

// OrgReview is a submission as the admin review shows it.
type OrgReview struct {
	V   identitystore.OrgVerification
	Org models.Org
	// Submitter is who submitted it (nil for an operator's verification).
	Submitter *models.User
	// HasLicence: a licence file is stored (an operator's verification has none).
	HasLicence bool
}

// Review returns a submission for a platform admin's review. Its licence
// is not read here: that is Licence, audited.
func (o *Orgs) Review(ctx context.Context, admin *models.User, id int64) (*OrgReview, error) {
	if err := requireOrgReviewer(admin); err != nil {
		return nil, err
	}
	v, err := identitystore.OrgVerificationByID(ctx, o.DB, id)
	if err != nil {
		return nil, err
	}
	org, err := o.DB.OrgByID(ctx, v.OrgID)
	if err != nil {
		return nil, err
	}
	r := &OrgReview{V: *v, Org: *org, HasLicence: v.LicenceBytes > 0}
	if v.SubmittedBy != nil {
		if r.Submitter, err = o.DB.UserByID(ctx, *v.SubmittedBy); err != nil && apperr.Code(err) != apperr.ENOTFOUND {
			return nil, err
		}
	}
	return r, nil
}

// LicenceFile is an opened business licence.
type LicenceFile struct {
	Data []byte
	// Kind is png, jpeg or pdf; ContentType its media type.
	Kind, ContentType string
	OrgID             int64
}

// Licence opens a submission's business licence for a platform admin's
// review, and writes who read whose licence to the audit log in the same
// transaction: the file is returned only once its reading is recorded.
// Anyone else is EFORBIDDEN; without the key that sealed it, EUNAVAILABLE.
func (o *Orgs) Licence(ctx context.Context, admin *models.User, id int64) (*LicenceFile, error) {
	if err := requireOrgReviewer(admin); err != nil {
		return nil, err
	}
	if o.Ring == nil {
		return nil, errOrgUnavailable()
	}
	var f *LicenceFile
	err := o.DB.Tx(ctx, func(tx *gorm.DB) error {
		v, err := identitystore.OrgVerificationForUpdate(tx, id)
		if err != nil {
			return err
		}
		sealed, err := identitystore.OrgLicenceSealed(tx, v.ID)
		if err != nil {
			return err
		}
		data, err := o.Ring.Open(sealed, licenceContext(v.OrgID, v.ID))
		if err != nil {
			// A key that was dropped before the reseal ran, or a copied row.
			slog.Error("a sealed business licence does not open", "verification", v.ID, "org", v.OrgID, "err", err)
			return &apperr.Error{Code: apperr.EUNAVAILABLE, Key: "orgverify.err.unopenable",
				Message: "the licence does not open with the configured PII keys (was an old key dropped before `suanli admin reseal-pii` ran?)"}
		}
		org, err := models.OrgByIDIn(tx, v.OrgID)
		if err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, audit.OrgLicenceRead, orgSubject(v.OrgID), nil,
			fmt.Sprintf("business licence of verification #%d (%s) read in full by user %d <%s>", v.ID, org.Name, admin.ID, admin.Email),
			locales.M("orgverify.audit.licence_read", v.ID, org.Name, admin.Email)); err != nil {
			return err
		}
		f = &LicenceFile{Data: data, Kind: v.LicenceType, ContentType: LicenceContentType(v.LicenceType), OrgID: v.OrgID}
		return nil
	})
	return f, err
}

// Approve verifies a pending submission (platform admins), and mails the
// organisation's owners. One no longer pending is ECONFLICT.
func (o *Orgs) Approve(ctx context.Context, admin *models.User, id int64) error {
	return o.decide(ctx, admin, id, identitystore.OrgPending, identitystore.OrgVerified, "")
}

// Reject refuses a pending submission with the reason the organisation is
// shown (required), and mails its owners; it may then submit again.
func (o *Orgs) Reject(ctx context.Context, admin *models.User, id int64, reason string) error {
	return o.decide(ctx, admin, id, identitystore.OrgPending, identitystore.OrgRejected, reason)
}

// Reset reopens a verified organisation's verification (platform
// admins), with the reason its owners are mailed (required): its payouts
// wait again until it submits and is verified.
func (o *Orgs) Reset(ctx context.Context, admin *models.User, id int64, reason string) error {
	return o.decide(ctx, admin, id, identitystore.OrgVerified, identitystore.OrgReset, reason)
}

// decide moves a submission from one status to another, audited, and
// mails the organisation's owners in the same transaction.
func (o *Orgs) decide(ctx context.Context, admin *models.User, id int64, from, to identitystore.OrgStatus, reason string) error {
	if err := requireOrgReviewer(admin); err != nil {
		return err
	}
	reason = strings.TrimSpace(reason)
	if to != identitystore.OrgVerified {
		switch {
		case reason == "" || utf8.RuneCountInString(reason) > 500:
			return apperr.Fields{apperr.Field(OrgFieldReason, "orgverify.err.reason")}
		case !apperr.Storable(reason):
			return apperr.Fields{apperr.Field(OrgFieldReason, "orgverify.err.text")}
		}
	}
	now := o.DB.Now().UTC()
	return o.DB.Tx(ctx, func(tx *gorm.DB) error {
		v, err := identitystore.OrgVerificationForUpdate(tx, id)
		if err != nil {
			return err
		}
		changed, err := identitystore.DecideOrgVerification(tx, v.ID, from, to, admin.ID, now, reason)
		if err != nil {
			return err
		}
		if !changed {
			return &apperr.Error{Code: apperr.ECONFLICT, Key: "orgverify.err.not_" + string(from), Args: []any{v.ID},
				Message: fmt.Sprintf("organisation verification #%d is %s, not %s", v.ID, v.Status, from)}
		}
		org, err := models.OrgByIDIn(tx, v.OrgID)
		if err != nil {
			return err
		}
		action := map[identitystore.OrgStatus]string{identitystore.OrgVerified: audit.OrgVerifyApproved,
			identitystore.OrgRejected: audit.OrgVerifyRejected, identitystore.OrgReset: audit.OrgVerifyReset}[to]
		if err := audit.Record(ctx, tx, action, orgSubject(v.OrgID), nil,
			strings.TrimSpace(fmt.Sprintf("verification #%d of %s (%s): %s %s", v.ID, org.Name, v.CreditCode, to, reason)),
			locales.M("orgverify.audit."+string(to), v.ID, org.Name, reason)); err != nil {
			return err
		}
		return o.mailOwners(tx, org, to, reason)
	})
}

// mailOwners tells each owner of the organisation, in their language,
// what the review decided, with a link to its verification page.
func (o *Orgs) mailOwners(tx *gorm.DB, org *models.Org, to identitystore.OrgStatus, reason string) error {
	owners, err := identitystore.OrgOwnersIn(tx, org.ID)
	if err != nil {
		return err
	}
	link := fmt.Sprintf("%s/orgs/%d/verification", strings.TrimRight(o.BaseURL, "/"), org.ID)
	for i := range owners {
		u := &owners[i]
		lang := u.MailLang()
		if err := models.EnqueueMail(tx, &models.OutboxMail{ToAddr: u.Email, Lang: lang, CreatedAt: models.Now(tx),
			Subject: locales.T(lang, "orgverify.mail."+string(to)+".subject", org.Name),
			Body:    locales.T(lang, "orgverify.mail."+string(to)+".body", org.Name, reason, link)}); err != nil {
			return err
		}
	}
	return nil
}
