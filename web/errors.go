package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
	"suanli/reqlog"
	"suanli/views/pages"
)

func init() {
	// Handlers show refused forms with the status of this one mapping;
	// they cannot import web, so web hands it to them.
	handlers.ErrorStatus = func(err error) int { return Status(err, false) }
}

// Status is the HTTP status of an error: the one mapping from
// application errors to HTTP. Every code has one status, pages and API
// alike (codeStatus), but for bad input, EINVALID, which is answered
// the way the surface shows it:
//
//   - a form's problems (apperr.Fields: fields checked together, every
//     problem listed) are 422 Unprocessable Content everywhere: a page
//     shows the form again with each message beside its field, the API
//     lists them in error.fields;
//   - on a page any other EINVALID is shown as the problem of the page's
//     form or filter, so it is 422 too (STYLE.md: forms re-render with
//     422);
//   - in the API a single bad parameter or body is 400 Bad Request, the
//     public contract documented in openapi/openapi.json.
//
// Anything that is no *apperr.Error is 500.
func Status(err error, api bool) int {
	if f, ok := asFields(err); ok && len(f) > 0 {
		return http.StatusUnprocessableEntity
	}
	ae, ok := apperr.As(err)
	if !ok {
		return http.StatusInternalServerError
	}
	if ae.Code == apperr.EINVALID && !api {
		return http.StatusUnprocessableEntity
	}
	return codeStatus(ae.Code)
}

// codeStatus is the HTTP status of each application error code (for
// EINVALID: of a single bad parameter of the API; see Status).
func codeStatus(code string) int {
	switch code {
	case apperr.EINVALID:
		return http.StatusBadRequest
	case apperr.ENOTFOUND:
		return http.StatusNotFound
	case apperr.ECONFLICT, apperr.ENOCAPACITY, apperr.EOFFERTAKEN:
		return http.StatusConflict
	case apperr.EINSUFFICIENTFUNDS:
		return http.StatusPaymentRequired
	case apperr.EIMAGEINCOMPATIBLE:
		return http.StatusUnprocessableEntity
	case apperr.EFORBIDDEN, apperr.EREALNAMEREQUIRED:
		return http.StatusForbidden
	case apperr.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case apperr.ERATELIMIT:
		return http.StatusTooManyRequests
	case apperr.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	case apperr.EMALFORMED:
		return http.StatusBadRequest
	case apperr.ETOOLARGE:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusInternalServerError
}

// asFields returns the form's problems inside err, if it is (or wraps)
// apperr.Fields.
func asFields(err error) (apperr.Fields, bool) {
	var f apperr.Fields
	ok := errors.As(err, &f)
	return f, ok
}

// fieldProblem is one field's problem in a 422 answer of the API.
type fieldProblem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// jsonInvalid is the API's 422 answer: the usual error object (code
// invalid, the first problem as message and param) plus every field's
// problem.
type jsonInvalid struct {
	Error struct {
		handlers.JSONErrorBody
		Fields []fieldProblem `json:"fields"`
	} `json:"error"`
}

// jsonFields is the API's answer to a form's problems.
func jsonFields(f apperr.Fields) jsonInvalid {
	var out jsonInvalid
	out.Error.Code, out.Error.Message, out.Error.Param = apperr.EINVALID, f[0].Message, f[0].Field
	for _, e := range f {
		out.Error.Fields = append(out.Error.Fields, fieldProblem{Field: e.Field, Message: e.Message})
	}
	return out
}

func isAPI(c echo.Context) bool {
	p := c.Request().URL.Path
	return strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/agent/") || strings.HasPrefix(p, "/witness/") || strings.HasPrefix(p, "/webhooks/")
}

// answersJSON reports whether an error is answered as the API answers it
// (JSON, 400 for a bad parameter): on the API's paths, and for a script
// that asks a page's route for JSON (Accept: application/json first, as
// the workspace's file listing and upload take it). Only the answer's
// form: who may call stays isAPI's (a bearer token opens no page).
func answersJSON(c echo.Context) bool {
	return isAPI(c) || strings.HasPrefix(c.Request().Header.Get("Accept"), "application/json")
}

// errorHandler is the one place errors become responses: JSON for the API,
// an HTML page for people. 5xx are logged as errors with the request id
// and never show their details; 4xx are logged as warnings.
func errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		slog.Error("error after response started", "err", err, "request_id", requestID(c))
		return
	}
	if errors.Is(err, context.Canceled) && c.Request().Context().Err() != nil {
		// The client went away (an agent's long-poll at shutdown, a closed
		// tab): nobody reads an answer, and it is no server error.
		slog.Debug("request abandoned by the client", "path", loggedPath(c.Request().URL.Path), "request_id", requestID(c))
		c.Response().WriteHeader(499)
		return
	}
	api := answersJSON(c)
	var (
		code   = apperr.EINTERNAL
		msg    = "internal error"
		param  string
		st     = http.StatusInternalServerError
		he     *echo.HTTPError
		msgKey = "error.internal"
	)
	if ae, ok := apperr.As(err); ok {
		code, msg, param = ae.Code, ae.Message, ae.Field
		st = Status(err, api)
		msgKey = ""
	} else if errors.As(err, &he) {
		st = he.Code
		switch st {
		case http.StatusNotFound:
			code, msg, msgKey = apperr.ENOTFOUND, "not found", "error.not_found"
		case http.StatusMethodNotAllowed:
			code, msg, msgKey = "method_not_allowed", "method not allowed", "error.method"
		case http.StatusTooManyRequests:
			code, msg, msgKey = "rate_limited", "too many requests", "error.rate_limited"
		default:
			if st < 500 {
				code, msg, msgKey = apperr.EINVALID, http.StatusText(st), "error.bad_request"
			}
		}
	}
	attrs := append([]any{"status", st, "code", code, "err", err, "request_id", requestID(c), "path", loggedPath(c.Request().URL.Path)}, reqlog.Attrs(c.Request().Context())...)
	if st >= 500 {
		slog.Error("request failed", attrs...)
	} else {
		slog.Warn("request rejected", attrs...)
	}
	if api {
		if f, ok := asFields(err); ok && len(f) > 0 {
			_ = c.JSON(st, jsonFields(f))
			return
		}
		_ = c.JSON(st, handlers.JSONError{Error: handlers.JSONErrorBody{Code: code, Message: msg, Param: param}})
		return
	}
	vc := handlers.ViewCtx(c)
	var title string
	switch {
	case st == http.StatusNotFound:
		title = vc.T("error.title.not_found")
	case st >= 500:
		title = vc.T("error.title.internal")
	default:
		title = vc.T("error.title.bad_request")
	}
	text := msg
	if msgKey != "" {
		text = vc.T(msgKey)
	} else if ae, ok := apperr.As(err); ok && ae.Key != "" {
		text = vc.T(ae.Key, ae.Args...)
	} else if st == http.StatusNotFound {
		text = vc.T("error.not_found")
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(st)
		return
	}
	if rerr := handlers.Render(c, st, pages.ErrorPage(vc, st, title, text)); rerr != nil {
		slog.Error("render error page", "err", rerr, "request_id", requestID(c))
	}
}

func requestID(c echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
}
