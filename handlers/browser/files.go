package browser

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/apperr"
	"suanli/handlers"
	"suanli/locales"
	"suanli/tunnel"
	"suanli/views"
	"suanli/workspace"
)

var errBadPath = apperr.Field("path", "err.workspace_path")

// FilesList is GET /rentals/{id}/files/list?path=: a workspace directory
// as JSON (tunnel.Listing).
func (w *Handler) FilesList(c echo.Context) error {
	ws, err := w.workspace(c)
	if err != nil {
		return err
	}
	p, ok := tunnel.WorkspacePath(c.QueryParam("path"))
	if !ok {
		return errBadPath
	}
	return w.forward(c, &target{ws: ws, kind: tunnel.TargetFiles, path: "/", query: url.Values{"path": {p}}.Encode()})
}

// FileDownload is GET /rentals/{id}/files/download?path=: a workspace
// file, streamed (ranges too), as an attachment.
func (w *Handler) FileDownload(c echo.Context) error {
	ws, err := w.workspace(c)
	if err != nil {
		return err
	}
	p, ok := tunnel.WorkspacePath(c.QueryParam("path"))
	if !ok || p == "" {
		return errBadPath
	}
	c.Response().Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
	return w.forward(c, &target{ws: ws, kind: tunnel.TargetFiles, path: "/", query: url.Values{"path": {p}, "download": {"1"}}.Encode(), recheck: w.recheck(c, ws)})
}

// listing asks the node's agent (or the replica holding its tunnel) for
// a workspace directory.
func (w *Handler) listing(c echo.Context, ws *workspace.Workspace, dir string) (*tunnel.Listing, error) {
	r := c.Request()
	local, replica, err := w.Tunnels.Route(r.Context(), ws.NodeID)
	if err != nil {
		return nil, err
	}
	q := url.Values{"path": {dir}}.Encode()
	var req *http.Request
	var rt http.RoundTripper
	switch {
	case local:
		req, err = http.NewRequestWithContext(r.Context(), http.MethodGet, "http://"+nodeHost(ws.NodeID)+"/?"+q, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set(tunnel.HeaderRental, strconv.FormatInt(ws.RentalID, 10))
		req.Header.Set(tunnel.HeaderTarget, tunnel.TargetFiles)
		rt = w.tunnelTransport
	case replica != "" && r.Header.Get(HopHeader) == "":
		// The holder answers its own JSON route for this user: the
		// request goes with the user's cookies, as the browser sent it.
		req, err = http.NewRequestWithContext(r.Context(), http.MethodGet, strings.TrimRight(replica, "/")+"/rentals/"+strconv.FormatInt(ws.RentalID, 10)+"/files/list?"+q, nil)
		if err != nil {
			return nil, err
		}
		req.Host = r.Host
		req.Header.Set("Cookie", r.Header.Get("Cookie"))
		req.Header.Set(HopHeader, "1")
		rt = w.viaReplica.Transport
	default:
		return nil, errNotConnected
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, answer(err)
	}
	defer resp.Body.Close()
	if code := resp.Header.Get(tunnel.HeaderError); code != "" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return nil, answer(&agentError{code: code, status: resp.StatusCode, text: strings.TrimSpace(string(b))})
	}
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusUnprocessableEntity || resp.StatusCode == http.StatusBadRequest {
			return nil, errBadPath
		}
		return nil, answer(errors.New(resp.Status))
	}
	var l tunnel.Listing
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&l); err != nil {
		return nil, answer(err)
	}
	return &l, nil
}

// FileUpload is POST /rentals/{id}/files: a multipart form (the CSRF
// token first, then dir, then one or more file parts) streamed part by
// part into the workspace, never held whole in memory or on the server's
// disk. A script may send the token in X-CSRF-Token instead. A browser
// asking for JSON gets the uploads (tunnel.Upload) as JSON; a form is
// sent back to the files page. The API's POST /api/v1/rentals/{id}/files
// is the same, with a token and no CSRF token, answering JSON.
func (w *Handler) FileUpload(c echo.Context) error {
	ws, err := w.workspace(c)
	if err != nil {
		return err
	}
	r := c.Request()
	if !sameOrigin(r) {
		return errCrossSite
	}
	// What the form's reader takes of the body until the token is read,
	// so that the whole body can still be passed on to another replica.
	body := r.Body
	rec := &recorder{r: body, on: true}
	r.Body = io.NopCloser(rec)
	mr, err := r.MultipartReader()
	if err != nil {
		return apperr.Field("file", "err.upload_form")
	}
	if err := checkUploadToken(c, mr); err != nil {
		return err
	}
	local, replica, err := w.Tunnels.Route(r.Context(), ws.NodeID)
	if err != nil {
		return err
	}
	if !local {
		if replica == "" || r.Header.Get(HopHeader) != "" {
			return errNotConnected
		}
		// The holder reads the form itself, from its start.
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(rec.buf.Bytes()), body))
		return w.forward(c, &target{ws: ws, replica: replica})
	}
	rec.stop()
	rc := http.NewResponseController(c.Response())
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	dir := ""
	var done []tunnel.Upload
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return apperr.Field("file", "err.upload_form")
		}
		switch part.FormName() {
		case "dir":
			b, _ := io.ReadAll(io.LimitReader(part, 4096))
			if !apperr.Storable(string(b)) {
				return apperr.Malformed("dir")
			}
			d, ok := tunnel.WorkspacePath(string(b))
			if !ok {
				return errBadPath
			}
			dir = d
		case "file":
			if !apperr.Storable(part.FileName()) {
				return apperr.Malformed("file")
			}
			name := path.Base(strings.ReplaceAll(part.FileName(), "\\", "/"))
			if name == "" || name == "." || name == "/" || name == ".." {
				continue // an empty file input
			}
			p, ok := tunnel.WorkspacePath(path.Join(dir, name))
			if !ok || p == "" {
				return errBadPath
			}
			up, err := w.put(r.Context(), ws, p, fullReads{part})
			if err != nil {
				return err
			}
			done = append(done, *up)
		}
		_ = part.Close()
	}
	if len(done) == 0 {
		return apperr.Field("file", "err.upload_none")
	}
	if strings.Contains(r.Header.Get("Accept"), "application/json") || strings.HasPrefix(r.URL.Path, "/api/") {
		return c.JSON(http.StatusCreated, map[string]any{"uploads": done})
	}
	lang := handlers.Lang(c)
	names := make([]string, len(done))
	for i, u := range done {
		names[i] = locales.T(lang, "workspace.uploaded_file", u.Path, views.Bytes(u.Size), u.SHA256)
	}
	w.Flash(c, "workspace.uploaded", strings.Join(names, locales.T(lang, "msg.list_sep")))
	return c.Redirect(http.StatusSeeOther, filesURL(ws.RentalID, dir))
}

