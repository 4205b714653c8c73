package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"suanli/agent"
	"suanli/handlers"
	"suanli/handlers/account"
	adminconsole "suanli/handlers/admin"
	"suanli/handlers/agentapi"
	"suanli/handlers/apispec"
	"suanli/handlers/bidding"
	"suanli/handlers/browser"
	identityapi "suanli/handlers/identity"
	invoiceapi "suanli/handlers/invoices"
	"suanli/handlers/launchapi"
	"suanli/handlers/orgapi"
	"suanli/handlers/orgverify"
	"suanli/handlers/provider"
	"suanli/handlers/rentalwatch"
	"suanli/handlers/shareapi"
	"suanli/handlers/slaapi"
	standingorderapi "suanli/handlers/standingorders"
	"suanli/handlers/topupapi"
	usageapi "suanli/handlers/usage"
	volumeapi "suanli/handlers/volumes"
	"suanli/handlers/witnessapi"
	"suanli/routenames"
	"suanli/static"
	"suanli/tunnel"
)

// route is one row of the route table.
type route struct {
	method, path, name string
	handler            echo.HandlerFunc
	access             int
}

// anyMethod, as a route's method, registers it for every method of
// proxiedMethods: a container's app may answer any of them.
const anyMethod = "*"

// proxiedMethods are the methods a route of anyMethod takes (WebDAV's and
// CONNECT are not passed to containers).
var proxiedMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// How a route's requests pass the middleware (rawRoutes).
const (
	// rawBody: the handler reads a multipart body itself, streaming (a
	// file upload): no body limit and no form parsing here; the handler
	// checks the CSRF token (the form's first part, or X-CSRF-Token)
	// through handlers.CSRFCheckKey before anything else of the body.
	rawBody = 1 + iota
	// rawProxy: passed on to a container through a tunnel, as it is: on
	// top of rawBody, the session is only read (a proxied app's every
	// request would otherwise write it), and the answer is the
	// container's own (no gzip, no Content-Security-Policy or caching
	// headers of the marketplace's pages; the proxy adds its own).
	rawProxy
)

// rawRoutes are the routes, by name, that do not take the middleware's
// usual handling of bodies, sessions and answers.
var rawRoutes = map[string]int{
	routenames.RentalsJupyterRoot:    rawProxy,
	routenames.RentalsJupyter:        rawProxy,
	routenames.RentalsPortRoot:       rawProxy,
	routenames.RentalsPort:           rawProxy,
	routenames.RentalsTerminalSocket: rawProxy,
	routenames.RentalsLogs:           rawProxy,
	routenames.RentalsFilesList:      rawProxy,
	routenames.RentalsFilesDownload:  rawProxy,
	routenames.ShareRoot:             rawProxy,
	routenames.Share:                 rawProxy,
	routenames.AgentTunnel:           rawProxy,
	// Only as a multipart form (see rawKind): an urlencoded post to it is
	// an ordinary form, checked and refused as any other.
	routenames.RentalsFilesUpload: rawBody,
	// The API's side of the same: the output and files pass through the
	// node's tunnel as the pages' do; an upload streams its multipart body.
	routenames.APIRentalsLogs:          rawProxy,
	routenames.APIRentalsFilesList:     rawProxy,
	routenames.APIRentalsFilesDownload: rawProxy,
	routenames.APIRentalsFilesUpload:   rawBody,
	// An issued invoice's file, uploaded by a platform admin (multipart;
	// the handler bounds the body: handlers/invoices).
	routenames.AdminInvoicesIssue: rawBody,
}

