package web

import (
	"maps"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"suanli/handlers"
	"suanli/openapi"
	"suanli/routenames"
)

// Parity (issue 19): every action the console offers has an API endpoint,
// and so does every page's data.
//
// A console action is a route outside /api/ that changes something (any
// method but GET, HEAD and OPTIONS) or hands out data (a download: a CSV
// export, the container's output, the workspace's files, a statement).
// consoleParity pairs each with the API operations that do the same, or
// says why it has none.
//
// A console page is every other GET route outside /api/ that needs a
// signed-in person (access user): the console, account, organisations,
// wallets, rentals, standing orders and the provider portal. consolePages
// pairs each with the API operations that give its data, or names the
// console action whose form it is (that action's operations are then its
// API), or gives a view exemption of a known class. Not console pages:
// /admin (access admin; its actions are exemptAdmin, and its pages show
// staff the evidence for them) and the public pages (access public: the
// catalogue of offers, datacentres, benchmarks, the SLA and TCO pages,
// which anyone reads without credentials, and the sign-up, log-in and
// password forms, whose actions are exemptCredentials).
//
// TestConsoleParity walks the route table and the OpenAPI document and
// fails on a console action or page that is in neither table, naming it.

// apiOp is an API operation: its route's name and its operationId in
// openapi/openapi.json (the route's method and path must be the
// operation's).
type apiOp struct{ route, operationID string }

// parity is how the API answers one console action: the operations that
// do it, or an exemption (one of the classes below) saying why there are
// none. Never both.
type parity struct {
	api    []apiOp
	exempt string
}

// Why a console action may have no API endpoint. Each class holds for
// every route that carries it; an exemption that is really a missing
// endpoint is a defect, not a class.
const (
	// A person's own credentials and sessions belong to their browser.
	exemptCredentials = "credentials: signing up, in and out, passwords, verification and reset mails and login sessions are a person's, in a browser; " +
		"an API token may not change the credentials it stands for (a leaked token could then outlive its revocation)"
	// Making tokens with a token is the same escalation.
	exemptTokenCreate = "credentials: an API token is made on /account with the person's session, never with another token (a leaked token could mint " +
		"its successors and outlive its revocation); GET /api/v1/tokens lists them and DELETE /api/v1/tokens/{id} revokes one"
	// A link mailed to an address proves the mailbox, which no token can.
	exemptMailedLink = "mailed link: opening it proves the person reads that mailbox; a token proves nothing of the kind " +
		"(an invitation's mailed token can be accepted through POST /api/v1/invitations/accept, where the invited address is checked)"
	// The container's own apps, passed on through the node's tunnel.
	exemptProxy = "the container's own app (Jupyter, a declared HTTP port, the terminal's WebSocket, a share link), passed on through the node's tunnel: " +
		"the app's own interface is the API; tools reach the container itself over SSH (the rental's access.ssh)"
	// A third party sends the person's browser back.
	exemptReturn = "a browser's return from Stripe's Connect onboarding (begun by POST /api/v1/provider/connect, whose link a person opens in a browser): " +
		"Stripe sends that browser here, where the account's state is read again; GET /api/v1/provider/profile shows it (stripe_charges_enabled, stripe_payouts_enabled)"
	// Machines with their own credentials, not people at a console.
	exemptMachine = "not a console action: called by machines with their own credentials (Stripe's signed webhooks, node agents, a rental's verifier)"
	// The platform staff's back office.
	exemptAdmin = "platform staff's back office (/admin): decisions a member of staff takes with the evidence in front of them (money received, " +
		"a lab or provider verified, a user suspended, a payout paid). The public API is for renters, labs, providers and launchers (issue 19); " +
		"staff actions are kept out of reach of API tokens on purpose, so that a leaked token cannot move money or suspend people. " +
		"Operators script on the server with `suanli admin` (status, credit, orgs-per-day, node-token, clear-xids); the other back-office " +
		"actions are page-only"
)

