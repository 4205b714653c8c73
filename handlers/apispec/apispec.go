// Package apispec serves the API's OpenAPI document in the forms derived
// from openapi/openapi.json, for tools that cannot read its 3.1 form.
package apispec

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"suanli/openapi"
)

// OpenAPI30 is GET /api/v1/openapi-3.0.json: the document in OpenAPI 3.0.3
// form (openapi.Document30), which client generators such as oapi-codegen
// read; package apiclient is generated from it.
func OpenAPI30(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openapi.Document30())
}