// routes is the one route table of the application.
func routes(h *handlers.Handler, m *metrics) []route {
	acc := &account.Handler{Handler: h}
	ph := &provider.Handler{Handler: h}
	vh := &volumeapi.Handler{Handler: h}
	uh := &usageapi.Handler{Handler: h}
	soh := &standingorderapi.Handler{Handler: h}
	bh := &bidding.Handler{Handler: h}
	agh := &agentapi.Handler{Handler: h}
	wah := &witnessapi.Handler{Handler: h}
	wh := browser.New(h)
	oh := &orgapi.Handler{Handler: h}
	shh := &shareapi.Handler{Handler: h}
	lah := &launchapi.Handler{Handler: h}
	// The API's reads of what console pages show (web/parity_test.go).
	tuh := &topupapi.Handler{Handler: h}
	slh := &slaapi.Handler{Handler: h}
	// The admin console's handlers (package admin; the access level of its
	// routes is also called admin, hence the import's name).
	ah := &adminconsole.Handler{Handler: h}
	// A rental followed cheaply: the live block's event stream and the
	// API's conditional GET.
	rwh := &rentalwatch.Handler{Handler: h}
	// Organisation verification (企业认证): the organisation's page and
	// form, the admins' review.
	ovh := &orgverify.Handler{Handler: h}
	// Real-name verification (实名认证): the user's page and API, the
	// admins' review and SMS outbox.
	rnh := &identityapi.Handler{Handler: h}
	// VAT invoices (发票): the organisation's page and API, the admins' queue.
	ih := &invoiceapi.Handler{Handler: h}
	return []route{
		{"GET", "/", routenames.Home, h.OffersList, public},
		{"GET", "/offers", routenames.OffersList, h.OffersList, public},
		{"GET", "/offers/:id", routenames.OffersShow, h.OfferShow, public},
		{"GET", "/datacenters/:slug", routenames.DatacentersShow, h.DatacenterShow, public},

		// The SLA terms, rendered from the table the credits are computed with.
		{"GET", "/sla", routenames.SLA, h.SLAShow, public},

		// Buy versus rent: a calculator over the cheapest live offers.
		{"GET", "/tco", routenames.TCO, h.TCO, public},
		{"GET", "/lang/:lang", routenames.LangSwitch, h.LangSwitch, public},

		{"GET", "/signup", routenames.AuthSignup, acc.SignupForm, public},
		{"POST", "/signup", routenames.AuthSignupPost, acc.Signup, public},
		{"GET", "/login", routenames.AuthLogin, acc.LoginForm, public},
		{"POST", "/login", routenames.AuthLoginPost, acc.Login, public},
		{"POST", "/logout", routenames.AuthLogout, acc.Logout, public},
		{"GET", "/verify", routenames.AuthVerify, acc.Verify, public},
		{"POST", "/verify", routenames.AuthVerifyPost, acc.VerifyPassword, public},
		{"GET", "/password/forgot", routenames.PasswordForgot, acc.ForgotForm, public},
		{"POST", "/password/forgot", routenames.PasswordForgotPost, acc.Forgot, public},
		{"GET", "/password/reset", routenames.PasswordReset, acc.ResetForm, public},
		{"POST", "/password/reset", routenames.PasswordResetPost, acc.Reset, public},

		{"GET", "/account", routenames.AccountShow, acc.AccountShow, user},
		{"POST", "/account/password", routenames.AccountPassword, acc.AccountPassword, user},
		{"POST", "/account/verify", routenames.AccountResend, acc.AccountResend, user},
		{"POST", "/account/sessions/end", routenames.AccountSessionsEnd, acc.AccountEndSessions, user},
		{"POST", "/account/tokens", routenames.TokensCreate, acc.TokenCreate, user},
		{"POST", "/account/tokens/:id/revoke", routenames.TokensRevoke, acc.TokenRevoke, user},
		{"GET", "/account/real-name", routenames.RealNameShow, rnh.Show, user},
		{"POST", "/account/real-name", routenames.RealNameStart, rnh.Start, user},
		{"POST", "/account/real-name/confirm", routenames.RealNameConfirm, rnh.Confirm, user},
		{"POST", "/account/real-name/resend", routenames.RealNameResend, rnh.Resend, user},
		{"POST", "/account/real-name/withdraw", routenames.RealNameWithdraw, rnh.Withdraw, user},
		{"POST", "/orgs", routenames.OrgsCreate, acc.OrgCreate, user},
		{"GET", "/orgs/:id", routenames.OrgsShow, acc.OrgShow, user},
		{"POST", "/orgs/:id/invitations", routenames.OrgsInvite, acc.OrgInvite, user},
		{"POST", "/orgs/:id/invitations/:iid/revoke", routenames.OrgsInvitationsRevoke, acc.OrgRevokeInvitation, user},
		{"POST", "/orgs/:id/members/:uid/remove", routenames.OrgsMembersRemove, acc.OrgRemoveMember, user},
		{"POST", "/orgs/:id/budget", routenames.OrgsBudget, acc.OrgBudget, user},
		{"POST", "/orgs/:id/idle-policy", routenames.OrgsIdlePolicy, acc.OrgIdlePolicy, user},
		{"GET", "/orgs/:id/verification", routenames.OrgVerify, ovh.Show, user},
		{"POST", "/orgs/:id/verification", routenames.OrgVerifySubmit, ovh.Submit, user},
		{"GET", "/labs/apply", routenames.LabsApply, acc.LabApplyForm, user},
		{"POST", "/labs/apply", routenames.LabsApplyPost, acc.LabApply, user},
		{"GET", "/labs/confirm", routenames.LabsConfirm, acc.LabConfirm, user},
		{"GET", "/invitations/accept", routenames.InvitationsAccept, acc.InviteShow, user},
		{"POST", "/invitations/accept", routenames.InvitationsAcceptPost, acc.InviteAccept, user},
		{"POST", "/invitations/:iid/accept", routenames.InvitationsAcceptID, acc.InvitationAccept, user},

		// The navigation's wallet: the user's own, by redirect.
		{"GET", "/wallet", routenames.WalletMine, acc.WalletMine, user},
		{"GET", "/orgs/:id/wallet", routenames.WalletShow, acc.WalletShow, user},
		{"POST", "/orgs/:id/wallet/topups", routenames.WalletTopup, acc.WalletTopup, user},
		{"POST", "/orgs/:id/wallet/refunds", routenames.WalletRefund, acc.WalletRefund, user},
		{"POST", "/orgs/:id/billing", routenames.OrgsBilling, acc.WalletBilling, user},
		{"POST", "/orgs/:id/alerts", routenames.OrgsAlerts, acc.WalletAlerts, user},
		{"GET", "/orgs/:id/wallet/ledger.csv", routenames.WalletCSV, acc.WalletCSV, user},
		{"GET", "/topups/:id", routenames.TopupsShow, acc.TopupShow, user},
		// VAT invoices (发票) of the wallet's cash top-ups.
		{"GET", "/orgs/:id/invoices", routenames.InvoicesPage, ih.Page, user},
		{"POST", "/orgs/:id/invoices", routenames.InvoicesCreate, ih.Create, user},
		{"GET", "/orgs/:id/invoices.csv", routenames.InvoicesCSV, ih.CSV, user},
		{"POST", "/orgs/:id/invoices/:invoice_id/cancel", routenames.InvoicesCancel, ih.Cancel, user},
		{"GET", "/orgs/:id/invoices/:invoice_id/file", routenames.InvoicesFile, ih.File, user},
		{"POST", "/webhooks/stripe", routenames.WebhooksStripe, acc.StripeWebhook, public},

		{"GET", "/offers/:id/rent", routenames.RentalsNew, h.RentNew, user},
		{"POST", "/offers/:id/rent", routenames.RentalsCreate, h.RentCreate, user},
		{"GET", "/console", routenames.Console, h.Console, user},
		// Standing orders (「有卡就租」): rent (or announce) GPUs as soon as they are free.
		{"GET", "/standing-orders", routenames.StandingOrders, soh.Page, user},
		{"POST", "/standing-orders", routenames.StandingOrdersCreate, soh.Create, user},
		{"GET", "/standing-orders/notices", routenames.StandingOrdersNotices, soh.Notices, user},
		{"POST", "/standing-orders/:id/cancel", routenames.StandingOrdersCancel, soh.Cancel, user},
		{"GET", "/rentals/:id", routenames.RentalsShow, h.RentalShow, user},
		{"GET", "/rentals/:id/live", routenames.RentalsLive, h.RentalLive, user},
		{"GET", "/rentals/:id/events", routenames.RentalsEvents, rwh.Events, user},
		{"GET", "/rentals/:id/usage", routenames.RentalsUsage, uh.RentalUsage, user},
		{"POST", "/rentals/:id/stop", routenames.RentalsStop, h.RentalStop, user},
		{"POST", "/rentals/:id/idle-stop", routenames.RentalsIdleStop, h.RentalIdleStop, user},
		{"POST", "/rentals/:id/bid", routenames.RentalsBid, bh.RentalBid, user},
		{"POST", "/rentals/:id/start", routenames.RentalsStart, h.RentalStart, user},
		{"POST", "/rentals/:id/release", routenames.RentalsRelease, h.RentalRelease, user},
		{"POST", "/rentals/:id/change", routenames.RentalsChange, h.RentalChange, user},

		// Browser access to a running rental's container through its
		// node's tunnel (ANY: every method, WebSocket upgrades included).
		{anyMethod, "/rentals/:id/jupyter", routenames.RentalsJupyterRoot, wh.JupyterRoot, user},
		{anyMethod, "/rentals/:id/jupyter/*", routenames.RentalsJupyter, wh.Jupyter, user},
		{anyMethod, "/rentals/:id/ports/:port", routenames.RentalsPortRoot, wh.PortRoot, user},
		{anyMethod, "/rentals/:id/ports/:port/*", routenames.RentalsPort, wh.Port, user},
		{"GET", "/rentals/:id/terminal", routenames.RentalsTerminal, wh.TerminalPage, user},
		{"GET", "/rentals/:id/terminal/ws", routenames.RentalsTerminalSocket, wh.TerminalSocket, user},
		{"GET", "/rentals/:id/logs", routenames.RentalsLogs, wh.Logs, user},
		{"GET", "/rentals/:id/files", routenames.RentalsFiles, wh.FilesPage, user},
		{"GET", "/rentals/:id/files/list", routenames.RentalsFilesList, wh.FilesList, user},
		{"GET", "/rentals/:id/files/download", routenames.RentalsFilesDownload, wh.FileDownload, user},
		{"POST", "/rentals/:id/files", routenames.RentalsFilesUpload, wh.FileUpload, user},
		{"POST", "/rentals/:id/shares", routenames.RentalsSharesCreate, wh.ShareCreate, user},
		{"POST", "/rentals/:id/shares/:sid/revoke", routenames.RentalsSharesRevoke, wh.ShareRevoke, user},
		// Where a rental's apps origin (--apps-domain) trades the ticket
		// the marketplace handed out for its own session.
		{"GET", "/rentals/:id/.suanli-app", routenames.AppsLogin, wh.AppsLogin, public},
		// A share link opens one declared port to anyone who holds it.
		{anyMethod, "/share/:token", routenames.ShareRoot, wh.SharedRoot, public},
		{anyMethod, "/share/:token/*", routenames.Share, wh.Shared, public},

		{"GET", "/admin", routenames.AdminHome, ah.AdminHome, admin},
		{"POST", "/admin/topups/:id/confirm", routenames.AdminTopupsConfirm, ah.AdminConfirmTopup, admin},
		{"POST", "/admin/refunds/:id/paid", routenames.AdminRefundsPaid, ah.AdminRefundPaid, admin},
		{"POST", "/admin/orgs/:id/review", routenames.AdminReview, ah.AdminReview, admin},
		{"GET", "/admin/org-verifications/:id", routenames.AdminOrgVerify, ovh.AdminShow, admin},
		{"GET", "/admin/org-verifications/:id/licence", routenames.AdminOrgVerifyLicence, ovh.AdminLicence, admin},
		{"POST", "/admin/org-verifications/:id/approve", routenames.AdminOrgVerifyApprove, ovh.AdminApprove, admin},
		{"POST", "/admin/org-verifications/:id/reject", routenames.AdminOrgVerifyReject, ovh.AdminReject, admin},
		{"POST", "/admin/org-verifications/:id/reset", routenames.AdminOrgVerifyReset, ovh.AdminReset, admin},
		// Admin console (queues, users and organisations, payouts, jobs, audit log).
		{"GET", "/admin/users", routenames.AdminUsers, ah.AdminUsers, admin},
		{"POST", "/admin/users/:id/suspend", routenames.AdminUsersSuspend, ah.AdminSuspendUser, admin},
		{"POST", "/admin/users/:id/unsuspend", routenames.AdminUsersUnsuspend, ah.AdminUnsuspendUser, admin},
		{"POST", "/admin/users/:id/orgs-per-day", routenames.AdminUsersOrgsPerDay, ah.AdminOrgsPerDay, admin},
		{"GET", "/admin/orgs", routenames.AdminOrgs, ah.AdminOrgs, admin},
		{"POST", "/admin/orgs/:id/suspend", routenames.AdminOrgsSuspend, ah.AdminSuspendOrg, admin},
		{"POST", "/admin/orgs/:id/unsuspend", routenames.AdminOrgsUnsuspend, ah.AdminUnsuspendOrg, admin},
		{"GET", "/admin/payouts", routenames.AdminPayouts, ah.AdminPayouts, admin},
		{"POST", "/admin/payouts/run", routenames.AdminPayoutsRun, ah.AdminPayoutsRun, admin},
		{"POST", "/admin/payouts/:id/paid", routenames.AdminPayoutsPaid, ah.AdminPayoutPaid, admin},
		{"POST", "/admin/payouts/:id/failed", routenames.AdminPayoutsFailed, ah.AdminPayoutFailed, admin},
		{"GET", "/admin/outbox", routenames.AdminOutbox, ah.AdminOutbox, admin},
		{"GET", "/admin/jobs", routenames.AdminJobs, ah.AdminJobs, admin},
		{"GET", "/admin/audit", routenames.AdminAudit, ah.AdminAudit, admin},
		{"GET", "/admin/audit.csv", routenames.AdminAuditCSV, ah.AdminAuditCSV, admin},
		{"GET", "/admin/sms", routenames.AdminSMS, rnh.AdminSMS, admin},
		{"GET", "/admin/users/:id/real-name", routenames.AdminRealName, rnh.AdminShow, admin},
		{"POST", "/admin/users/:id/real-name/reveal", routenames.AdminRealNameReveal, rnh.AdminReveal, admin},
		{"POST", "/admin/users/:id/real-name/reject", routenames.AdminRealNameReject, rnh.AdminReject, admin},
		{"GET", "/admin/invoices", routenames.AdminInvoices, ih.AdminList, admin},
		{"GET", "/admin/invoices.csv", routenames.AdminInvoicesCSV, ih.AdminCSV, admin},
		{"GET", "/admin/invoices/:id", routenames.AdminInvoicesShow, ih.AdminShow, admin},
		{"POST", "/admin/invoices/:id/issue", routenames.AdminInvoicesIssue, ih.AdminIssue, admin},
		{"POST", "/admin/invoices/:id/reject", routenames.AdminInvoicesReject, ih.AdminReject, admin},
		{"POST", "/admin/invoices/:id/void", routenames.AdminInvoicesVoid, ih.AdminVoid, admin},
		{"POST", "/admin/invoices/:id/reverse", routenames.AdminInvoicesReverse, ih.AdminReverse, admin},

		// Provider portal pages (/provider/…).
		{"GET", "/provider", routenames.ProviderHome, ph.ProviderHome, user},
		{"POST", "/provider/signup", routenames.ProviderSignup, ph.ProviderSignup, user},
		{"GET", "/provider/:pid", routenames.ProviderDashboard, ph.ProviderDashboard, user},
		{"GET", "/provider/:pid/profile", routenames.ProviderProfile, ph.ProviderProfile, user},
		{"POST", "/provider/:pid/profile", routenames.ProviderProfilePost, ph.ProviderProfileSave, user},
		{"GET", "/provider/:pid/datacenters", routenames.ProviderDatacenters, ph.ProviderDatacenters, user},
		{"POST", "/provider/:pid/datacenters", routenames.ProviderDatacentersCreate, ph.ProviderDatacenterCreate, user},
		{"GET", "/provider/:pid/datacenters/:id/edit", routenames.ProviderDatacentersEdit, ph.ProviderDatacenterEdit, user},
		{"POST", "/provider/:pid/datacenters/:id", routenames.ProviderDatacentersUpdate, ph.ProviderDatacenterUpdate, user},
		{"GET", "/provider/:pid/nodes", routenames.ProviderNodes, ph.ProviderNodes, user},
		{"GET", "/provider/:pid/nodes/live", routenames.ProviderNodesLive, ph.ProviderNodesLive, user},
		{"POST", "/provider/:pid/nodes", routenames.ProviderNodesCreate, ph.ProviderNodeCreate, user},
		{"GET", "/provider/:pid/nodes/:id", routenames.ProviderNodesShow, ph.ProviderNode, user},
		{"GET", "/provider/:pid/nodes/:id/live", routenames.ProviderNodesLiveOne, ph.ProviderNodeLive, user},
		{"POST", "/provider/:pid/nodes/:id/status", routenames.ProviderNodesStatus, ph.ProviderNodeStatus, user},
		{"POST", "/provider/:pid/nodes/:id/token", routenames.ProviderNodesToken, ph.ProviderNodeToken, user},
		{"GET", "/provider/:pid/offers", routenames.ProviderOffers, ph.ProviderOffers, user},
		{"GET", "/provider/:pid/offers/new", routenames.ProviderOffersNew, ph.ProviderOfferNew, user},
		{"POST", "/provider/:pid/offers", routenames.ProviderOffersCreate, ph.ProviderOfferCreate, user},
		{"GET", "/provider/:pid/offers/:id/edit", routenames.ProviderOffersEdit, ph.ProviderOfferEdit, user},
		{"POST", "/provider/:pid/offers/:id", routenames.ProviderOffersUpdate, ph.ProviderOfferUpdate, user},
		{"POST", "/provider/:pid/offers/:id/status", routenames.ProviderOffersStatus, ph.ProviderOfferStatus, user},
		{"GET", "/provider/:pid/capacity", routenames.ProviderCapacity, ph.ProviderCapacity, user},
		{"GET", "/provider/:pid/earnings", routenames.ProviderEarnings, ph.ProviderEarnings, user},
		{"GET", "/provider/:pid/earnings/statement", routenames.ProviderStatement, ph.ProviderStatement, user},
		{"GET", "/provider/:pid/earnings/statement.csv", routenames.ProviderStatementCSV, ph.ProviderStatementCSV, user},
		{"POST", "/provider/:pid/connect", routenames.ProviderConnect, ph.ProviderConnect, user},
		{"GET", "/provider/:pid/connect/return", routenames.ProviderConnectReturn, ph.ProviderConnectReturn, user},

		// Provider API (/api/v1/provider/…), with the same API tokens.
		{"GET", "/api/v1/provider/datacenters", routenames.APIProviderDatacentersList, ph.APIProviderDatacentersList, user},
		{"POST", "/api/v1/provider/datacenters", routenames.APIProviderDatacentersCreate, ph.APIProviderDatacenterCreate, user},
		{"GET", "/api/v1/provider/nodes", routenames.APIProviderNodesList, ph.APIProviderNodesList, user},
		{"POST", "/api/v1/provider/nodes", routenames.APIProviderNodesCreate, ph.APIProviderNodeCreate, user},
		{"GET", "/api/v1/provider/nodes/:id", routenames.APIProviderNodesShow, ph.APIProviderNodeShow, user},
		{"GET", "/api/v1/provider/offers", routenames.APIProviderOffersList, ph.APIProviderOffersList, user},
		{"POST", "/api/v1/provider/offers", routenames.APIProviderOffersCreate, ph.APIProviderOfferCreate, user},
		{"GET", "/api/v1/provider/offers/:id", routenames.APIProviderOffersShow, ph.APIProviderOfferShow, user},
		{"PATCH", "/api/v1/provider/offers/:id", routenames.APIProviderOffersUpdate, ph.APIProviderOfferUpdate, user},
		{"POST", "/api/v1/provider/signup", routenames.APIProviderSignup, ph.APIProviderSignup, user},
		{"GET", "/api/v1/provider/profile", routenames.APIProviderProfile, ph.APIProviderProfileShow, user},
		{"PUT", "/api/v1/provider/profile", routenames.APIProviderProfileUpdate, ph.APIProviderProfileUpdate, user},
		{"PUT", "/api/v1/provider/datacenters/:id", routenames.APIProviderDatacentersUpdate, ph.APIProviderDatacenterUpdate, user},
		{"PATCH", "/api/v1/provider/nodes/:id", routenames.APIProviderNodesUpdate, ph.APIProviderNodeUpdate, user},
		{"POST", "/api/v1/provider/nodes/:id/token", routenames.APIProviderNodesToken, ph.APIProviderNodeToken, user},
		{"POST", "/api/v1/provider/connect", routenames.APIProviderConnect, ph.APIProviderConnect, user},
		{"GET", "/api/v1/provider/statement", routenames.APIProviderStatement, ph.APIProviderStatement, user},
		{"GET", "/api/v1/provider/capacity", routenames.APIProviderCapacity, ph.APIProviderCapacity, user},
		{"GET", "/api/v1/providers", routenames.APIProvidersMine, ph.APIProvidersMine, user},

		// The API's OpenAPI document, and its reference page rendered from it.
		{"GET", "/api/v1/openapi.json", routenames.APIOpenAPI, h.APIOpenAPI, public},
		{"GET", "/api/v1/openapi-3.0.json", routenames.APIOpenAPI30, apispec.OpenAPI30, public},
		{"GET", "/api/docs", routenames.APIDocs, h.APIDocs, public},

		{"GET", "/api/v1/offers", routenames.APIOffersList, h.APIOffersList, public},
		{"GET", "/api/v1/offers/:id", routenames.APIOffersShow, h.APIOfferShow, public},
		{"GET", "/api/v1/offers/:id/quote", routenames.APIOffersQuote, h.APIOfferQuote, public},
		{"GET", "/api/v1/images", routenames.APIImagesList, h.APIImagesList, public},
		// What launchers pull: the whole market, compact, and its instance types.
		{"GET", "/api/v1/catalog", routenames.APICatalog, lah.Catalog, public},
		{"GET", "/api/v1/instance-types", routenames.APIInstanceTypes, lah.InstanceTypes, public},
		{"GET", "/api/v1/me", routenames.APIMe, acc.APIMe, user},
		{"POST", "/api/v1/me/real-name", routenames.APIMeRealName, rnh.APIStart, user},
		{"POST", "/api/v1/me/real-name/confirm", routenames.APIMeRealNameConfirm, rnh.APIConfirm, user},
		{"DELETE", "/api/v1/me/real-name", routenames.APIMeRealNameWithdraw, rnh.APIWithdraw, user},
		{"GET", "/api/v1/wallet", routenames.APIWallet, acc.APIWallet, user},
		{"GET", "/api/v1/wallet/ledger", routenames.APIWalletLedger, acc.APIWalletLedger, user},
		{"POST", "/api/v1/wallet/topups", routenames.APIWalletTopups, acc.APITopupCreate, user},
		{"GET", "/api/v1/wallet/topups", routenames.APIWalletTopupsList, tuh.APITopupsList, user},
		{"GET", "/api/v1/wallet/topups/:id", routenames.APIWalletTopupsShow, tuh.APITopupShow, user},
		{"GET", "/api/v1/wallet/alerts", routenames.APIWalletAlerts, acc.APIWalletAlerts, user},
		{"POST", "/api/v1/wallet/alerts", routenames.APIWalletAlertsSet, acc.APIWalletAlertsSet, user},
		{"GET", "/api/v1/rentals", routenames.APIRentalsList, lah.ListRentals, user},
		{"POST", "/api/v1/rentals", routenames.APIRentalsCreate, lah.CreateRental, user},
		{"GET", "/api/v1/rentals/:id", routenames.APIRentalsShow, rwh.APIRentalShow, user},
		{"GET", "/api/v1/rentals/:id/usage", routenames.APIRentalsUsage, uh.APIRentalUsage, user},
		{"GET", "/api/v1/rentals/:id/sla", routenames.APIRentalsSLA, slh.APIRentalSLA, user},
		{"POST", "/api/v1/rentals/:id/stop", routenames.APIRentalsStop, h.APIRentalStop, user},
		{"POST", "/api/v1/rentals/:id/idle-stop", routenames.APIRentalsIdleStop, h.APIRentalIdleStop, user},
		{"POST", "/api/v1/rentals/:id/bid", routenames.APIRentalsBid, bh.APIRentalBid, user},
		{"POST", "/api/v1/rentals/:id/change", routenames.APIRentalsChange, h.APIRentalChange, user},
		{"POST", "/api/v1/rentals/:id/start", routenames.APIRentalsStart, h.APIRentalStart, user},
		{"POST", "/api/v1/rentals/:id/release", routenames.APIRentalsRelease, h.APIRentalRelease, user},
		// The container's output, files and share links (the workspace's
		// console actions; its files and output pass through the node's
		// tunnel, as the pages' do).
		{"GET", "/api/v1/rentals/:id/logs", routenames.APIRentalsLogs, wh.Logs, user},
		{"GET", "/api/v1/rentals/:id/files", routenames.APIRentalsFilesList, wh.FilesList, user},
		{"GET", "/api/v1/rentals/:id/files/download", routenames.APIRentalsFilesDownload, wh.FileDownload, user},
		{"POST", "/api/v1/rentals/:id/files", routenames.APIRentalsFilesUpload, wh.FileUpload, user},
		{"GET", "/api/v1/rentals/:id/shares", routenames.APIRentalsSharesList, shh.APISharesList, user},
		{"POST", "/api/v1/rentals/:id/shares", routenames.APIRentalsSharesCreate, shh.APIShareCreate, user},
		{"DELETE", "/api/v1/rentals/:id/shares/:sid", routenames.APIRentalsSharesRevoke, shh.APIShareRevoke, user},
		// Organisations and labs: members, invitations, budget, idle policy.
		{"POST", "/api/v1/orgs", routenames.APIOrgsCreate, oh.APIOrgCreate, user},
		{"GET", "/api/v1/orgs/:id", routenames.APIOrgsShow, oh.APIOrgShow, user},
		{"PUT", "/api/v1/orgs/:id/budget", routenames.APIOrgsBudget, oh.APIOrgBudget, user},
		{"PUT", "/api/v1/orgs/:id/idle-policy", routenames.APIOrgsIdlePolicy, oh.APIOrgIdlePolicy, user},
		{"POST", "/api/v1/orgs/:id/invitations", routenames.APIOrgsInvite, oh.APIInvitationCreate, user},
		{"DELETE", "/api/v1/orgs/:id/invitations/:iid", routenames.APIOrgsInvitationsRevoke, oh.APIInvitationRevoke, user},
		{"DELETE", "/api/v1/orgs/:id/members/:uid", routenames.APIOrgsMembersRemove, oh.APIMemberRemove, user},
		{"GET", "/api/v1/orgs/:id/verification", routenames.APIOrgVerify, ovh.APIShow, user},
		{"POST", "/api/v1/orgs/:id/verification", routenames.APIOrgVerifySubmit, ovh.APISubmit, user},
		{"GET", "/api/v1/invitations", routenames.APIInvitationsMine, oh.APIMyInvitations, user},
		{"POST", "/api/v1/invitations/accept", routenames.APIInvitationsAcceptToken, oh.APIInvitationAcceptToken, user},
		{"POST", "/api/v1/invitations/:id/accept", routenames.APIInvitationsAccept, oh.APIInvitationAccept, user},
		{"POST", "/api/v1/labs", routenames.APILabsApply, oh.APILabApply, user},
		{"GET", "/api/v1/wallet/refunds", routenames.APIWalletRefunds, oh.APIRefundsList, user},
		{"POST", "/api/v1/wallet/refunds", routenames.APIWalletRefundsCreate, oh.APIRefundCreate, user},
		{"GET", "/api/v1/wallet/billing", routenames.APIWalletBilling, oh.APIBillingShow, user},
		{"PUT", "/api/v1/wallet/billing", routenames.APIWalletBillingSet, oh.APIBillingSet, user},
		{"GET", "/api/v1/orgs/:id/invoices", routenames.APIInvoicesList, ih.APIList, user},
		{"POST", "/api/v1/orgs/:id/invoices", routenames.APIInvoicesCreate, ih.APICreate, user},
		{"GET", "/api/v1/orgs/:id/invoices/:invoice_id", routenames.APIInvoicesShow, ih.APIShow, user},
		{"POST", "/api/v1/orgs/:id/invoices/:invoice_id/cancel", routenames.APIInvoicesCancel, ih.APICancel, user},
		{"GET", "/api/v1/orgs/:id/invoices/:invoice_id/file", routenames.APIInvoicesFile, ih.APIFile, user},
		// The caller's API tokens: listed and revoked (made on /account only).
		{"GET", "/api/v1/tokens", routenames.APITokensList, acc.APITokensList, user},
		{"DELETE", "/api/v1/tokens/:id", routenames.APITokensRevoke, acc.APITokenRevoke, user},
		{"GET", "/api/v1/volumes", routenames.APIVolumesList, vh.APIVolumesList, user},
		{"POST", "/api/v1/volumes", routenames.APIVolumesCreate, vh.APIVolumeCreate, user},
		{"DELETE", "/api/v1/volumes/:id", routenames.APIVolumesDelete, vh.APIVolumeDelete, user},
		{"GET", "/api/v1/standing-orders", routenames.APIStandingOrdersList, soh.APIList, user},
		{"POST", "/api/v1/standing-orders", routenames.APIStandingOrdersCreate, soh.APICreate, user},
		{"DELETE", "/api/v1/standing-orders/:id", routenames.APIStandingOrdersDelete, soh.APIDelete, user},

		// Benchmark reports are public; running one on demand is for platform admins.
		{"GET", "/benchmarks/:id", routenames.BenchmarksShow, h.BenchmarkShow, public},
		{"GET", "/nodes/:id/benchmarks", routenames.NodesBenchmarks, h.NodeBenchmarks, public},
		{"GET", "/api/v1/benchmarks/:id", routenames.APIBenchmarksShow, h.APIBenchmarkShow, public},
		{"GET", "/api/v1/nodes/:id/benchmarks", routenames.APINodesBenchmarks, h.APINodeBenchmarks, public},
		{"POST", "/api/v1/nodes/:id/benchmarks", routenames.APINodesBenchmarksRequest, h.APIRequestBenchmark, admin},

		// Node agents authenticate with their node credential, not a user.
		{"POST", "/agent/v1/heartbeat", routenames.AgentHeartbeat, agh.AgentHeartbeat, public},
		{"GET", "/agent/v1/tasks", routenames.AgentTasks, agh.AgentTasks, public},
		{"POST", "/agent/v1/tasks/:id/result", routenames.AgentResult, agh.AgentTaskResult, public},
		{"POST", "/agent/v1/tasks/:id/progress", routenames.AgentProgress, agh.AgentTaskProgress, public},
		// The verifier in a rental's container, with the rental's own credential.
		{"POST", "/witness/v1/rentals/:id/results", routenames.WitnessResults, wah.WitnessResult, public},
		{"GET", tunnel.PathAgent, routenames.AgentTunnel, agh.AgentTunnel, public},

		// The latency endpoint that visitors' browsers time, as on an agent
		// (the demo's in-process nodes report this one).
		{"GET", agent.PathPing, routenames.Ping, h.Ping, public},

		{"GET", "/healthz", routenames.Healthz, h.Healthz, public},
		{"GET", "/readyz", routenames.Readyz, h.Readyz, public},
		{"GET", "/metrics", routenames.Metrics, echo.WrapHandler(m.handler()), public},
		{"GET", static.Prefix + "*", routenames.Static, echo.WrapHandler(http.HandlerFunc(static.ServeHTTP)), public},
	}
}