// consoleParity is the table: every console action, by route name.
var consoleParity = map[string]parity{
	// Account: credentials and sessions.
	routenames.AuthSignupPost:     {exempt: exemptCredentials},
	routenames.AuthLoginPost:      {exempt: exemptCredentials},
	routenames.AuthLogout:         {exempt: exemptCredentials},
	routenames.AuthVerifyPost:     {exempt: exemptCredentials},
	routenames.PasswordForgotPost: {exempt: exemptCredentials},
	routenames.PasswordResetPost:  {exempt: exemptCredentials},
	routenames.AccountPassword:    {exempt: exemptCredentials},
	routenames.AccountResend:      {exempt: exemptCredentials},
	routenames.AccountSessionsEnd: {exempt: exemptCredentials},
	routenames.TokensCreate:       {exempt: exemptTokenCreate},
	routenames.TokensRevoke:       {api: []apiOp{{routenames.APITokensRevoke, "revokeAPIToken"}}},

	// Real-name verification (a new code: the start again).
	routenames.RealNameStart:   {api: []apiOp{{routenames.APIMeRealName, "startRealName"}}},
	routenames.RealNameResend:  {api: []apiOp{{routenames.APIMeRealName, "startRealName"}}},
	routenames.RealNameConfirm: {api: []apiOp{{routenames.APIMeRealNameConfirm, "confirmRealName"}}},

	routenames.RealNameWithdraw: {api: []apiOp{{routenames.APIMeRealNameWithdraw, "withdrawRealName"}}},

	// Organisations and labs.
	routenames.OrgsCreate:            {api: []apiOp{{routenames.APIOrgsCreate, "createOrg"}}},
	routenames.OrgsInvite:            {api: []apiOp{{routenames.APIOrgsInvite, "createInvitation"}}},
	routenames.OrgsInvitationsRevoke: {api: []apiOp{{routenames.APIOrgsInvitationsRevoke, "revokeInvitation"}}},
	routenames.OrgsMembersRemove:     {api: []apiOp{{routenames.APIOrgsMembersRemove, "removeMember"}}},
	routenames.OrgsBudget:            {api: []apiOp{{routenames.APIOrgsBudget, "setOrgBudget"}}},
	routenames.OrgsIdlePolicy:        {api: []apiOp{{routenames.APIOrgsIdlePolicy, "setOrgIdlePolicy"}}},
	routenames.LabsApplyPost:         {api: []apiOp{{routenames.APILabsApply, "applyLab"}}},
	routenames.LabsConfirm:           {exempt: exemptMailedLink},
	routenames.InvitationsAcceptPost: {api: []apiOp{{routenames.APIInvitationsAcceptToken, "acceptInvitationToken"}}},
	routenames.InvitationsAcceptID:   {api: []apiOp{{routenames.APIInvitationsAccept, "acceptInvitation"}}},
	// Organisation verification (企业认证): the same multipart form.
	routenames.OrgVerifySubmit: {api: []apiOp{{routenames.APIOrgVerifySubmit, "submitOrgVerification"}}},

	// The wallet.
	routenames.WalletTopup:    {api: []apiOp{{routenames.APIWalletTopups, "createTopup"}}},
	routenames.WalletRefund:   {api: []apiOp{{routenames.APIWalletRefundsCreate, "createRefund"}}},
	routenames.OrgsBilling:    {api: []apiOp{{routenames.APIWalletBillingSet, "setBilling"}}},
	routenames.OrgsAlerts:     {api: []apiOp{{routenames.APIWalletAlertsSet, "setSpendAlerts"}}},
	routenames.WalletCSV:      {api: []apiOp{{routenames.APIWalletLedger, "listLedger"}}},
	routenames.WebhooksStripe: {exempt: exemptMachine},

	// Rentals and standing orders.
	routenames.RentalsCreate:        {api: []apiOp{{routenames.APIRentalsCreate, "createRental"}}},
	routenames.StandingOrdersCreate: {api: []apiOp{{routenames.APIStandingOrdersCreate, "createStandingOrder"}}},
	routenames.StandingOrdersCancel: {api: []apiOp{{routenames.APIStandingOrdersDelete, "deleteStandingOrder"}}},
	routenames.RentalsStop:          {api: []apiOp{{routenames.APIRentalsStop, "stopRental"}}},
	routenames.RentalsIdleStop:      {api: []apiOp{{routenames.APIRentalsIdleStop, "setRentalIdleStop"}}},
	routenames.RentalsBid:           {api: []apiOp{{routenames.APIRentalsBid, "raiseRentalBid"}}},
	routenames.RentalsStart:         {api: []apiOp{{routenames.APIRentalsStart, "startRental"}}},
	routenames.RentalsRelease:       {api: []apiOp{{routenames.APIRentalsRelease, "releaseRental"}}},
	routenames.RentalsChange:        {api: []apiOp{{routenames.APIRentalsChange, "changeRental"}}},

	// A running rental's workspace.
	routenames.RentalsLogs:           {api: []apiOp{{routenames.APIRentalsLogs, "getRentalLogs"}}},
	routenames.RentalsFilesList:      {api: []apiOp{{routenames.APIRentalsFilesList, "listRentalFiles"}}},
	routenames.RentalsFilesDownload:  {api: []apiOp{{routenames.APIRentalsFilesDownload, "downloadRentalFile"}}},
	routenames.RentalsFilesUpload:    {api: []apiOp{{routenames.APIRentalsFilesUpload, "uploadRentalFiles"}}},
	routenames.RentalsSharesCreate:   {api: []apiOp{{routenames.APIRentalsSharesCreate, "createRentalShare"}}},
	routenames.RentalsSharesRevoke:   {api: []apiOp{{routenames.APIRentalsSharesRevoke, "revokeRentalShare"}}},
	routenames.RentalsJupyterRoot:    {exempt: exemptProxy},
	routenames.RentalsJupyter:        {exempt: exemptProxy},
	routenames.RentalsPortRoot:       {exempt: exemptProxy},
	routenames.RentalsPort:           {exempt: exemptProxy},
	routenames.RentalsTerminalSocket: {exempt: exemptProxy},
	routenames.ShareRoot:             {exempt: exemptProxy},
	routenames.Share:                 {exempt: exemptProxy},

	// The provider portal.
	routenames.ProviderSignup:            {api: []apiOp{{routenames.APIProviderSignup, "signUpProvider"}}},
	routenames.ProviderProfilePost:       {api: []apiOp{{routenames.APIProviderProfileUpdate, "updateProviderProfile"}}},
	routenames.ProviderDatacentersCreate: {api: []apiOp{{routenames.APIProviderDatacentersCreate, "createProviderDatacenter"}}},
	routenames.ProviderDatacentersUpdate: {api: []apiOp{{routenames.APIProviderDatacentersUpdate, "updateProviderDatacenter"}}},
	routenames.ProviderNodesCreate:       {api: []apiOp{{routenames.APIProviderNodesCreate, "createProviderNode"}}},
	routenames.ProviderNodesStatus:       {api: []apiOp{{routenames.APIProviderNodesUpdate, "updateProviderNode"}}},
	routenames.ProviderNodesToken:        {api: []apiOp{{routenames.APIProviderNodesToken, "renewProviderNodeToken"}}},
	routenames.ProviderOffersCreate:      {api: []apiOp{{routenames.APIProviderOffersCreate, "createProviderOffer"}}},
	routenames.ProviderOffersUpdate:      {api: []apiOp{{routenames.APIProviderOffersUpdate, "updateProviderOffer"}}},
	routenames.ProviderOffersStatus:      {api: []apiOp{{routenames.APIProviderOffersUpdate, "updateProviderOffer"}}},
	routenames.ProviderStatement:         {api: []apiOp{{routenames.APIProviderStatement, "getProviderStatement"}}},
	routenames.ProviderStatementCSV:      {api: []apiOp{{routenames.APIProviderStatement, "getProviderStatement"}}},
	routenames.ProviderConnect:           {api: []apiOp{{routenames.APIProviderConnect, "createProviderConnectLink"}}},
	routenames.ProviderConnectReturn:     {exempt: exemptReturn},

	// The platform's back office.
	routenames.AdminTopupsConfirm:   {exempt: exemptAdmin},
	routenames.AdminRefundsPaid:     {exempt: exemptAdmin},
	routenames.AdminReview:          {exempt: exemptAdmin},
	routenames.AdminUsersSuspend:    {exempt: exemptAdmin},
	routenames.AdminUsersUnsuspend:  {exempt: exemptAdmin},
	routenames.AdminUsersOrgsPerDay: {exempt: exemptAdmin},
	routenames.AdminOrgsSuspend:     {exempt: exemptAdmin},
	routenames.AdminOrgsUnsuspend:   {exempt: exemptAdmin},
	routenames.AdminPayoutsRun:      {exempt: exemptAdmin},
	routenames.AdminPayoutsPaid:     {exempt: exemptAdmin},
	routenames.AdminPayoutsFailed:   {exempt: exemptAdmin},
	routenames.AdminAuditCSV:        {exempt: exemptAdmin},
	routenames.AdminRealNameReveal:  {exempt: exemptAdmin},
	routenames.AdminRealNameReject:  {exempt: exemptAdmin},
	// An organisation's verification decided with its licence in front of staff.
	routenames.AdminOrgVerifyApprove: {exempt: exemptAdmin},
	routenames.AdminOrgVerifyReject:  {exempt: exemptAdmin},
	routenames.AdminOrgVerifyReset:   {exempt: exemptAdmin},

	// Machines.
	routenames.AgentHeartbeat: {exempt: exemptMachine},
	routenames.AgentResult:    {exempt: exemptMachine},
	routenames.AgentProgress:  {exempt: exemptMachine},
	routenames.WitnessResults: {exempt: exemptMachine},
}

