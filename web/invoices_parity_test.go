package web

import "suanli/routenames"

// The invoices' console actions and pages (handlers/invoices), paired
// with their API operations as TestConsoleParity wants; the admins' are
// back office.
func init() {
	list := apiOp{routenames.APIInvoicesList, "listInvoices"}
	consoleParity[routenames.InvoicesCreate] = parity{api: []apiOp{{routenames.APIInvoicesCreate, "createInvoice"}}}
	consoleParity[routenames.InvoicesCancel] = parity{api: []apiOp{{routenames.APIInvoicesCancel, "cancelInvoice"}}}
	// The month's CSV is the list with ?month.
	consoleParity[routenames.InvoicesCSV] = parity{api: []apiOp{list}}
	for _, name := range []string{routenames.AdminInvoicesCSV, routenames.AdminInvoicesIssue, routenames.AdminInvoicesReject,
		routenames.AdminInvoicesVoid, routenames.AdminInvoicesReverse} {
		consoleParity[name] = parity{exempt: exemptAdmin}
	}
	consolePages[routenames.InvoicesPage] = page{form: routenames.InvoicesCreate, api: []apiOp{list, {routenames.APIInvoicesShow, "getInvoice"}}}
	consolePages[routenames.InvoicesFile] = page{api: []apiOp{{routenames.APIInvoicesFile, "downloadInvoiceFile"}}}
}
