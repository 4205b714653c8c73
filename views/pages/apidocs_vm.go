package pages

import "suanli/openapi"

// APIDocsVM is the API reference page's view model: the OpenAPI
// document's operations, grouped by their first tag in document order.
type APIDocsVM struct {
	Info   openapi.Info
	Groups []APIDocsGroup
}

// APIDocsGroup is the operations of one tag.
type APIDocsGroup struct {
	Tag        string
	Operations []openapi.Operation
}