// exemptions are the classes an exemption may name.
var exemptions = []string{exemptCredentials, exemptTokenCreate, exemptMailedLink, exemptProxy, exemptReturn, exemptMachine, exemptAdmin}

// page is how the API gives one console page's data: the operations that
// give it, the console action whose form the page is (that action's
// operations do what the form does), or both; or, alone, a view exemption
// (one of the classes below).
type page struct {
	api    []apiOp
	form   string
	exempt string
}

// Why a console page may give no data through the API.
const (
	// The frame of the container's own terminal.
	viewAppFrame = "the frame of the container's own app: the terminal page holds the terminal's WebSocket (exemptProxy) and nothing else; " +
		"tools reach the container itself over SSH (the rental's access.ssh)"
)

// viewExemptions are the classes a page's exemption may name.
var viewExemptions = []string{viewAppFrame}

// Operations that several pages show.
var (
	opProfile     = apiOp{routenames.APIProviderProfile, "getProviderProfile"}
	opDatacenters = apiOp{routenames.APIProviderDatacentersList, "listProviderDatacenters"}
	opNodes       = apiOp{routenames.APIProviderNodesList, "listProviderNodes"}
	opNode        = apiOp{routenames.APIProviderNodesShow, "getProviderNode"}
	opOffers      = apiOp{routenames.APIProviderOffersList, "listProviderOffers"}
	opRental      = apiOp{routenames.APIRentalsShow, "getRental"}
	opUsage       = apiOp{routenames.APIRentalsUsage, "getRentalUsage"}
	opWallet      = apiOp{routenames.APIWallet, "getWallet"}
	opOrders      = apiOp{routenames.APIStandingOrdersList, "listStandingOrders"}
)

