package orgverify

import (
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/cnid"
	"suanli/handlers"
	"suanli/identity"
	"suanli/models/identitystore"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/orgverifypages"
)

// formFields are the form's text fields (the licence is a file).
var formFields = []string{identity.OrgFieldCreditCode, identity.OrgFieldOrgName, identity.OrgFieldLegalRep, identity.OrgFieldConsent}

// Show is GET /orgs/{id}/verification: the organisation's verification,
// its last submission, the privacy notice and, for its owners and
// admins, the form. Members see the status; anyone else a 404.
func (h *Handler) Show(c echo.Context) error {
	return h.render(c, http.StatusOK, handlers.ReadForm(c))
}

func (h *Handler) render(c echo.Context, status int, f views.Form) error {
	id, err := handlers.ParseID(c, "id", "organisation")
	if err != nil {
		return err
	}
	o := Orgs(h.Handler)
	org, st, err := o.State(c.Request().Context(), handlers.CurrentUser(c), id)
	if err != nil {
		return err
	}
	vm := orgverifypages.FormVM{OrgID: org.ID, OrgName: org.Name, OrgKind: org.Kind, Personal: org.Personal,
		Status: st.Status, CanSubmit: st.CanSubmit, Unavailable: o.Ring == nil,
		PayoutsWait: payoutsWait(h.Handler, org), Form: f,
		MaxLicenceMiB: identity.MaxLicenceBytes >> 20, ConsentVersion: identity.OrgConsentVersion}
	if st.Latest != nil {
		vm.Reason = st.Latest.Reason
		vm.Latest = &orgverifypages.Submission{ID: st.Latest.ID, CreditCode: cnid.Mask(st.Latest.CreditCode), OrgName: st.Latest.OrgName,
			LegalRep: st.Latest.LegalRep, LicenceType: st.Latest.LicenceType, LicenceBytes: st.Latest.LicenceBytes,
			SubmittedAt: st.Latest.SubmittedAt, ReviewedAt: st.Latest.ReviewedAt, Operator: st.Latest.Source == identitystore.SourceOperator}
	}
	return handlers.Render(c, status, orgverifypages.FormPage(handlers.ViewCtx(c), vm))
}

// Submit is POST /orgs/{id}/verification, a multipart form: credit_code,
// org_name, legal_rep, licence (the file), consent=1. Bad input shows the
// form again with each message beside its field (422); a conflict (the
// verification is already in review or done) at the top of the form.
func (h *Handler) Submit(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "organisation")
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, formFields...)
	licence, err := readLicence(c)
	if err != nil {
		return err
	}
	_, err = Orgs(h.Handler).Submit(c.Request().Context(), handlers.CurrentUser(c), id, identity.OrgSubmission{
		CreditCode: f.Get(identity.OrgFieldCreditCode), OrgName: f.Get(identity.OrgFieldOrgName), LegalRep: f.Get(identity.OrgFieldLegalRep),
		Licence: licence, Consent: f.Get(identity.OrgFieldConsent) == "1",
	})
	if err != nil {
		if f, ok := handlers.WithErrors(c, f, err); ok {
			return h.render(c, http.StatusUnprocessableEntity, f)
		}
		if ae, ok := apperr.As(err); ok && ae.Code == apperr.ECONFLICT && ae.Key != "" {
			f.Errors["_form"] = handlers.ViewCtx(c).T(ae.Key, ae.Args...)
			return h.render(c, http.StatusConflict, f)
		}
		return err
	}
	h.Flash(c, "orgverify.flash.submitted")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.OrgVerify, c.Param("id")))
}

// readLicence reads the form's licence file, at most one byte more than
// the largest accepted (so that the use case can say it is too large);
// no file is an empty licence (the use case says it is missing). The
// form was parsed in memory by the input guard (its whole body is within
// the route's limit), so the file is never written to disk in clear.
func readLicence(c echo.Context) ([]byte, error) {
	fh, err := c.FormFile(identity.OrgFieldLicence)
	if errors.Is(err, http.ErrMissingFile) || errors.Is(err, http.ErrNotMultipart) {
		return nil, nil
	}
	if err != nil {
		return nil, apperr.Malformed("licence")
	}
	file, err := fh.Open()
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return io.ReadAll(io.LimitReader(file, identity.MaxLicenceBytes+1))
}
