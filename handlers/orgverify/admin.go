package orgverify

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
	"suanli/identity"
	"suanli/models/identitystore"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/orgverifypages"
)

// AdminShow is GET /admin/org-verifications/{id}: a submission in full
// for a platform admin's review, with the forms that decide it.
func (h *Handler) AdminShow(c echo.Context) error {
	return h.renderReview(c, http.StatusOK, handlers.ReadForm(c))
}

func (h *Handler) renderReview(c echo.Context, status int, f views.Form) error {
	id, err := handlers.ParseID(c, "id", "organisation verification")
	if err != nil {
		return err
	}
	o := Orgs(h.Handler)
	r, err := o.Review(c.Request().Context(), handlers.CurrentUser(c), id)
	if err != nil {
		return err
	}
	v := r.V
	vm := orgverifypages.ReviewVM{ID: v.ID, OrgID: v.OrgID, OrgName: r.Org.Name, OrgKind: r.Org.Kind, Status: string(v.Status),
		CreditCode: v.CreditCode, RegisteredName: v.OrgName, LegalRep: v.LegalRep, LicenceType: v.LicenceType, LicenceBytes: v.LicenceBytes,
		HasLicence: r.HasLicence, ConsentVersion: v.ConsentVersion, ConsentAt: v.ConsentAt, SubmittedAt: v.SubmittedAt,
		ReviewedAt: v.ReviewedAt, Reason: v.Reason, Operator: v.Source == identitystore.SourceOperator, Form: f, Unavailable: o.Ring == nil,
		LicenceDownload: v.LicenceType == identity.LicencePDF}
	if r.Submitter != nil {
		vm.SubmitterName, vm.SubmitterEmail = r.Submitter.Name, r.Submitter.Email
	}
	// The page shows the credit code in full: no cache keeps a copy.
	c.Response().Header().Set("Cache-Control", "no-store")
	return handlers.Render(c, status, orgverifypages.ReviewPage(handlers.ViewCtx(c), vm))
}

// licenceCSP is the Content-Security-Policy of a served licence file: an
// organisation uploaded it, so it is never a page of this origin
// (sandbox: no script, no same-origin access), whatever is inside it.
const licenceCSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox"

// AdminLicence is GET /admin/org-verifications/{id}/licence: the business
// licence file, for platform admins only. Each answer is a full read,
// recorded in the audit log (who read whose licence) before the file is
// sent; it is never cached (Cache-Control: no-store) and is sandboxed. An
// image opens in the browser; a PDF is saved (attachment) instead,
// because browsers refuse to run their PDF viewer in a sandboxed document.
func (h *Handler) AdminLicence(c echo.Context) error {
	id, err := handlers.ParseID(c, "id", "organisation verification")
	if err != nil {
		return err
	}
	f, err := Orgs(h.Handler).Licence(c.Request().Context(), handlers.CurrentUser(c), id)
	if err != nil {
		return err
	}
	disposition := "inline"
	if f.Kind == identity.LicencePDF {
		disposition = "attachment"
	}
	hd := c.Response().Header()
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", licenceCSP)
	hd.Set("Content-Disposition", disposition+"; filename=\"licence-"+strconv.FormatInt(f.OrgID, 10)+"."+f.Kind+"\"")
	return c.Blob(http.StatusOK, f.ContentType, f.Data)
}

// AdminApprove is POST /admin/org-verifications/{id}/approve.
func (h *Handler) AdminApprove(c echo.Context) error {
	return h.decide(c, "orgverify.flash.approved", func(o *identity.Orgs, id int64, reason string) error {
		return o.Approve(c.Request().Context(), handlers.CurrentUser(c), id)
	})
}

// AdminReject is POST /admin/org-verifications/{id}/reject with the
// reason the organisation is shown (required).
func (h *Handler) AdminReject(c echo.Context) error {
	return h.decide(c, "orgverify.flash.rejected", func(o *identity.Orgs, id int64, reason string) error {
		return o.Reject(c.Request().Context(), handlers.CurrentUser(c), id, reason)
	})
}

// AdminReset is POST /admin/org-verifications/{id}/reset with the reason
// (required): a verified organisation submits again.
func (h *Handler) AdminReset(c echo.Context) error {
	return h.decide(c, "orgverify.flash.reset", func(o *identity.Orgs, id int64, reason string) error {
		return o.Reset(c.Request().Context(), handlers.CurrentUser(c), id, reason)
	})
}

// decide runs a decision; a missing reason shows the review page again
// with the message beside it (422), a decision another admin made first
// at its top (409); success goes back to the hub's queue.
func (h *Handler) decide(c echo.Context, flash string, run func(o *identity.Orgs, id int64, reason string) error) error {
	id, err := handlers.ParseID(c, "id", "organisation verification")
	if err != nil {
		return err
	}
	f := handlers.ReadForm(c, identity.OrgFieldReason)
	if err := run(Orgs(h.Handler), id, f.Get(identity.OrgFieldReason)); err != nil {
		if f, ok := handlers.WithErrors(c, f, err); ok {
			return h.renderReview(c, http.StatusUnprocessableEntity, f)
		}
		if ae, ok := apperr.As(err); ok && ae.Code == apperr.ECONFLICT && ae.Key != "" {
			f.Errors["_form"] = handlers.ViewCtx(c).T(ae.Key, ae.Args...)
			return h.renderReview(c, http.StatusConflict, f)
		}
		return err
	}
	h.Flash(c, flash)
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.AdminHome)+"#queue-orgverify")
}