// consolePages is the table of pages, by route name.
var consolePages = map[string]page{
	// Account and organisations.
	routenames.AccountShow: {api: []apiOp{{routenames.APIMe, "getMe"}, {routenames.APITokensList, "listAPITokens"}, {routenames.APIInvitationsMine, "listMyInvitations"}}},
	routenames.OrgsShow:    {api: []apiOp{{routenames.APIOrgsShow, "getOrg"}}},
	routenames.LabsApply:   {form: routenames.LabsApplyPost},
	// An organisation's verification: its status and newest submission, and its form.
	routenames.OrgVerify: {form: routenames.OrgVerifySubmit, api: []apiOp{{routenames.APIOrgVerify, "getOrgVerification"}}},
	// Real-name verification: its status is getMe's real_name.
	routenames.RealNameShow: {form: routenames.RealNameStart, api: []apiOp{{routenames.APIMe, "getMe"}}},
	// The invitation's token is in the mailed link; the page only offers to accept it.
	routenames.InvitationsAccept: {form: routenames.InvitationsAcceptPost},

	// The wallet. /wallet sends a person to their personal organisation's
	// wallet, which is getWallet's default too.
	routenames.WalletMine: {api: []apiOp{opWallet}},
	routenames.WalletShow: {api: []apiOp{opWallet, {routenames.APIWalletLedger, "listLedger"}, {routenames.APIWalletTopupsList, "listTopups"},
		{routenames.APIWalletRefunds, "listRefunds"}, {routenames.APIWalletBilling, "getBilling"}, {routenames.APIWalletAlerts, "getSpendAlerts"}}},
	routenames.TopupsShow: {api: []apiOp{{routenames.APIWalletTopupsShow, "getTopup"}}},

	// Rentals and standing orders. The console's wallets and spend alerts
	// are getWallet's (its runway and alerts); its standing-order card is
	// the notices below.
	routenames.Console:    {api: []apiOp{{routenames.APIRentalsList, "listRentals"}, opWallet}},
	routenames.RentalsNew: {form: routenames.RentalsCreate, api: []apiOp{{routenames.APIOffersShow, "getOffer"}, {routenames.APIOffersQuote, "quoteOffer"}}},
	// The open orders and those that ended lately; the notices card is
	// how many are open (status=open's total) and those that ended in the
	// last week (each order's status and ended_at).
	routenames.StandingOrders:        {form: routenames.StandingOrdersCreate, api: []apiOp{opOrders}},
	routenames.StandingOrdersNotices: {api: []apiOp{opOrders}},
	// The rental page: the rental (access, checks, timeline, idle-stop),
	// its GPU usage, share links and SLA; its live part polls the rental,
	// or has it pushed as server-sent events when it changes (events; an
	// API client polls getRental with If-None-Match).
	routenames.RentalsShow:     {api: []apiOp{opRental, opUsage, {routenames.APIRentalsSharesList, "listRentalShares"}, {routenames.APIRentalsSLA, "getRentalSLA"}}},
	routenames.RentalsLive:     {api: []apiOp{opRental}},
	routenames.RentalsEvents:   {api: []apiOp{opRental}},
	routenames.RentalsUsage:    {api: []apiOp{opUsage}},
	routenames.RentalsFiles:    {form: routenames.RentalsFilesUpload, api: []apiOp{{routenames.APIRentalsFilesList, "listRentalFiles"}}},
	routenames.RentalsTerminal: {exempt: viewAppFrame},

	// The provider portal. /provider lists the person's providers (or
	// offers the sign-up form when there are none).
	routenames.ProviderHome:            {api: []apiOp{{routenames.APIProvidersMine, "listMyProviders"}}},
	routenames.ProviderDashboard:       {api: []apiOp{opProfile, opDatacenters, opNodes, opOffers}},
	routenames.ProviderProfile:         {api: []apiOp{opProfile}},
	routenames.ProviderDatacenters:     {api: []apiOp{opDatacenters}},
	routenames.ProviderDatacentersEdit: {form: routenames.ProviderDatacentersUpdate, api: []apiOp{opDatacenters}},
	routenames.ProviderNodes:           {api: []apiOp{opNodes}},
	routenames.ProviderNodesLive:       {api: []apiOp{opNodes}},
	routenames.ProviderNodesShow:       {api: []apiOp{opNode}},
	routenames.ProviderNodesLiveOne:    {api: []apiOp{opNode}},
	routenames.ProviderOffers:          {api: []apiOp{opOffers}},
	routenames.ProviderOffersNew:       {form: routenames.ProviderOffersCreate, api: []apiOp{opNodes}},
	routenames.ProviderOffersEdit:      {form: routenames.ProviderOffersUpdate, api: []apiOp{{routenames.APIProviderOffersShow, "getProviderOffer"}}},
	routenames.ProviderCapacity:        {api: []apiOp{{routenames.APIProviderCapacity, "getProviderCapacity"}}},
	// The earnings page is the month's statement, with how the provider is
	// paid (the profile's bank details and Stripe Connect state).
	routenames.ProviderEarnings: {api: []apiOp{{routenames.APIProviderStatement, "getProviderStatement"}, opProfile}},
}