// checkUploadToken checks an upload's CSRF token: X-CSRF-Token, else the
// form's first part, _csrf (read before anything else of the body).
func checkUploadToken(c echo.Context, mr *multipart.Reader) error {
	if bearerToken(c) != "" {
		// An API request made with a token carries no cookie to forge:
		// no CSRF token (web's csrf passes it by too).
		return nil
	}
	ok, _ := c.Get(handlers.CSRFCheckKey).(func(string) bool)
	if ok == nil {
		return errCSRF
	}
	if sent := c.Request().Header.Get("X-CSRF-Token"); sent != "" {
		if ok(sent) {
			return nil
		}
		return errCSRF
	}
	part, err := mr.NextPart()
	if err != nil || part.FormName() != "_csrf" {
		return errCSRF
	}
	b, _ := io.ReadAll(io.LimitReader(part, 256))
	_ = part.Close()
	if !ok(string(b)) {
		return errCSRF
	}
	return nil
}

var errCSRF = &apperr.Error{Code: apperr.EFORBIDDEN, Message: "missing or invalid CSRF token", Key: "err.csrf"}

// recorder keeps what is read through it while on, up to maxRecorded.
type recorder struct {
	r   io.Reader
	buf bytes.Buffer
	on  bool
}

// maxRecorded bounds what a recorder keeps: the form's start, with the
// token, is far shorter.
const maxRecorded = 64 << 10

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if r.on {
		if r.buf.Len()+n > maxRecorded {
			return n, errors.New("the form's start is too long")
		}
		r.buf.Write(p[:n])
	}
	return n, err
}

// stop ends the recording: the rest streams through.
func (r *recorder) stop() {
	r.on = false
	r.buf = bytes.Buffer{}
}

// filesURL is the files page of a directory.
func filesURL(id int64, dir string) string {
	u := "/rentals/" + strconv.FormatInt(id, 10) + "/files"
	if dir != "" {
		u += "?" + url.Values{"path": {dir}}.Encode()
	}
	return u
}

// put streams body into the workspace file p through the tunnel.
func (w *Handler) put(ctx context.Context, ws *workspace.Workspace, p string, body io.Reader) (*tunnel.Upload, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+nodeHost(ws.NodeID)+"/?"+url.Values{"path": {p}}.Encode(), io.NopCloser(body))
	if err != nil {
		return nil, err
	}
	req.ContentLength = -1 // streamed: the size is known once it is all there
	req.Header.Set(tunnel.HeaderRental, strconv.FormatInt(ws.RentalID, 10))
	req.Header.Set(tunnel.HeaderTarget, tunnel.TargetFiles)
	resp, err := w.tunnelTransport.RoundTrip(req)
	if err != nil {
		return nil, answer(err)
	}
	defer resp.Body.Close()
	if code := resp.Header.Get(tunnel.HeaderError); code != "" || resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return nil, answer(&agentError{code: cmp.Or(code, tunnel.ErrUnsupported), status: resp.StatusCode, text: strings.TrimSpace(string(b))})
	}
	var up tunnel.Upload
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&up); err != nil {
		return nil, answer(err)
	}
	return &up, nil
}

// fullReads fills each read's buffer from r: a multipart part answers a
// few KiB a read, and the request to the agent sends each read as a
// chunk, flushed through the tunnel as its own frames (a third of the
// throughput, and garbage per frame). It ends with r's own end: io.EOF
// after the last bytes, or r's error (a body cut short) as it is.
type fullReads struct{ r io.Reader }

func (f fullReads) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := f.r.Read(p[n:])
		n += m
		if err != nil {
			if errors.Is(err, io.EOF) && n > 0 {
				return n, nil // the last, short read; EOF comes with the next
			}
			return n, err
		}
	}
	return n, nil
}
