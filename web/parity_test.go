package web

import (
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"suanli/handlers"
	"suanli/openapi"
	"suanli/routenames"
)

// Parity (issue 19): every action the console offers has an API endpoint.
// A console action is a route outside /api/ that changes something (any
// method but GET, HEAD and OPTIONS) or hands out data (a download: a CSV
// export, the container's output, the workspace's files, a statement).
// consoleParity pairs each with the API operations that do the same, or
// says why it has none; TestConsoleParity walks the route table and the
// OpenAPI document and fails on a console action with neither, naming it.

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

	// Machines.
	routenames.AgentHeartbeat: {exempt: exemptMachine},
	routenames.AgentResult:    {exempt: exemptMachine},
	routenames.AgentProgress:  {exempt: exemptMachine},
	routenames.WitnessResults: {exempt: exemptMachine},
}

// exemptions are the classes an exemption may name.
var exemptions = []string{exemptCredentials, exemptTokenCreate, exemptMailedLink, exemptProxy, exemptMachine, exemptAdmin}

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
// exemption of a known class; every entry of the table is a route; every
// operation named is the named route's method and path in the document.
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
	known := map[string]bool{}
	for _, e := range exemptions {
		known[e] = true
	}
	var missing []string
	for _, r := range table {
		if !consoleAction(r) {
			continue
		}
		if _, ok := consoleParity[r.name]; !ok {
			missing = append(missing, r.name+" ("+r.method+" "+r.path+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("console action %s has no API endpoint: add one (and document it in openapi/openapi.json) and pair them in consoleParity (web/parity_test.go), or give it an exemption whose reason holds", m)
	}
	names := make([]string, 0, len(consoleParity))
	for n := range consoleParity {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		p := consoleParity[name]
		if _, ok := byName[name]; !ok {
			t.Errorf("consoleParity names %q, which is no route", name)
			continue
		}
		switch {
		case len(p.api) > 0 && p.exempt != "":
			t.Errorf("console action %s has both API operations and an exemption", name)
		case len(p.api) == 0 && p.exempt == "":
			t.Errorf("console action %s has neither API operations nor an exemption", name)
		case p.exempt != "" && !known[p.exempt]:
			t.Errorf("console action %s is exempt for a reason of no known class: %q", name, p.exempt)
		}
		for _, a := range p.api {
			r, ok := byName[a.route]
			if !ok {
				t.Errorf("console action %s: its API route %q is not in the route table", name, a.route)
				continue
			}
			if !strings.HasPrefix(r.path, "/api/v1/") {
				t.Errorf("console action %s: %q (%s) is not an API route", name, a.route, r.path)
			}
			op, ok := ops[a.operationID]
			if !ok {
				t.Errorf("console action %s: operationId %s is not in openapi/openapi.json", name, a.operationID)
				continue
			}
			if op.Method != r.method || anonymous(op.Path) != anonymous(r.path) {
				t.Errorf("console action %s: operation %s is %s %s in the document, but route %s is %s %s", name, a.operationID, op.Method, op.Path, a.route, r.method, r.path)
			}
		}
	}
}

// The parity test finds a console action that has neither: a new POST
// route, and a new CSV export, not in the table, are named as missing.
func TestConsoleParityCatchesANewAction(t *testing.T) {
	for _, r := range []route{
		{method: http.MethodPost, path: "/orgs/:id/archive", name: "orgs.archive"},
		{method: http.MethodGet, path: "/orgs/:id/members.csv", name: "orgs.members_csv"},
		{method: anyMethod, path: "/rentals/:id/new-app/*", name: "rentals.new_app"},
	} {
		if !consoleAction(r) {
			t.Errorf("%s %s is not taken for a console action", r.method, r.path)
		}
		if _, ok := consoleParity[r.name]; ok {
			t.Errorf("%s is in the table", r.name)
		}
	}
	for _, r := range []route{
		{method: http.MethodGet, path: "/orgs/:id", name: "orgs.show"},
		{method: http.MethodPost, path: "/api/v1/orgs", name: "api.orgs.create"},
	} {
		if consoleAction(r) {
			t.Errorf("%s %s is taken for a console action", r.method, r.path)
		}
	}
}
