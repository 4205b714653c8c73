// Package orgverify holds the handlers of organisation verification
// (企业认证): the organisation's verification page and its multipart
// form, the admin's review page, the audited licence download and the
// decisions; and the view models other pages embed (the organisation
// page's card, the admin hub's queue, the payouts' hold notices).
package orgverify

import (
	"suanli/handlers"
	"suanli/identity"
	"suanli/models"
)

// Handler serves organisation verification on the shared dependencies.
type Handler struct{ *handlers.Handler }

// MaxSubmitBytes is the most a submission's request body may be (the
// route's body limit): a licence of identity.MaxLicenceBytes with room
// for the form's fields, and a little more, so that a file somewhat too
// large is answered beside its field (422) rather than as a 413.
const MaxSubmitBytes = identity.MaxLicenceBytes + 1<<20

// Orgs is the use case on the handler's dependencies: the identity
// service's PII key ring (none: submissions answer 503).
func Orgs(h *handlers.Handler) *identity.Orgs {
	o := &identity.Orgs{DB: h.DB}
	if h.Accounts != nil {
		o.BaseURL = h.Accounts.BaseURL
	}
	if h.Identity != nil {
		o.Ring = h.Identity.Ring
	}
	return o
}

// payoutsWait reports whether the organisation is a provider whose
// payouts wait for its verification (the payout gate's own setting).
func payoutsWait(h *handlers.Handler, org *models.Org) bool {
	return org.Kind == models.OrgProvider && h.Payouts != nil && h.Payouts.Gated()
}
