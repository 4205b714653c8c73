package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"suanli/openapi"
	"suanli/views/pages"
)

// APIOpenAPI is GET /api/v1/openapi.json: the OpenAPI 3.1 document of
// /api/v1, as embedded in the binary.
func (h *Handler) APIOpenAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openapi.JSON())
}

// APIDocs is GET /api/docs: the API reference, rendered from the same
// document, grouped by tag.
func (h *Handler) APIDocs(c echo.Context) error {
	vm := pages.APIDocsVM{Info: openapi.DocInfo()}
	byTag := map[string]int{}
	for _, op := range openapi.Operations() {
		i, ok := byTag[op.Tag]
		if !ok {
			i = len(vm.Groups)
			byTag[op.Tag] = i
			vm.Groups = append(vm.Groups, pages.APIDocsGroup{Tag: op.Tag})
		}
		vm.Groups[i].Operations = append(vm.Groups[i].Operations, op)
	}
	return Render(c, http.StatusOK, pages.APIDocsPage(ViewCtx(c), vm))
}