// downloadRe matches a GET route that hands out data: a CSV or JSON
// file, the container's output, a file or directory listing, a statement.
var downloadRe = regexp.MustCompile(`(\.csv|\.json|/logs|/download|/list|/export|/statement)$`)

// consoleAction reports whether a route of the table is a console action
// that TestConsoleParity must find in consoleParity.
func consoleAction(r route) bool {
	if strings.HasPrefix(r.path, "/api/") {
		return false
	}
	switch r.method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return downloadRe.MatchString(r.path)
	}
	return true
}

// consolePage reports whether a route of the table is a console page
// that TestConsoleParity must find in consolePages (or, for a GET that
// acts, in consoleParity).
func consolePage(r route) bool {
	return r.method == http.MethodGet && r.access == user && !strings.HasPrefix(r.path, "/api/") && !consoleAction(r)
}

// unlisted names the console actions and pages of the table that are in
// neither consoleParity nor consolePages, sorted.
func unlisted(table []route) []string {
	var missing []string
	for _, r := range table {
		_, action := consoleParity[r.name]
		_, pg := consolePages[r.name]
		switch {
		case consoleAction(r) && !action:
			missing = append(missing, "console action "+r.name+" ("+r.method+" "+r.path+") has no API endpoint: add one (and document it in openapi/openapi.json) "+
				"and pair them in consoleParity (web/parity_test.go), or give it an exemption whose reason holds")
		case consolePage(r) && !action && !pg:
			missing = append(missing, "console page "+r.name+" ("+r.method+" "+r.path+") is not in consolePages: pair it with the API operations that give its data "+
				"(add a read endpoint where none does, documented in openapi/openapi.json), or name the action whose form it is, or give it a view exemption whose reason holds")
		}
	}
	sort.Strings(missing)
	return missing
}

