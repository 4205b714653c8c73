// Package apiclient is a Go client of the Suanli API (/api/v1), generated
// by oapi-codegen from openapi/openapi.json, the one source of the API's
// document, in the OpenAPI 3.0 form openapi.Document30 derives from it.
// client.gen.go holds the models (Offer, Rental, …), Client and
// ClientWithResponses (ListOffersWithResponse, …); never edit it: change
// openapi.json and run `go generate ./apiclient`. The test suite
// regenerates it and fails when the committed file differs.
package apiclient

//go:generate go run ./gen
