// Package routenames names every route of the route table (web/routes.go).
// Views, handlers and tests build URLs from these names with echo's
// Reverse, which answers "" for a name it does not know; a constant
// makes a typo a compile error.
package routenames

// Route names, in the order of the route table; each comment is the route.
const (
	// Home is GET /.
	Home = "home"
	// OffersList is GET /offers.
	OffersList = "offers.list"
	// OffersShow is GET /offers/:id.
	OffersShow = "offers.show"
	// DatacentersShow is GET /datacenters/:slug.
	DatacentersShow = "datacenters.show"
	// SLA is GET /sla.
	SLA = "sla"
	// TCO is GET /tco.
	TCO = "tco"
	// LangSwitch is GET /lang/:lang.
	LangSwitch = "lang.switch"
	// AuthSignup is GET /signup.
	AuthSignup = "auth.signup"
	// AuthSignupPost is POST /signup.
	AuthSignupPost = "auth.signup.post"
	// AuthLogin is GET /login.
	AuthLogin = "auth.login"
	// AuthLoginPost is POST /login.
	AuthLoginPost = "auth.login.post"
	// AuthLogout is POST /logout.
	AuthLogout = "auth.logout"
	// AuthVerify is GET /verify.
	AuthVerify = "auth.verify"
	// AuthVerifyPost is POST /verify.
	AuthVerifyPost = "auth.verify.post"
	// PasswordForgot is GET /password/forgot.
	PasswordForgot = "password.forgot"
	// PasswordForgotPost is POST /password/forgot.
	PasswordForgotPost = "password.forgot.post"
	// PasswordReset is GET /password/reset.
	PasswordReset = "password.reset"
	// PasswordResetPost is POST /password/reset.
	PasswordResetPost = "password.reset.post"
	// AccountShow is GET /account.
	AccountShow = "account.show"
	// RealNameShow is GET /account/real-name: real-name verification.
	RealNameShow = "realname.show"
	// RealNameStart is POST /account/real-name.
	RealNameStart = "realname.start"
	// RealNameConfirm is POST /account/real-name/confirm.
	RealNameConfirm = "realname.confirm"
	// RealNameResend is POST /account/real-name/resend.
	RealNameResend = "realname.resend"
	// RealNameWithdraw is POST /account/real-name/withdraw: the consent
	// withdrawn, the verification's personal information deleted.
	RealNameWithdraw = "realname.withdraw"
	// AccountPassword is POST /account/password.
	AccountPassword = "account.password"
	// AccountResend is POST /account/verify.
	AccountResend = "account.resend"
	// AccountSessionsEnd is POST /account/sessions/end.
	AccountSessionsEnd = "account.sessions.end"
	// TokensCreate is POST /account/tokens.
	TokensCreate = "tokens.create"
	// TokensRevoke is POST /account/tokens/:id/revoke.
	TokensRevoke = "tokens.revoke"
	// OrgsCreate is POST /orgs.
	OrgsCreate = "orgs.create"
	// OrgsShow is GET /orgs/:id.
	OrgsShow = "orgs.show"
	// OrgsInvite is POST /orgs/:id/invitations.
	OrgsInvite = "orgs.invite"
	// OrgsInvitationsRevoke is POST /orgs/:id/invitations/:iid/revoke.
	OrgsInvitationsRevoke = "orgs.invitations.revoke"
	// OrgsMembersRemove is POST /orgs/:id/members/:uid/remove.
	OrgsMembersRemove = "orgs.members.remove"
	// OrgsBudget is POST /orgs/:id/budget.
	OrgsBudget = "orgs.budget"
	// OrgsIdlePolicy is POST /orgs/:id/idle-policy.
	OrgsIdlePolicy = "orgs.idle_policy"
	// OrgVerify is GET /orgs/:id/verification: the organisation's
	// verification (企业认证) and the form that submits it.
	OrgVerify = "orgverify.show"
	// OrgVerifySubmit is POST /orgs/:id/verification (multipart: the
	// business licence file).
	OrgVerifySubmit = "orgverify.submit"
	// LabsApply is GET /labs/apply.
	LabsApply = "labs.apply"
	// LabsApplyPost is POST /labs/apply.
	LabsApplyPost = "labs.apply.post"
	// LabsConfirm is GET /labs/confirm.
	LabsConfirm = "labs.confirm"
	// InvitationsAccept is GET /invitations/accept.
	InvitationsAccept = "invitations.accept"
	// InvitationsAcceptPost is POST /invitations/accept.
	InvitationsAcceptPost = "invitations.accept.post"
	// InvitationsAcceptID is POST /invitations/:iid/accept.
	InvitationsAcceptID = "invitations.accept.id"
	// WalletMine is GET /wallet.
	WalletMine = "wallet.mine"
	// WalletShow is GET /orgs/:id/wallet.
	WalletShow = "wallet.show"
	// WalletTopup is POST /orgs/:id/wallet/topups.
	WalletTopup = "wallet.topup"
	// WalletRefund is POST /orgs/:id/wallet/refunds.
	WalletRefund = "wallet.refund"
	// OrgsBilling is POST /orgs/:id/billing.
	OrgsBilling = "orgs.billing"
	// OrgsAlerts is POST /orgs/:id/alerts.
	OrgsAlerts = "orgs.alerts"
	// WalletCSV is GET /orgs/:id/wallet/ledger.csv.
	WalletCSV = "wallet.csv"
	// TopupsShow is GET /topups/:id.
	TopupsShow = "topups.show"
	// InvoicesPage is GET /orgs/:id/invoices: the organisation's invoices
	// and the form that asks for one.
	InvoicesPage = "invoices.page"
	// InvoicesCreate is POST /orgs/:id/invoices.
	InvoicesCreate = "invoices.create"
	// InvoicesCSV is GET /orgs/:id/invoices.csv (?month=YYYY-MM).
	InvoicesCSV = "invoices.csv"
	// InvoicesCancel is POST /orgs/:id/invoices/:invoice_id/cancel.
	InvoicesCancel = "invoices.cancel"
	// InvoicesFile is GET /orgs/:id/invoices/:invoice_id/file.
	InvoicesFile = "invoices.file"
	// WebhooksStripe is POST /webhooks/stripe.
	WebhooksStripe = "webhooks.stripe"
	// RentalsNew is GET /offers/:id/rent.
	RentalsNew = "rentals.new"
	// RentalsCreate is POST /offers/:id/rent.
	RentalsCreate = "rentals.create"
	// Console is GET /console.
	Console = "console"
	// RentalsShow is GET /rentals/:id.
	RentalsShow = "rentals.show"
	// RentalsLive is GET /rentals/:id/live.
	RentalsLive = "rentals.live"
	// RentalsEvents is GET /rentals/:id/events: the live block as
	// server-sent events, pushed when the rental changes.
	RentalsEvents = "rentals.events"
	// RentalsUsage is GET /rentals/:id/usage: the GPU usage section.
	RentalsUsage = "rentals.usage"
	// RentalsStop is POST /rentals/:id/stop.
	RentalsStop = "rentals.stop"
	// RentalsIdleStop is POST /rentals/:id/idle-stop.
	RentalsIdleStop = "rentals.idle_stop"
	// RentalsBid is POST /rentals/:id/bid: raise an interruptible rental's bid.
	RentalsBid = "rentals.bid"
	// RentalsStart is POST /rentals/:id/start.
	RentalsStart = "rentals.start"
	// RentalsRelease is POST /rentals/:id/release.
	RentalsRelease = "rentals.release"
	// RentalsChange is POST /rentals/:id/change.
	RentalsChange = "rentals.change"
	// RentalsJupyterRoot is ANY /rentals/:id/jupyter (on to the slash).
	RentalsJupyterRoot = "rentals.jupyter.root"
	// RentalsJupyter is ANY /rentals/:id/jupyter/*: the container's Jupyter.
	RentalsJupyter = "rentals.jupyter"
	// RentalsPortRoot is ANY /rentals/:id/ports/:port (on to the slash).
	RentalsPortRoot = "rentals.port.root"
	// RentalsPort is ANY /rentals/:id/ports/:port/*: a declared HTTP port.
	RentalsPort = "rentals.port"
	// RentalsTerminal is GET /rentals/:id/terminal: the terminal page.
	RentalsTerminal = "rentals.terminal"
	// RentalsTerminalSocket is GET /rentals/:id/terminal/ws: its WebSocket.
	RentalsTerminalSocket = "rentals.terminal.ws"
	// RentalsLogs is GET /rentals/:id/logs: the container's output.
	RentalsLogs = "rentals.logs"
	// RentalsFiles is GET /rentals/:id/files: the workspace's files page.
	RentalsFiles = "rentals.files"
	// RentalsFilesList is GET /rentals/:id/files/list: a directory as JSON.
	RentalsFilesList = "rentals.files.list"
	// RentalsFilesDownload is GET /rentals/:id/files/download: a file.
	RentalsFilesDownload = "rentals.files.download"
	// RentalsFilesUpload is POST /rentals/:id/files: upload (multipart).
	RentalsFilesUpload = "rentals.files.upload"
	// RentalsSharesCreate is POST /rentals/:id/shares: a port's share link.
	RentalsSharesCreate = "rentals.shares.create"
	// RentalsSharesRevoke is POST /rentals/:id/shares/:sid/revoke.
	RentalsSharesRevoke = "rentals.shares.revoke"
	// AppsLogin is GET /rentals/:id/.suanli-app?ticket=&next=, on a
	// rental's apps origin only.
	AppsLogin = "apps.login"
	// ShareRoot is ANY /share/:token (on to the slash).
	ShareRoot = "share.root"
	// Share is ANY /share/:token/*: the port a share link opens.
	Share = "share"
	// AdminHome is GET /admin.
	AdminHome = "admin.home"
	// AdminTopupsConfirm is POST /admin/topups/:id/confirm.
	AdminTopupsConfirm = "admin.topups.confirm"
	// AdminRefundsPaid is POST /admin/refunds/:id/paid.
	AdminRefundsPaid = "admin.refunds.paid"
	// AdminReview is POST /admin/orgs/:id/review.
	AdminReview = "admin.review"
	// AdminOrgVerify is GET /admin/org-verifications/:id: an
	// organisation's verification submission, for review.
	AdminOrgVerify = "admin.orgverify.show"
	// AdminOrgVerifyLicence is GET /admin/org-verifications/:id/licence:
	// the business licence file, each read audited.
	AdminOrgVerifyLicence = "admin.orgverify.licence"
	// AdminOrgVerifyApprove is POST /admin/org-verifications/:id/approve.
	AdminOrgVerifyApprove = "admin.orgverify.approve"
	// AdminOrgVerifyReject is POST /admin/org-verifications/:id/reject.
	AdminOrgVerifyReject = "admin.orgverify.reject"
	// AdminOrgVerifyReset is POST /admin/org-verifications/:id/reset.
	AdminOrgVerifyReset = "admin.orgverify.reset"
	// AdminUsers is GET /admin/users.
	AdminUsers = "admin.users"
	// AdminUsersSuspend is POST /admin/users/:id/suspend.
	AdminUsersSuspend = "admin.users.suspend"
	// AdminUsersUnsuspend is POST /admin/users/:id/unsuspend.
	AdminUsersUnsuspend = "admin.users.unsuspend"
	// AdminUsersOrgsPerDay is POST /admin/users/:id/orgs-per-day.
	AdminUsersOrgsPerDay = "admin.users.orgs_per_day"
	// AdminOrgs is GET /admin/orgs.
	AdminOrgs = "admin.orgs"
	// AdminOrgsSuspend is POST /admin/orgs/:id/suspend.
	AdminOrgsSuspend = "admin.orgs.suspend"
	// AdminOrgsUnsuspend is POST /admin/orgs/:id/unsuspend.
	AdminOrgsUnsuspend = "admin.orgs.unsuspend"
	// AdminPayouts is GET /admin/payouts.
	AdminPayouts = "admin.payouts"
	// AdminPayoutsRun is POST /admin/payouts/run.
	AdminPayoutsRun = "admin.payouts.run"
	// AdminPayoutsPaid is POST /admin/payouts/:id/paid.
	AdminPayoutsPaid = "admin.payouts.paid"
	// AdminPayoutsFailed is POST /admin/payouts/:id/failed.
	AdminPayoutsFailed = "admin.payouts.failed"
	// AdminOutbox is GET /admin/outbox.
	AdminOutbox = "admin.outbox"
	// AdminSMS is GET /admin/sms: the SMS outbox.
	AdminSMS = "admin.sms"
	// AdminRealName is GET /admin/users/:id/real-name.
	AdminRealName = "admin.realname"
	// AdminRealNameReveal is POST /admin/users/:id/real-name/reveal.
	AdminRealNameReveal = "admin.realname.reveal"
	// AdminRealNameReject is POST /admin/users/:id/real-name/reject.
	AdminRealNameReject = "admin.realname.reject"
	// AdminJobs is GET /admin/jobs.
	AdminJobs = "admin.jobs"
	// AdminAudit is GET /admin/audit.
	AdminAudit = "admin.audit"
	// AdminAuditCSV is GET /admin/audit.csv.
	AdminAuditCSV = "admin.audit.csv"
	// AdminInvoices is GET /admin/invoices: the invoice queue.
	AdminInvoices = "admin.invoices"
	// AdminInvoicesCSV is GET /admin/invoices.csv (?month=YYYY-MM).
	AdminInvoicesCSV = "admin.invoices.csv"
	// AdminInvoicesShow is GET /admin/invoices/:id.
	AdminInvoicesShow = "admin.invoices.show"
	// AdminInvoicesIssue is POST /admin/invoices/:id/issue (multipart: the file).
	AdminInvoicesIssue = "admin.invoices.issue"
	// AdminInvoicesReject is POST /admin/invoices/:id/reject.
	AdminInvoicesReject = "admin.invoices.reject"
	// AdminInvoicesVoid is POST /admin/invoices/:id/void.
	AdminInvoicesVoid = "admin.invoices.void"
	// AdminInvoicesReverse is POST /admin/invoices/:id/reverse.
	AdminInvoicesReverse = "admin.invoices.reverse"
	// ProviderHome is GET /provider.
	ProviderHome = "provider.home"
	// ProviderSignup is POST /provider/signup.
	ProviderSignup = "provider.signup"
	// ProviderDashboard is GET /provider/:pid.
	ProviderDashboard = "provider.dashboard"
	// ProviderProfile is GET /provider/:pid/profile.
	ProviderProfile = "provider.profile"
	// ProviderProfilePost is POST /provider/:pid/profile.
	ProviderProfilePost = "provider.profile.post"
	// ProviderDatacenters is GET /provider/:pid/datacenters.
	ProviderDatacenters = "provider.datacenters"
	// ProviderDatacentersCreate is POST /provider/:pid/datacenters.
	ProviderDatacentersCreate = "provider.datacenters.create"
	// ProviderDatacentersEdit is GET /provider/:pid/datacenters/:id/edit.
	ProviderDatacentersEdit = "provider.datacenters.edit"
	// ProviderDatacentersUpdate is POST /provider/:pid/datacenters/:id.
	ProviderDatacentersUpdate = "provider.datacenters.update"
	// ProviderNodes is GET /provider/:pid/nodes.
	ProviderNodes = "provider.nodes"
	// ProviderNodesLive is GET /provider/:pid/nodes/live.
	ProviderNodesLive = "provider.nodes.live"
	// ProviderNodesCreate is POST /provider/:pid/nodes.
	ProviderNodesCreate = "provider.nodes.create"
	// ProviderNodesShow is GET /provider/:pid/nodes/:id.
	ProviderNodesShow = "provider.nodes.show"
	// ProviderNodesLiveOne is GET /provider/:pid/nodes/:id/live.
	ProviderNodesLiveOne = "provider.nodes.live.one"
	// ProviderNodesStatus is POST /provider/:pid/nodes/:id/status.
	ProviderNodesStatus = "provider.nodes.status"
	// ProviderNodesToken is POST /provider/:pid/nodes/:id/token.
	ProviderNodesToken = "provider.nodes.token"
	// ProviderOffers is GET /provider/:pid/offers.
	ProviderOffers = "provider.offers"
	// ProviderOffersNew is GET /provider/:pid/offers/new.
	ProviderOffersNew = "provider.offers.new"
	// ProviderOffersCreate is POST /provider/:pid/offers.
	ProviderOffersCreate = "provider.offers.create"
	// ProviderOffersEdit is GET /provider/:pid/offers/:id/edit.
	ProviderOffersEdit = "provider.offers.edit"
	// ProviderOffersUpdate is POST /provider/:pid/offers/:id.
	ProviderOffersUpdate = "provider.offers.update"
	// ProviderOffersStatus is POST /provider/:pid/offers/:id/status.
	ProviderOffersStatus = "provider.offers.status"
	// ProviderCapacity is GET /provider/:pid/capacity.
	ProviderCapacity = "provider.capacity"
	// ProviderEarnings is GET /provider/:pid/earnings.
	ProviderEarnings = "provider.earnings"
	// ProviderStatement is GET /provider/:pid/earnings/statement.
	ProviderStatement = "provider.statement"
	// ProviderStatementCSV is GET /provider/:pid/earnings/statement.csv.
	ProviderStatementCSV = "provider.statement.csv"
	// ProviderConnect is POST /provider/:pid/connect.
	ProviderConnect = "provider.connect"
	// ProviderConnectReturn is GET /provider/:pid/connect/return.
	ProviderConnectReturn = "provider.connect.return"
	// APIProviderDatacentersList is GET /api/v1/provider/datacenters.
	APIProviderDatacentersList = "api.provider.datacenters.list"
	// APIProviderDatacentersCreate is POST /api/v1/provider/datacenters.
	APIProviderDatacentersCreate = "api.provider.datacenters.create"
	// APIProviderNodesList is GET /api/v1/provider/nodes.
	APIProviderNodesList = "api.provider.nodes.list"
	// APIProviderNodesCreate is POST /api/v1/provider/nodes.
	APIProviderNodesCreate = "api.provider.nodes.create"
	// APIProviderNodesShow is GET /api/v1/provider/nodes/:id.
	APIProviderNodesShow = "api.provider.nodes.show"
	// APIProviderOffersList is GET /api/v1/provider/offers.
	APIProviderOffersList = "api.provider.offers.list"
	// APIProviderOffersCreate is POST /api/v1/provider/offers.
	APIProviderOffersCreate = "api.provider.offers.create"
	// APIProviderOffersShow is GET /api/v1/provider/offers/:id.
	APIProviderOffersShow = "api.provider.offers.show"
	// APIProviderOffersUpdate is PATCH /api/v1/provider/offers/:id.
	APIProviderOffersUpdate = "api.provider.offers.update"
	// APIOpenAPI is GET /api/v1/openapi.json.
	APIOpenAPI = "api.openapi"
	// APIOpenAPI30 is GET /api/v1/openapi-3.0.json, the same document in
	// OpenAPI 3.0 form.
	APIOpenAPI30 = "api.openapi30"
	// APIDocs is GET /api/docs.
	APIDocs = "api.docs"
	// APIOffersList is GET /api/v1/offers.
	APIOffersList = "api.offers.list"
	// APIOffersShow is GET /api/v1/offers/:id.
	APIOffersShow = "api.offers.show"
	// APIOffersQuote is GET /api/v1/offers/:id/quote.
	APIOffersQuote = "api.offers.quote"
	// APIImagesList is GET /api/v1/images.
	APIImagesList = "api.images.list"
	// APICatalog is GET /api/v1/catalog.
	APICatalog = "api.catalog"
	// APIInstanceTypes is GET /api/v1/instance-types.
	APIInstanceTypes = "api.instance_types"
	// APIMe is GET /api/v1/me.
	APIMe = "api.me"
	// APIMeRealName is POST /api/v1/me/real-name.
	APIMeRealName = "api.me.realname"
	// APIMeRealNameConfirm is POST /api/v1/me/real-name/confirm.
	APIMeRealNameConfirm = "api.me.realname.confirm"
	// APIMeRealNameWithdraw is DELETE /api/v1/me/real-name.
	APIMeRealNameWithdraw = "api.me.realname.withdraw"
	// APIWallet is GET /api/v1/wallet.
	APIWallet = "api.wallet"
	// APIWalletLedger is GET /api/v1/wallet/ledger.
	APIWalletLedger = "api.wallet.ledger"
	// APIWalletTopups is POST /api/v1/wallet/topups.
	APIWalletTopups = "api.wallet.topups"
	// APIWalletAlerts is GET /api/v1/wallet/alerts.
	APIWalletAlerts = "api.wallet.alerts"
	// APIWalletAlertsSet is POST /api/v1/wallet/alerts.
	APIWalletAlertsSet = "api.wallet.alerts.set"
	// APIRentalsList is GET /api/v1/rentals.
	APIRentalsList = "api.rentals.list"
	// APIRentalsCreate is POST /api/v1/rentals.
	APIRentalsCreate = "api.rentals.create"
	// APIRentalsShow is GET /api/v1/rentals/:id.
	APIRentalsShow = "api.rentals.show"
	// APIRentalsUsage is GET /api/v1/rentals/:id/usage.
	APIRentalsUsage = "api.rentals.usage"
	// APIRentalsStop is POST /api/v1/rentals/:id/stop.
	APIRentalsStop = "api.rentals.stop"
	// APIRentalsIdleStop is POST /api/v1/rentals/:id/idle-stop.
	APIRentalsIdleStop = "api.rentals.idle_stop"
	// APIRentalsBid is POST /api/v1/rentals/:id/bid.
	APIRentalsBid = "api.rentals.bid"
	// APIRentalsChange is POST /api/v1/rentals/:id/change.
	APIRentalsChange = "api.rentals.change"
	// APIRentalsStart is POST /api/v1/rentals/:id/start.
	APIRentalsStart = "api.rentals.start"
	// APIRentalsRelease is POST /api/v1/rentals/:id/release.
	APIRentalsRelease = "api.rentals.release"
	// APIRentalsLogs is GET /api/v1/rentals/:id/logs: the container's
	// output (text, or server-sent events with follow=1).
	APIRentalsLogs = "api.rentals.logs"
	// APIRentalsFilesList is GET /api/v1/rentals/:id/files: a workspace
	// directory.
	APIRentalsFilesList = "api.rentals.files.list"
	// APIRentalsFilesDownload is GET /api/v1/rentals/:id/files/download.
	APIRentalsFilesDownload = "api.rentals.files.download"
	// APIRentalsFilesUpload is POST /api/v1/rentals/:id/files (multipart).
	APIRentalsFilesUpload = "api.rentals.files.upload"
	// APIRentalsSharesList is GET /api/v1/rentals/:id/shares.
	APIRentalsSharesList = "api.rentals.shares.list"
	// APIRentalsSharesCreate is POST /api/v1/rentals/:id/shares.
	APIRentalsSharesCreate = "api.rentals.shares.create"
	// APIRentalsSharesRevoke is DELETE /api/v1/rentals/:id/shares/:sid.
	APIRentalsSharesRevoke = "api.rentals.shares.revoke"
	// APIOrgsCreate is POST /api/v1/orgs.
	APIOrgsCreate = "api.orgs.create"
	// APIOrgsShow is GET /api/v1/orgs/:id.
	APIOrgsShow = "api.orgs.show"
	// APIOrgsBudget is PUT /api/v1/orgs/:id/budget.
	APIOrgsBudget = "api.orgs.budget"
	// APIOrgsIdlePolicy is PUT /api/v1/orgs/:id/idle-policy.
	APIOrgsIdlePolicy = "api.orgs.idle_policy"
	// APIOrgsInvite is POST /api/v1/orgs/:id/invitations.
	APIOrgsInvite = "api.orgs.invite"
	// APIOrgsInvitationsRevoke is DELETE /api/v1/orgs/:id/invitations/:iid.
	APIOrgsInvitationsRevoke = "api.orgs.invitations.revoke"
	// APIOrgsMembersRemove is DELETE /api/v1/orgs/:id/members/:uid.
	APIOrgsMembersRemove = "api.orgs.members.remove"
	// APIOrgVerify is GET /api/v1/orgs/:id/verification.
	APIOrgVerify = "api.orgverify.show"
	// APIOrgVerifySubmit is POST /api/v1/orgs/:id/verification (multipart).
	APIOrgVerifySubmit = "api.orgverify.submit"
	// APIInvitationsMine is GET /api/v1/invitations.
	APIInvitationsMine = "api.invitations.mine"
	// APIInvitationsAccept is POST /api/v1/invitations/:id/accept.
	APIInvitationsAccept = "api.invitations.accept"
	// APIInvitationsAcceptToken is POST /api/v1/invitations/accept.
	APIInvitationsAcceptToken = "api.invitations.accept_token"
	// APILabsApply is POST /api/v1/labs.
	APILabsApply = "api.labs.apply"
	// APIWalletRefunds is GET /api/v1/wallet/refunds.
	APIWalletRefunds = "api.wallet.refunds"
	// APIWalletRefundsCreate is POST /api/v1/wallet/refunds.
	APIWalletRefundsCreate = "api.wallet.refunds.create"
	// APIWalletBilling is GET /api/v1/wallet/billing.
	APIWalletBilling = "api.wallet.billing"
	// APIWalletBillingSet is PUT /api/v1/wallet/billing.
	APIWalletBillingSet = "api.wallet.billing.set"
	// APIInvoicesList is GET /api/v1/orgs/:id/invoices.
	APIInvoicesList = "api.invoices.list"
	// APIInvoicesCreate is POST /api/v1/orgs/:id/invoices.
	APIInvoicesCreate = "api.invoices.create"
	// APIInvoicesShow is GET /api/v1/orgs/:id/invoices/:invoice_id.
	APIInvoicesShow = "api.invoices.show"
	// APIInvoicesCancel is POST /api/v1/orgs/:id/invoices/:invoice_id/cancel.
	APIInvoicesCancel = "api.invoices.cancel"
	// APIInvoicesFile is GET /api/v1/orgs/:id/invoices/:invoice_id/file.
	APIInvoicesFile = "api.invoices.file"
	// APITokensList is GET /api/v1/tokens.
	APITokensList = "api.tokens.list"
	// APITokensRevoke is DELETE /api/v1/tokens/:id.
	APITokensRevoke = "api.tokens.revoke"
	// APIProviderSignup is POST /api/v1/provider/signup.
	APIProviderSignup = "api.provider.signup"
	// APIProviderProfile is GET /api/v1/provider/profile.
	APIProviderProfile = "api.provider.profile"
	// APIProviderProfileUpdate is PUT /api/v1/provider/profile.
	APIProviderProfileUpdate = "api.provider.profile.update"
	// APIProviderDatacentersUpdate is PUT /api/v1/provider/datacenters/:id.
	APIProviderDatacentersUpdate = "api.provider.datacenters.update"
	// APIProviderNodesUpdate is PATCH /api/v1/provider/nodes/:id.
	APIProviderNodesUpdate = "api.provider.nodes.update"
	// APIProviderNodesToken is POST /api/v1/provider/nodes/:id/token.
	APIProviderNodesToken = "api.provider.nodes.token"
	// APIProviderConnect is POST /api/v1/provider/connect.
	APIProviderConnect = "api.provider.connect"
	// APIProviderStatement is GET /api/v1/provider/statement.
	APIProviderStatement = "api.provider.statement"
	// APIProviderCapacity is GET /api/v1/provider/capacity.
	APIProviderCapacity = "api.provider.capacity"
	// APIProvidersMine is GET /api/v1/providers: the caller's providers.
	APIProvidersMine = "api.providers.mine"
	// APIWalletTopupsList is GET /api/v1/wallet/topups.
	APIWalletTopupsList = "api.wallet.topups.list"
	// APIWalletTopupsShow is GET /api/v1/wallet/topups/:id.
	APIWalletTopupsShow = "api.wallet.topups.show"
	// APIRentalsSLA is GET /api/v1/rentals/:id/sla.
	APIRentalsSLA = "api.rentals.sla"
	// APIVolumesList is GET /api/v1/volumes.
	APIVolumesList = "api.volumes.list"
	// APIVolumesCreate is POST /api/v1/volumes.
	APIVolumesCreate = "api.volumes.create"
	// APIVolumesDelete is DELETE /api/v1/volumes/:id.
	APIVolumesDelete = "api.volumes.delete"
	// BenchmarksShow is GET /benchmarks/:id.
	BenchmarksShow = "benchmarks.show"
	// NodesBenchmarks is GET /nodes/:id/benchmarks.
	NodesBenchmarks = "nodes.benchmarks"
	// APIBenchmarksShow is GET /api/v1/benchmarks/:id.
	APIBenchmarksShow = "api.benchmarks.show"
	// APINodesBenchmarks is GET /api/v1/nodes/:id/benchmarks.
	APINodesBenchmarks = "api.nodes.benchmarks"
	// APINodesBenchmarksRequest is POST /api/v1/nodes/:id/benchmarks.
	APINodesBenchmarksRequest = "api.nodes.benchmarks.request"
	// AgentHeartbeat is POST /agent/v1/heartbeat.
	AgentHeartbeat = "agent.heartbeat"
	// AgentTasks is GET /agent/v1/tasks.
	AgentTasks = "agent.tasks"
	// AgentResult is POST /agent/v1/tasks/:id/result.
	AgentResult = "agent.result"
	// AgentProgress is POST /agent/v1/tasks/:id/progress.
	AgentProgress = "agent.progress"
	// AgentTunnel is GET /agent/v1/tunnel: the agent's tunnel (WebSocket).
	AgentTunnel = "agent.tunnel"
	// WitnessResults is POST /witness/v1/rentals/:id/results: the
	// verifier in a rental's container posts what it measured.
	WitnessResults = "witness.results"
	// Ping is GET agent.PathPing, the latency endpoint.
	Ping = "ping"
	// Healthz is GET /healthz.
	Healthz = "healthz"
	// Readyz is GET /readyz.
	Readyz = "readyz"
	// Metrics is GET /metrics.
	Metrics = "metrics"
	// Static is GET static.Prefix + "*", the fingerprinted assets.
	Static = "static"
)