// templatePath is a route's path as the OpenAPI document writes it, its
// parameters anonymous (/api/v1/orgs/{}/members/{}), for comparing.
var (
	echoParamRe = regexp.MustCompile(`:[a-z_]+`)
	docParamRe  = regexp.MustCompile(`\{[a-z_]+\}`)
)

func anonymous(path string) string {
	return docParamRe.ReplaceAllString(echoParamRe.ReplaceAllString(path, "{}"), "{}")
}

// Every console action maps to documented API operations or carries an
// exemption of a known class, and every console page to the operations
// that give its data, the action whose form it is, or a view exemption;
// every entry of the tables is a route of its kind; every operation named
// is the named route's method and path in the document.
func TestConsoleParity(t *testing.T) {
	table := routes(&handlers.Handler{}, newMetrics())
	byName := map[string]route{}
	for _, r := range table {
		byName[r.name] = r
	}
	ops := map[string]openapi.Operation{}
	for _, op := range openapi.Operations() {
		if op.ID == "" {
			t.Errorf("the OpenAPI operation %s %s has no operationId", op.Method, op.Path)
			continue
		}
		if _, dup := ops[op.ID]; dup {
			t.Errorf("operationId %s is used twice", op.ID)
		}
		ops[op.ID] = op
	}
	for _, m := range unlisted(table) {
		t.Error(m)
	}
	// checkOps checks that each operation a table names for what is the
	// named route's method and path in the document.
	checkOps := func(what string, as []apiOp) {
		for _, a := range as {
			r, ok := byName[a.route]
			if !ok {
				t.Errorf("%s: its API route %q is not in the route table", what, a.route)
				continue
			}
			if !strings.HasPrefix(r.path, "/api/v1/") {
				t.Errorf("%s: %q (%s) is not an API route", what, a.route, r.path)
			}
			op, ok := ops[a.operationID]
			if !ok {
				t.Errorf("%s: operationId %s is not in openapi/openapi.json", what, a.operationID)
				continue
			}
			if op.Method != r.method || anonymous(op.Path) != anonymous(r.path) {
				t.Errorf("%s: operation %s is %s %s in the document, but route %s is %s %s", what, a.operationID, op.Method, op.Path, a.route, r.method, r.path)
			}
		}
	}

	known := map[string]bool{}
	for _, e := range exemptions {
		known[e] = true
	}
	for _, name := range slices.Sorted(maps.Keys(consoleParity)) {
		p := consoleParity[name]
		r, ok := byName[name]
		if !ok {
			t.Errorf("consoleParity names %q, which is no route", name)
			continue
		}
		// A GET that acts (a mailed link, a WebSocket, a return from
		// Stripe) may be listed as an action; a page that only shows may not.
		if !consoleAction(r) && !consolePage(r) {
			t.Errorf("consoleParity names %s (%s %s), which is neither a console action nor a console page", name, r.method, r.path)
		}
		switch {
		case len(p.api) > 0 && p.exempt != "":
			t.Errorf("console action %s has both API operations and an exemption", name)
		case len(p.api) == 0 && p.exempt == "":
			t.Errorf("console action %s has neither API operations nor an exemption", name)
		case p.exempt != "" && !known[p.exempt]:
			t.Errorf("console action %s is exempt for a reason of no known class: %q", name, p.exempt)
		}
		checkOps("console action "+name, p.api)
	}

	knownView := map[string]bool{}
	for _, e := range viewExemptions {
		knownView[e] = true
	}
	for _, name := range slices.Sorted(maps.Keys(consolePages)) {
		p := consolePages[name]
		r, ok := byName[name]
		if !ok {
			t.Errorf("consolePages names %q, which is no route", name)
			continue
		}
		if !consolePage(r) {
			t.Errorf("consolePages names %s (%s %s), which is not a console page", name, r.method, r.path)
		}
		if _, both := consoleParity[name]; both {
			t.Errorf("%s is in both consoleParity and consolePages", name)
		}
		switch {
		case p.exempt != "" && (len(p.api) > 0 || p.form != ""):
			t.Errorf("console page %s has an exemption and API operations or a form", name)
		case p.exempt == "" && len(p.api) == 0 && p.form == "":
			t.Errorf("console page %s has neither API operations, a form nor an exemption", name)
		case p.exempt != "" && !knownView[p.exempt]:
			t.Errorf("console page %s is exempt for a reason of no known class: %q", name, p.exempt)
		}
		if p.form != "" {
			// The form's action must be one the API does: its operations
			// are the page's API.
			if a, ok := consoleParity[p.form]; !ok || len(a.api) == 0 {
				t.Errorf("console page %s is the form of %q, which is no console action paired with API operations", name, p.form)
			}
		}
		checkOps("console page "+name, p.api)
	}
}

