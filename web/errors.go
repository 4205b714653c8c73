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

// status maps an application error code to its HTTP status, once.
func status(code string, api bool) int {
	switch code {
	case apperr.EINVALID:
		if api {
			return http.StatusBadRequest
		}
		return http.StatusUnprocessableEntity
	case apperr.ENOTFOUND:
		return http.StatusNotFound
	case apperr.ECONFLICT:
		return http.StatusConflict
	case apperr.EFORBIDDEN:
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

func isAPI(c echo.Context) bool {
	p := c.Request().URL.Path
	return strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/agent/") || strings.HasPrefix(p, "/webhooks/")
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
		slog.Debug("request abandoned by the client", "path", c.Request().URL.Path, "request_id", requestID(c))
		c.Response().WriteHeader(499)
		return
	}
	api := isAPI(c)
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
		st = status(code, api)
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
	attrs := append([]any{"status", st, "code", code, "err", err, "request_id", requestID(c), "path", c.Request().URL.Path}, reqlog.Attrs(c.Request().Context())...)
	if st >= 500 {
		slog.Error("request failed", attrs...)
	} else {
		slog.Warn("request rejected", attrs...)
	}
	if api {
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
