package identity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/audit"
	"suanli/cnid"
	"suanli/locales"
	"suanli/models"
	"suanli/models/identitystore"
	"suanli/secrets"
)

// Orgs verifies organisations (企业认证): a team, lab or provider gives
// its unified social credit code, registered name, legal representative
// and business licence; a platform admin reviews them (org_review.go).
// A provider organisation is paid out only once verified (package
// providers asks identitystore). The licence file is stored sealed under
// Ring, bound to the organisation and the submission, and opened only by
// the admin review, which audits every opening.
type Orgs struct {
	DB *models.DB
	// Ring seals the licence files; nil (no key configured): nothing can
	// be submitted (EUNAVAILABLE) and no licence can be read.
	Ring *secrets.Ring
	// BaseURL starts the links in the mails of a review's decision.
	BaseURL string
}

// OrgConsentVersion names the privacy notice an organisation's submitter
// agrees to; a new wording gets a new version, so the stored consent says
// which text was agreed to.
const OrgConsentVersion = "org-2026-12.2"

// MaxLicenceBytes is the largest business licence file accepted (5 MiB).
const MaxLicenceBytes = 5 << 20

// Licence file types, by their first bytes.
const (
	LicencePNG  = "png"
	LicenceJPEG = "jpeg"
	LicencePDF  = "pdf"
)

// LicenceContentType is the media type a licence file is served with.
func LicenceContentType(kind string) string {
	switch kind {
	case LicencePNG:
		return "image/png"
	case LicenceJPEG:
		return "image/jpeg"
	case LicencePDF:
		return "application/pdf"
	}
	return "application/octet-stream"
}

// licenceKind tells a licence file's type by its magic bytes (never by
// its name or the browser's word): PNG, JPEG or PDF, else "".
func licenceKind(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return LicencePNG
	case bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}):
		return LicenceJPEG
	case bytes.HasPrefix(b, []byte("%PDF-")):
		return LicencePDF
	}
	return ""
}

// licenceContext binds a sealed licence to its organisation and
// submission: copied to another row, it does not open.
func licenceContext(orgID, verificationID int64) []byte {
	return fmt.Appendf(nil, "org-licence:%d:%d", orgID, verificationID)
}

// Form fields of a submission (the page's and the errors').
const (
	OrgFieldCreditCode = "credit_code"
	OrgFieldOrgName    = "org_name"
	OrgFieldLegalRep   = "legal_rep"
	OrgFieldLicence    = "licence"
	OrgFieldConsent    = "consent"
	OrgFieldReason     = "reason"
)

// OrgSubmission is what an organisation submits for verification.
type OrgSubmission struct {
	CreditCode, OrgName, LegalRep string
	// Licence is the business licence file (a handler reads at most
	// MaxLicenceBytes+1 of it: more is refused as too large).
	Licence []byte
	// Consent: the submitter agreed to the privacy notice
	// (OrgConsentVersion).
	Consent bool
}

// OrgState is an organisation's verification as its pages show it.
type OrgState struct {
	// Status is unverified (never submitted), or the newest submission's:
	// pending, verified, rejected or reset.
	Status string
	// Latest is the newest submission; nil when there is none.
	Latest *identitystore.OrgVerification
	// CanSubmit: the reader may submit now (an owner or admin of an
	// organisation that is neither pending nor verified).
	CanSubmit bool
}

// OrgUnverified is the status of an organisation that never submitted.
const OrgUnverified = "unverified"

// orgMember returns the organisation and the user's membership (nil for a
// platform admin who is not a member). Anyone else is told it does not
// exist, as accounts.Authorize does.
func (o *Orgs) orgMember(ctx context.Context, u *models.User, orgID int64) (*models.Org, *models.Membership, error) {
	if u == nil {
		return nil, nil, apperr.NotFound("organisation")
	}
	m, err := o.DB.MembershipOf(ctx, orgID, u.ID)
	if err != nil && apperr.Code(err) != apperr.ENOTFOUND {
		return nil, nil, err
	}
	if m == nil && !u.PlatformAdmin {
		return nil, nil, apperr.NotFound("organisation")
	}
	org, err := o.DB.OrgByID(ctx, orgID)
	if err != nil {
		return nil, nil, err
	}
	return org, m, nil
}

// orgManager reports whether the membership may submit: the
// organisation's owners and admins, as for its other settings.
func orgManager(m *models.Membership) bool {
	return m != nil && models.RoleRank(m.Role) >= models.RoleRank(models.RoleAdmin)
}

// State returns the organisation's verification for a member (or a
// platform admin) and whether the user may submit now.
func (o *Orgs) State(ctx context.Context, u *models.User, orgID int64) (*models.Org, OrgState, error) {
	org, m, err := o.orgMember(ctx, u, orgID)
	if err != nil {
		return nil, OrgState{}, err
	}
	st, err := o.StateOf(ctx, org, orgManager(m))
	return org, st, err
}

// StateOf is an organisation's verification for a page that has already
// authorised its reader (the organisation's own page); canManage is
// whether the reader is one of its owners or admins.
func (o *Orgs) StateOf(ctx context.Context, org *models.Org, canManage bool) (OrgState, error) {
	st, err := o.state(ctx, org)
	// Submitting again is for an organisation not pending or verified.
	open := st.Status == OrgUnverified || st.Status == string(identitystore.OrgRejected) || st.Status == string(identitystore.OrgReset)
	st.CanSubmit = err == nil && canManage && !org.Personal && open
	return st, err
}