// The parity test finds a console action or page that is in neither
// table: a new POST route, a new CSV export, a new proxied app and a new
// page of a signed-in person, added to the real table, are named as
// missing, and nothing else is; a new admin page, public page or API
// route is not asked for.
func TestConsoleParityCatchesANewAction(t *testing.T) {
	table := routes(&handlers.Handler{}, newMetrics())
	added := []route{
		{method: http.MethodPost, path: "/orgs/:id/archive", name: "orgs.archive", access: user},
		{method: http.MethodGet, path: "/orgs/:id/members.csv", name: "orgs.members_csv", access: user},
		{method: anyMethod, path: "/rentals/:id/new-app/*", name: "rentals.new_app", access: user},
		{method: http.MethodGet, path: "/provider/:pid/forecast", name: "provider.forecast", access: user},
	}
	ignored := []route{
		{method: http.MethodGet, path: "/admin/forecast", name: "admin.forecast", access: admin},
		{method: http.MethodGet, path: "/gpus", name: "gpus", access: public},
		{method: http.MethodGet, path: "/api/v1/provider/forecast", name: "api.provider.forecast", access: user},
		{method: http.MethodPost, path: "/api/v1/orgs/:id/archive", name: "api.orgs.archive", access: user},
	}
	missing := unlisted(slices.Concat(table, added, ignored))
	if len(missing) != len(added) {
		t.Errorf("%d missing, want %d (the added routes):\n%s", len(missing), len(added), strings.Join(missing, "\n"))
	}
	for _, r := range added {
		found := false
		for _, m := range missing {
			found = found || strings.Contains(m, " "+r.name+" (")
		}
		if !found {
			t.Errorf("%s %s (%s) is not named as missing", r.method, r.path, r.name)
		}
	}
	// The real table alone lacks nothing (TestConsoleParity says what).
	if m := unlisted(table); len(m) > 0 {
		t.Errorf("the route table lacks %d entries, e.g. %s", len(m), m[0])
	}
}
