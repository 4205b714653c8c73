package orgverify

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/cnid"
	"suanli/handlers"
	"suanli/identity"
	"suanli/models"
)

// Verification is an organisation's verification in the API (schema
// OrgVerification): what its page shows, never the licence file nor the
// full credit code.
type Verification struct {
	OrgID  int64  `json:"org_id"`
	Status string `json:"status"`
	// CanSubmit: the caller may submit now (POST answers 201, not 403 or 409).
	CanSubmit bool `json:"can_submit"`
	// NoticeVersion is the privacy notice a submission now agrees to.
	NoticeVersion string `json:"notice_version"`
	PayoutsWait   bool   `json:"payouts_wait"`
	// Submission is the newest one; nil when the organisation never submitted.
	Submission *Submission `json:"submission"`
}

// Submission is one verification submission in the API.
type Submission struct {
	ID               int64      `json:"id"`
	Source           string     `json:"source"`
	CreditCodeMasked string     `json:"credit_code_masked"`
	OrgName          string     `json:"org_name"`
	LegalRep         string     `json:"legal_rep"`
	LicenceType      string     `json:"licence_type"`
	LicenceBytes     int64      `json:"licence_bytes"`
	ConsentVersion   string     `json:"consent_version"`
	ConsentedAt      *time.Time `json:"consented_at"`
	SubmittedAt      time.Time  `json:"submitted_at"`
	DecidedAt        *time.Time `json:"decided_at"`
	Reason           string     `json:"reason"`
}

func verificationJSON(h *handlers.Handler, org *models.Org, st identity.OrgState) Verification {
	out := Verification{OrgID: org.ID, Status: st.Status, CanSubmit: st.CanSubmit, NoticeVersion: identity.OrgConsentVersion,
		PayoutsWait: payoutsWait(h, org)}
	if v := st.Latest; v != nil {
		out.Submission = &Submission{ID: v.ID, Source: v.Source, CreditCodeMasked: cnid.Mask(v.CreditCode), OrgName: v.OrgName,
			LegalRep: v.LegalRep, LicenceType: v.LicenceType, LicenceBytes: v.LicenceBytes, ConsentVersion: v.ConsentVersion,
			ConsentedAt: utc(v.ConsentAt), SubmittedAt: v.SubmittedAt.UTC(), DecidedAt: utc(v.ReviewedAt), Reason: v.Reason}
	}
	return out
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// APIShow is GET /api/v1/orgs/{id}/verification: the organisation's
// verification, for its members and platform admins (anyone else: 404),
// as its page shows it.
func (h *Handler) APIShow(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "organisation")
	if err != nil {
		return err
	}
	org, st, err := Orgs(h.Handler).State(c.Request().Context(), handlers.CurrentUser(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, verificationJSON(h.Handler, org, st))
}

// APISubmit is POST /api/v1/orgs/{id}/verification, multipart/form-data
// with the page's fields (credit_code, org_name, legal_rep, licence):
// the same submission as the page's, the call being consent to the
// current privacy notice (the operation's documentation says so). 201
// with the verification, pending; bad fields 422 naming each; members
// 403, anyone else 404; pending or verified already 409; no PII key 503.
func (h *Handler) APISubmit(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "organisation")
	if err != nil {
		return err
	}
	licence, err := readLicence(c)
	if err != nil {
		return err
	}
	ctx, u, o := c.Request().Context(), handlers.CurrentUser(c), Orgs(h.Handler)
	if _, err := o.Submit(ctx, u, id, identity.OrgSubmission{
		CreditCode: c.FormValue(identity.OrgFieldCreditCode), OrgName: c.FormValue(identity.OrgFieldOrgName), LegalRep: c.FormValue(identity.OrgFieldLegalRep),
		Licence: licence, Consent: true,
	}); err != nil {
		return err
	}
	org, st, err := o.State(ctx, u, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, verificationJSON(h.Handler, org, st))
}