func (o *Orgs) state(ctx context.Context, org *models.Org) (OrgState, error) {
	st := OrgState{Status: OrgUnverified}
	v, err := identitystore.LatestOrgVerification(ctx, o.DB, org.ID)
	if apperr.Code(err) == apperr.ENOTFOUND {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	st.Status, st.Latest = string(v.Status), v
	return st, nil
}

// errOrgUnavailable is a submission or a licence read without a PII key.
func errOrgUnavailable() *apperr.Error {
	return &apperr.Error{Code: apperr.EUNAVAILABLE, Key: "orgverify.err.unavailable",
		Message: "organisation verification is not available: no key to seal licences is configured (SUANLI_PII_KEY or SUANLI_SECRET_KEY)"}
}

// Submit stores an organisation's verification submission, pending
// review, for one of its owners or admins: the licence sealed, the
// consent recorded. Members are EFORBIDDEN, anyone else ENOTFOUND; bad
// input is an apperr.Fields naming the fields; an organisation already
// pending or verified is ECONFLICT; without a key, EUNAVAILABLE.
func (o *Orgs) Submit(ctx context.Context, u *models.User, orgID int64, in OrgSubmission) (*identitystore.OrgVerification, error) {
	org, m, err := o.orgMember(ctx, u, orgID)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, apperr.NotFound("organisation")
	}
	if !orgManager(m) {
		return nil, apperr.Errorf(apperr.EFORBIDDEN, "only the organisation's owners and admins may verify it")
	}
	if org.Personal {
		return nil, &apperr.Error{Code: apperr.ECONFLICT, Key: "orgverify.err.personal",
			Message: "a personal organisation is verified through its owner's own real-name verification"}
	}
	if o.Ring == nil {
		return nil, errOrgUnavailable()
	}
	v, err := checkOrgSubmission(in)
	if err != nil {
		return nil, err
	}
	now := o.DB.Now().UTC()
	v.OrgID, v.Status, v.Source = orgID, identitystore.OrgPending, identitystore.SourceForm
	v.ConsentVersion, v.ConsentAt, v.SubmittedBy, v.SubmittedAt = OrgConsentVersion, &now, &u.ID, now
	err = o.DB.Tx(ctx, func(tx *gorm.DB) error {
		verified, err := identitystore.OrgVerifiedIn(tx, orgID)
		if err != nil {
			return err
		}
		if verified {
			return &apperr.Error{Code: apperr.ECONFLICT, Key: "orgverify.err.verified",
				Message: "the organisation is already verified; the platform can reopen its verification"}
		}
		if err := identitystore.InsertOrgVerification(tx, v); err != nil {
			return err
		}
		if err := identitystore.InsertOrgLicence(tx, v.ID, o.Ring.Seal(in.Licence, licenceContext(orgID, v.ID))); err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.OrgVerifySubmitted, orgSubject(orgID), nil,
			fmt.Sprintf("verification #%d of %s submitted (credit code %s, licence %s, %d bytes, consent %s)", v.ID, org.Name, v.CreditCode, v.LicenceType, v.LicenceBytes, OrgConsentVersion),
			locales.M("orgverify.audit.submitted", v.ID, org.Name, v.CreditCode))
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

func orgSubject(orgID int64) string { return fmt.Sprintf("org:%d", orgID) }

// checkOrgSubmission checks every field of a submission and returns the
// record to store (without its licence's content), or every problem.
func checkOrgSubmission(in OrgSubmission) (*identitystore.OrgVerification, error) {
	var errs apperr.Fields
	v := &identitystore.OrgVerification{}
	code, err := cnid.CreditCode(in.CreditCode)
	switch {
	case strings.TrimSpace(in.CreditCode) == "":
		errs = append(errs, apperr.Field(OrgFieldCreditCode, "orgverify.err.credit_code_missing"))
	case errors.Is(err, cnid.ErrLength):
		errs = append(errs, apperr.Field(OrgFieldCreditCode, "orgverify.err.credit_code_length"))
	case errors.Is(err, cnid.ErrCharacter):
		errs = append(errs, apperr.Field(OrgFieldCreditCode, "orgverify.err.credit_code_character"))
	case err != nil:
		errs = append(errs, apperr.Field(OrgFieldCreditCode, "orgverify.err.credit_code_check"))
	default:
		v.CreditCode = code
	}
	var e *apperr.Error
	if v.OrgName, e = orgText(OrgFieldOrgName, in.OrgName, 2, 100); e != nil {
		errs = append(errs, e)
	}
	if v.LegalRep, e = orgText(OrgFieldLegalRep, in.LegalRep, 2, 50); e != nil {
		errs = append(errs, e)
	}
	switch kind := licenceKind(in.Licence); {
	case len(in.Licence) == 0:
		errs = append(errs, apperr.Field(OrgFieldLicence, "orgverify.err.licence_missing"))
	case len(in.Licence) > MaxLicenceBytes:
		errs = append(errs, apperr.Field(OrgFieldLicence, "orgverify.err.licence_size", MaxLicenceBytes>>20))
	case kind == "":
		errs = append(errs, apperr.Field(OrgFieldLicence, "orgverify.err.licence_type"))
	default:
		v.LicenceType, v.LicenceBytes = kind, int64(len(in.Licence))
	}
	if !in.Consent {
		errs = append(errs, apperr.Field(OrgFieldConsent, "orgverify.err.consent"))
	}
	if err := errs.OrNil(); err != nil {
		return nil, err
	}
	return v, nil
}

// orgText trims a name field and checks it: between min and max
// characters of printable text (a registered name or a person's, which
// may be Chinese, Latin or both).
func orgText(field, s string, min, max int) (string, *apperr.Error) {
	s = strings.Join(strings.Fields(s), " ")
	n := utf8.RuneCountInString(s)
	if !apperr.Storable(s) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return "", apperr.Field(field, "orgverify.err.text")
	}
	if n < min || n > max {
		return "", apperr.Field(field, "orgverify.err."+field, min, max)
	}
	return s, nil
}
