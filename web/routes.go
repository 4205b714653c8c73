package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"suanli/agent"
	"suanli/handlers"
	"suanli/static"
)

// Route names; views and tests build URLs from them with echo's Reverse.
const (
	RouteHome       = "home"
	RouteOffers     = "offers.list"
	RouteOffer      = "offers.show"
	RouteDatacenter = "datacenters.show"
	RouteLangSwitch = "lang.switch"
	RouteAPIOffers  = "api.offers.list"
	RouteAPIOffer   = "api.offers.show"
	RouteHealthz    = "healthz"
	RouteReadyz     = "readyz"
	RouteMetrics    = "metrics"
	RouteStatic     = "static"
	RouteSignup     = "auth.signup"
	RouteLogin      = "auth.login"
	RoutePing       = "ping"
)

// route is one row of the route table.
type route struct {
	method, path, name string
	handler            echo.HandlerFunc
	access             int
}

// routes is the one route table of the application.
func routes(h *handlers.Handler, m *metrics) []route {
	return []route{
		{"GET", "/", RouteHome, h.OffersList, public},
		{"GET", "/offers", RouteOffers, h.OffersList, public},
		{"GET", "/offers/:id", RouteOffer, h.OfferShow, public},
		{"GET", "/datacenters/:slug", RouteDatacenter, h.DatacenterShow, public},

		// The SLA terms, rendered from the table the credits are computed with.
		{"GET", "/sla", "sla", h.SLAShow, public},

		// Buy versus rent: a calculator over the cheapest live offers.
		{"GET", "/tco", "tco", h.TCO, public},
		{"GET", "/lang/:lang", RouteLangSwitch, h.LangSwitch, public},

		{"GET", "/signup", RouteSignup, h.SignupForm, public},
		{"POST", "/signup", "auth.signup.post", h.Signup, public},
		{"GET", "/login", RouteLogin, h.LoginForm, public},
		{"POST", "/login", "auth.login.post", h.Login, public},
		{"POST", "/logout", "auth.logout", h.Logout, public},
		{"GET", "/verify", "auth.verify", h.Verify, public},
		{"POST", "/verify", "auth.verify.post", h.VerifyPassword, public},
		{"GET", "/password/forgot", "password.forgot", h.ForgotForm, public},
		{"POST", "/password/forgot", "password.forgot.post", h.Forgot, public},
		{"GET", "/password/reset", "password.reset", h.ResetForm, public},
		{"POST", "/password/reset", "password.reset.post", h.Reset, public},

		{"GET", "/account", "account.show", h.AccountShow, user},
		{"POST", "/account/password", "account.password", h.AccountPassword, user},
		{"POST", "/account/verify", "account.resend", h.AccountResend, user},
		{"POST", "/account/sessions/end", "account.sessions.end", h.AccountEndSessions, user},
		{"POST", "/account/tokens", "tokens.create", h.TokenCreate, user},
		{"POST", "/account/tokens/:id/revoke", "tokens.revoke", h.TokenRevoke, user},
		{"POST", "/orgs", "orgs.create", h.OrgCreate, user},
		{"GET", "/orgs/:id", "orgs.show", h.OrgShow, user},
		{"POST", "/orgs/:id/invitations", "orgs.invite", h.OrgInvite, user},
		{"POST", "/orgs/:id/invitations/:iid/revoke", "orgs.invitations.revoke", h.OrgRevokeInvitation, user},
		{"POST", "/orgs/:id/members/:uid/remove", "orgs.members.remove", h.OrgRemoveMember, user},
		{"POST", "/orgs/:id/budget", "orgs.budget", h.OrgBudget, user},
		{"GET", "/labs/apply", "labs.apply", h.LabApplyForm, user},
		{"POST", "/labs/apply", "labs.apply.post", h.LabApply, user},
		{"GET", "/labs/confirm", "labs.confirm", h.LabConfirm, user},
		{"GET", "/invitations/accept", "invitations.accept", h.InviteShow, user},
		{"POST", "/invitations/accept", "invitations.accept.post", h.InviteAccept, user},
		{"POST", "/invitations/:iid/accept", "invitations.accept.id", h.InvitationAccept, user},

		// The navigation's wallet: the user's own, by redirect.
		{"GET", "/wallet", "wallet.mine", h.WalletMine, user},
		{"GET", "/orgs/:id/wallet", "wallet.show", h.WalletShow, user},
		{"POST", "/orgs/:id/wallet/topups", "wallet.topup", h.WalletTopup, user},
		{"POST", "/orgs/:id/wallet/refunds", "wallet.refund", h.WalletRefund, user},
		{"POST", "/orgs/:id/billing", "orgs.billing", h.WalletBilling, user},
		{"GET", "/orgs/:id/wallet/ledger.csv", "wallet.csv", h.WalletCSV, user},
		{"GET", "/topups/:id", "topups.show", h.TopupShow, user},
		{"POST", "/webhooks/stripe", "webhooks.stripe", h.StripeWebhook, public},

		{"GET", "/offers/:id/rent", "rentals.new", h.RentNew, user},
		{"POST", "/offers/:id/rent", "rentals.create", h.RentCreate, user},
		{"GET", "/console", "console", h.Console, user},
		{"GET", "/rentals/:id", "rentals.show", h.RentalShow, user},
		{"GET", "/rentals/:id/live", "rentals.live", h.RentalLive, user},
		{"POST", "/rentals/:id/stop", "rentals.stop", h.RentalStop, user},
		{"POST", "/rentals/:id/change", "rentals.change", h.RentalChange, user},

		{"GET", "/admin", "admin.home", h.AdminHome, admin},
		{"POST", "/admin/topups/:id/confirm", "admin.topups.confirm", h.AdminConfirmTopup, admin},
		{"POST", "/admin/refunds/:id/paid", "admin.refunds.paid", h.AdminRefundPaid, admin},
		{"POST", "/admin/orgs/:id/review", "admin.review", h.AdminReview, admin},
		// Admin console (queues, users and organisations, payouts, jobs, audit log).
		{"GET", "/admin/users", "admin.users", h.AdminUsers, admin},
		{"POST", "/admin/users/:id/suspend", "admin.users.suspend", h.AdminSuspendUser, admin},
		{"POST", "/admin/users/:id/unsuspend", "admin.users.unsuspend", h.AdminUnsuspendUser, admin},
		{"POST", "/admin/users/:id/orgs-per-day", "admin.users.orgs_per_day", h.AdminOrgsPerDay, admin},
		{"GET", "/admin/orgs", "admin.orgs", h.AdminOrgs, admin},
		{"POST", "/admin/orgs/:id/suspend", "admin.orgs.suspend", h.AdminSuspendOrg, admin},
		{"POST", "/admin/orgs/:id/unsuspend", "admin.orgs.unsuspend", h.AdminUnsuspendOrg, admin},
		{"GET", "/admin/payouts", "admin.payouts", h.AdminPayouts, admin},
		{"POST", "/admin/payouts/run", "admin.payouts.run", h.AdminPayoutsRun, admin},
		{"POST", "/admin/payouts/:id/paid", "admin.payouts.paid", h.AdminPayoutPaid, admin},
		{"POST", "/admin/payouts/:id/failed", "admin.payouts.failed", h.AdminPayoutFailed, admin},
		{"GET", "/admin/outbox", "admin.outbox", h.AdminOutbox, admin},
		{"GET", "/admin/jobs", "admin.jobs", h.AdminJobs, admin},
		{"GET", "/admin/audit", "admin.audit", h.AdminAudit, admin},
		{"GET", "/admin/audit.csv", "admin.audit.csv", h.AdminAuditCSV, admin},

		// Provider portal pages (/provider/…).
		{"GET", "/provider", "provider.home", h.ProviderHome, user},
		{"POST", "/provider/signup", "provider.signup", h.ProviderSignup, user},
		{"GET", "/provider/:pid", "provider.dashboard", h.ProviderDashboard, user},
		{"GET", "/provider/:pid/profile", "provider.profile", h.ProviderProfile, user},
		{"POST", "/provider/:pid/profile", "provider.profile.post", h.ProviderProfileSave, user},
		{"GET", "/provider/:pid/datacenters", "provider.datacenters", h.ProviderDatacenters, user},
		{"POST", "/provider/:pid/datacenters", "provider.datacenters.create", h.ProviderDatacenterCreate, user},
		{"GET", "/provider/:pid/datacenters/:id/edit", "provider.datacenters.edit", h.ProviderDatacenterEdit, user},
		{"POST", "/provider/:pid/datacenters/:id", "provider.datacenters.update", h.ProviderDatacenterUpdate, user},
		{"GET", "/provider/:pid/nodes", "provider.nodes", h.ProviderNodes, user},
		{"GET", "/provider/:pid/nodes/live", "provider.nodes.live", h.ProviderNodesLive, user},
		{"POST", "/provider/:pid/nodes", "provider.nodes.create", h.ProviderNodeCreate, user},
		{"GET", "/provider/:pid/nodes/:id", "provider.nodes.show", h.ProviderNode, user},
		{"GET", "/provider/:pid/nodes/:id/live", "provider.nodes.live.one", h.ProviderNodeLive, user},
		{"POST", "/provider/:pid/nodes/:id/status", "provider.nodes.status", h.ProviderNodeStatus, user},
		{"POST", "/provider/:pid/nodes/:id/token", "provider.nodes.token", h.ProviderNodeToken, user},
		{"GET", "/provider/:pid/offers", "provider.offers", h.ProviderOffers, user},
		{"GET", "/provider/:pid/offers/new", "provider.offers.new", h.ProviderOfferNew, user},
		{"POST", "/provider/:pid/offers", "provider.offers.create", h.ProviderOfferCreate, user},
		{"GET", "/provider/:pid/offers/:id/edit", "provider.offers.edit", h.ProviderOfferEdit, user},
		{"POST", "/provider/:pid/offers/:id", "provider.offers.update", h.ProviderOfferUpdate, user},
		{"POST", "/provider/:pid/offers/:id/status", "provider.offers.status", h.ProviderOfferStatus, user},
		{"GET", "/provider/:pid/capacity", "provider.capacity", h.ProviderCapacity, user},
		{"GET", "/provider/:pid/earnings", "provider.earnings", h.ProviderEarnings, user},
		{"GET", "/provider/:pid/earnings/statement", "provider.statement", h.ProviderStatement, user},
		{"GET", "/provider/:pid/earnings/statement.csv", "provider.statement.csv", h.ProviderStatementCSV, user},
		{"POST", "/provider/:pid/connect", "provider.connect", h.ProviderConnect, user},
		{"GET", "/provider/:pid/connect/return", "provider.connect.return", h.ProviderConnectReturn, user},

		// Provider API (/api/v1/provider/…), with the same API tokens.
		{"GET", "/api/v1/provider/datacenters", "api.provider.datacenters.list", h.APIProviderDatacentersList, user},
		{"POST", "/api/v1/provider/datacenters", "api.provider.datacenters.create", h.APIProviderDatacenterCreate, user},
		{"GET", "/api/v1/provider/nodes", "api.provider.nodes.list", h.APIProviderNodesList, user},
		{"POST", "/api/v1/provider/nodes", "api.provider.nodes.create", h.APIProviderNodeCreate, user},
		{"GET", "/api/v1/provider/nodes/:id", "api.provider.nodes.show", h.APIProviderNodeShow, user},
		{"GET", "/api/v1/provider/offers", "api.provider.offers.list", h.APIProviderOffersList, user},
		{"POST", "/api/v1/provider/offers", "api.provider.offers.create", h.APIProviderOfferCreate, user},
		{"GET", "/api/v1/provider/offers/:id", "api.provider.offers.show", h.APIProviderOfferShow, user},
		{"PATCH", "/api/v1/provider/offers/:id", "api.provider.offers.update", h.APIProviderOfferUpdate, user},

		// The API's OpenAPI document, and its reference page rendered from it.
		{"GET", "/api/v1/openapi.json", "api.openapi", h.APIOpenAPI, public},
		{"GET", "/api/docs", "api.docs", h.APIDocs, public},

		{"GET", "/api/v1/offers", RouteAPIOffers, h.APIOffersList, public},
		{"GET", "/api/v1/offers/:id", RouteAPIOffer, h.APIOfferShow, public},
		{"GET", "/api/v1/offers/:id/quote", "api.offers.quote", h.APIOfferQuote, public},
		{"GET", "/api/v1/me", "api.me", h.APIMe, user},
		{"GET", "/api/v1/wallet", "api.wallet", h.APIWallet, user},
		{"GET", "/api/v1/wallet/ledger", "api.wallet.ledger", h.APIWalletLedger, user},
		{"POST", "/api/v1/wallet/topups", "api.wallet.topups", h.APITopupCreate, user},
		{"GET", "/api/v1/rentals", "api.rentals.list", h.APIRentalsList, user},
		{"POST", "/api/v1/rentals", "api.rentals.create", h.APIRentalCreate, user},
		{"GET", "/api/v1/rentals/:id", "api.rentals.show", h.APIRentalShow, user},
		{"POST", "/api/v1/rentals/:id/stop", "api.rentals.stop", h.APIRentalStop, user},
		{"POST", "/api/v1/rentals/:id/change", "api.rentals.change", h.APIRentalChange, user},

		// Benchmark reports are public; running one on demand is for platform admins.
		{"GET", "/benchmarks/:id", "benchmarks.show", h.BenchmarkShow, public},
		{"GET", "/nodes/:id/benchmarks", "nodes.benchmarks", h.NodeBenchmarks, public},
		{"GET", "/api/v1/benchmarks/:id", "api.benchmarks.show", h.APIBenchmarkShow, public},
		{"GET", "/api/v1/nodes/:id/benchmarks", "api.nodes.benchmarks", h.APINodeBenchmarks, public},
		{"POST", "/api/v1/nodes/:id/benchmarks", "api.nodes.benchmarks.request", h.APIRequestBenchmark, admin},

		// Node agents authenticate with their node credential, not a user.
		{"POST", "/agent/v1/heartbeat", "agent.heartbeat", h.AgentHeartbeat, public},
		{"GET", "/agent/v1/tasks", "agent.tasks", h.AgentTasks, public},
		{"POST", "/agent/v1/tasks/:id/result", "agent.result", h.AgentTaskResult, public},

		// The latency endpoint that visitors' browsers time, as on an agent
		// (the demo's in-process nodes report this one).
		{"GET", agent.PathPing, RoutePing, h.Ping, public},

		{"GET", "/healthz", RouteHealthz, h.Healthz, public},
		{"GET", "/readyz", RouteReadyz, h.Readyz, public},
		{"GET", "/metrics", RouteMetrics, echo.WrapHandler(m.handler()), public},
		{"GET", static.Prefix + "*", RouteStatic, echo.WrapHandler(http.HandlerFunc(static.ServeHTTP)), public},
	}
}
