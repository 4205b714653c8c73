package browser

import (
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/agent"
	"suanli/apperr"
	"suanli/handlers"
	"suanli/locales"
	"suanli/routenames"
	"suanli/tunnel"
	"suanli/views/rentalpages"
)

// TerminalPage is GET /rentals/{id}/terminal: xterm.js, which opens
// TerminalSocket.
func (w *Handler) TerminalPage(c echo.Context) error {
	ws, err := w.workspace(c)
	if err != nil {
		return err
	}
	c.Set(handlers.InlineStylesKey, true)
	return handlers.Render(c, http.StatusOK, rentalpages.TerminalPage(handlers.ViewCtx(c), rentalpages.TerminalVM{RentalID: ws.RentalID}))
}

// FilesPage is GET /rentals/{id}/files?path=: one directory of the
// workspace, with download links and an upload form.
func (w *Handler) FilesPage(c echo.Context) error {
	ws, err := w.workspace(c)
	if err != nil {
		return err
	}
	dir, ok := tunnel.WorkspacePath(c.QueryParam("path"))
	if !ok {
		return errBadPath
	}
	d, err := w.Rentals.Detail(c.Request().Context(), ws.RentalID)
	if err != nil {
		return err
	}
	vm := rentalpages.FilesVM{RentalID: ws.RentalID, Dir: dir}
	if d.Access != nil && d.Access.Port > 0 {
		vm.SCP = agent.SCPCommand(d.Access.User, d.Access.Host, d.Access.Port, path.Join("/workspace", dir)+"/")
	}
	if dir != "" {
		acc := ""
		for _, el := range strings.Split(dir, "/") {
			acc = path.Join(acc, el)
			vm.Crumbs = append(vm.Crumbs, rentalpages.Crumb{Name: el, Dir: acc})
		}
	}
	l, err := w.listing(c, ws, dir)
	status := http.StatusOK
	switch {
	case err == nil:
		vm.Truncated = l.Truncated
		for _, e := range l.Entries {
			vm.Entries = append(vm.Entries, rentalpages.FileEntry{Name: e.Name, Dir: e.Dir, Size: e.Size, ModTime: e.ModTime, Path: path.Join(dir, e.Name)})
		}
	case pathProblem(err):
		status = http.StatusNotFound
		vm.Error = locales.T(handlers.Lang(c), "err.workspace_path")
	default:
		return err
	}
	return handlers.Render(c, status, rentalpages.FilesPage(handlers.ViewCtx(c), vm))
}

// ShareCreate is POST /rentals/{id}/shares (port, hours): a share link
// for a declared port, shown once in the flash.
func (w *Handler) ShareCreate(c echo.Context) error {
	id, err := rentalID(c)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(c.FormValue("port"))
	if err != nil {
		return apperr.Field("port", "err.port_not_declared", c.FormValue("port"))
	}
	hours, err := strconv.Atoi(c.FormValue("hours"))
	if err != nil {
		return apperr.Field("hours", "err.share_ttl", 1, 168)
	}
	token, sh, err := w.ws.CreateShare(c.Request().Context(), handlers.CurrentUser(c), id, port, time.Duration(hours)*time.Hour)
	if err != nil {
		return err
	}
	// Shown on this answer only: the token is kept nowhere (not even in
	// the session, for a flash).
	link := strings.TrimRight(w.Rentals.BaseURL, "/") + sharePrefix(token) + "/"
	c.Response().Header().Set("Cache-Control", "no-store")
	return handlers.Render(c, http.StatusCreated, rentalpages.ShareCreatedPage(handlers.ViewCtx(c),
		rentalpages.ShareCreatedVM{RentalID: id, Port: sh.Port, Link: link, ExpiresAt: sh.ExpiresAt}))
}

// ShareRevoke is POST /rentals/{id}/shares/{sid}/revoke.
func (w *Handler) ShareRevoke(c echo.Context) error {
	id, err := rentalID(c)
	if err != nil {
		return err
	}
	sid, err := strconv.ParseInt(c.Param("sid"), 10, 64)
	if err != nil {
		return apperr.NotFound("share link")
	}
	if err := w.ws.RevokeShare(c.Request().Context(), handlers.CurrentUser(c), id, sid); err != nil {
		return err
	}
	w.Flash(c, "workspace.share_revoked")
	return handlers.SeeOther(c, c.Echo().Reverse(routenames.RentalsShow, strconv.FormatInt(id, 10))+"#rental-workspace")
}

// pathProblem reports whether err is about the path asked for (not there,
// not allowed: answer's errors naming "path"), which the files page shows
// in place of the listing.
func pathProblem(err error) bool {
	ae, ok := apperr.As(err)
	return ok && ae.Field == "path"
}
