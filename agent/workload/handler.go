package workload

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"suanli/tunnel"
)

// Handler serves what the server sends through the tunnel: it
// passes HTTP (and WebSocket upgrades) on to a container's port or its
// Jupyter, runs terminals, streams output and moves workspace files. The
// server has authorised every request; the handler only finds the
// rental's workload on this node.
type Handler struct {
	w     Workloads
	log   *slog.Logger
	proxy *httputil.ReverseProxy
	tr    *http.Transport
}

// workloadHost names a rental's port as a URL host for the proxy's
// transport (its connection pool is per host): "RENTAL.PORT.workload".
func workloadHost(rental int64, port int) string {
	return strconv.FormatInt(rental, 10) + "." + strconv.Itoa(port) + ".workload"
}

func parseWorkloadHost(addr string) (int64, int, bool) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	parts := strings.Split(host, ".")
	if len(parts) != 3 || parts[2] != "workload" {
		return 0, 0, false
	}
	id, err1 := strconv.ParseInt(parts[0], 10, 64)
	port, err2 := strconv.Atoi(parts[1])
	return id, port, err1 == nil && err2 == nil
}

// ctxKey keys what the handler hands its proxy's Rewrite.
type ctxKey int

const jupyterTokenKey ctxKey = iota

// NewHandler serves w's workloads (log nil: slog's default).
func NewHandler(w Workloads, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.Default()
	}
	h := &Handler{w: w, log: log.With("component", "tunnel")}
	h.tr = &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			id, port, ok := parseWorkloadHost(addr)
			if !ok {
				return nil, fmt.Errorf("not a workload address: %s", addr)
			}
			return w.DialWorkload(ctx, id, port)
		},
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
		// What the container sends is passed on as it is.
		DisableCompression: true,
	}
	h.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			id, _ := strconv.ParseInt(pr.In.Header.Get(tunnel.HeaderRental), 10, 64)
			port, _ := strconv.Atoi(pr.In.Header.Get(tunnel.HeaderPort))
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = workloadHost(id, port)
			// The Host the browser asked for stays (Jupyter checks a
			// WebSocket's Origin against it), and so do the forwarding
			// headers the server set.
			pr.Out.Host = pr.In.Host
			for _, k := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Prefix"} {
				if v := pr.In.Header.Values(k); len(v) > 0 {
					pr.Out.Header[k] = v
				}
			}
			for _, k := range []string{tunnel.HeaderRental, tunnel.HeaderTarget, tunnel.HeaderPort} {
				pr.Out.Header.Del(k)
			}
			// The server passes on only what the app may see of
			// Authorization (none of the marketplace's tokens); Jupyter's
			// is the agent's.
			if tok, _ := pr.In.Context().Value(jupyterTokenKey).(string); tok != "" {
				pr.Out.Header.Set("Authorization", "token "+tok)
				// Uncompressed, so that scrubToken can read its pages.
				pr.Out.Header.Set("Accept-Encoding", "identity")
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			// The tunnel's own headers are the agent's to set: a
			// container's are dropped (its text on the marketplace's error
			// page, else).
			for k := range resp.Header {
				if strings.HasPrefix(k, "Suanli-") {
					delete(resp.Header, k)
				}
			}
			return scrubToken(resp)
		},
		Transport:     h.tr,
		FlushInterval: -1, // event streams and long responses go through as they come
		ErrorHandler: func(rw http.ResponseWriter, r *http.Request, err error) {
			port := r.Header.Get(tunnel.HeaderPort)
			switch {
			case errors.Is(err, os.ErrNotExist):
				fail(rw, http.StatusNotFound, tunnel.ErrNoWorkload, "no running workload of this rental on this node")
			case errors.Is(err, syscall.ECONNREFUSED):
				fail(rw, http.StatusBadGateway, tunnel.ErrRefused, "nothing listens on port "+port+" in the container (listen on 0.0.0.0)")
			case errors.Is(err, context.Canceled):
				// The browser went away.
			default:
				h.log.Warn("tunnel: proxying to the container failed", "port", port, "err", err)
				fail(rw, http.StatusBadGateway, tunnel.ErrRefused, "the container's port "+port+" did not answer: "+err.Error())
			}
		},
	}
	return h
}

// Close lets go of the idle connections to containers.
func (h *Handler) Close() { h.tr.CloseIdleConnections() }

// maxScrubbed bounds the Jupyter page scrubToken reads whole.
const maxScrubbed = 8 << 20

// scrubToken takes the Jupyter token out of the pages Jupyter serves:
// it writes the token it was authenticated with into them (for its
// scripts to send back), but every request through the tunnel gets the
// token from the agent, so the browser needs none, and the token stays
// on this host.
func scrubToken(resp *http.Response) error {
	tok, _ := resp.Request.Context().Value(jupyterTokenKey).(string)
	if tok == "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || resp.Header.Get("Content-Encoding") != "" {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxScrubbed+1))
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	if len(b) > maxScrubbed {
		return errors.New("a Jupyter page too large to pass on")
	}
	b = bytes.ReplaceAll(b, []byte(tok), nil)
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
	return nil
}

// fail answers an error the server turns into a page (tunnel.HeaderError).
func fail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set(tunnel.HeaderError, code)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
}

// notThere reports whether err means the workload or file is not there.
func notThere(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, fs.ErrNotExist)
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.Header.Get(tunnel.HeaderRental), 10, 64)
	if err != nil || id <= 0 {
		fail(w, http.StatusBadRequest, tunnel.ErrNoWorkload, "no rental named")
		return
	}
	switch r.Header.Get(tunnel.HeaderTarget) {
	case tunnel.TargetPort:
		if p, err := strconv.Atoi(r.Header.Get(tunnel.HeaderPort)); err != nil || p < 1 || p > 65535 {
			fail(w, http.StatusBadRequest, tunnel.ErrRefused, "no port named")
			return
		}
		h.proxy.ServeHTTP(w, r)
	case tunnel.TargetJupyter:
		h.jupyter(w, r, id)
	case tunnel.TargetTerminal:
		h.terminal(w, r, id)
	case tunnel.TargetLogs:
		h.logs(w, r, id)
	case tunnel.TargetFiles:
		h.files(w, r, id)
	default:
		fail(w, http.StatusBadRequest, tunnel.ErrUnsupported, "unknown target")
	}
}

// jupyter passes the request to the container's Jupyter with its token.
func (h *Handler) jupyter(w http.ResponseWriter, r *http.Request, id int64) {
	tok, err := h.w.JupyterToken(r.Context(), id)
	switch {
	case notThere(err):
		fail(w, http.StatusNotFound, tunnel.ErrNoJupyter, "this rental's container runs no Jupyter")
		return
	case err != nil:
		h.log.Warn("tunnel: reading the Jupyter token", "rental", id, "err", err)
		fail(w, http.StatusBadGateway, tunnel.ErrNoJupyter, "the container's Jupyter cannot be reached")
		return
	}
	r.Header.Set(tunnel.HeaderPort, strconv.Itoa(JupyterPort))
	h.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), jupyterTokenKey, tok)))
}

// JupyterPort is the port launchers run Jupyter on in a container.
const JupyterPort = 8888

// Terminal messages from the browser: binary ones are keystrokes, text
// ones a resize, {"cols":N,"rows":N}.

// terminal runs a shell with a TTY in the container over a WebSocket.
func (h *Handler) terminal(w http.ResponseWriter, r *http.Request, id int64) {
	size := TermSize{Cols: 80, Rows: 24}
	if c, err := strconv.ParseUint(r.URL.Query().Get("cols"), 10, 16); err == nil && c > 0 {
		size.Cols = uint(c)
	}
	if c, err := strconv.ParseUint(r.URL.Query().Get("rows"), 10, 16); err == nil && c > 0 {
		size.Rows = uint(c)
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		// Not a handshake: no shell is started for it.
		fail(w, http.StatusBadRequest, tunnel.ErrUnsupported, "the terminal is a WebSocket")
		return
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	term, err := h.w.Terminal(ctx, id, size)
	if err != nil {
		if notThere(err) {
			fail(w, http.StatusNotFound, tunnel.ErrNoWorkload, "no running workload of this rental on this node")
			return
		}
		h.log.Warn("tunnel: starting a terminal", "rental", id, "err", err)
		fail(w, http.StatusBadGateway, tunnel.ErrUnsupported, "cannot start a terminal: "+err.Error())
		return
	}
	defer term.Close()
	// The server checked the browser's Origin before passing it on.
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true, CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return
	}
	// The browser sends a paste in pieces (terminal.js); a message is a
	// piece or a keystroke.
	ws.SetReadLimit(1 << 20)
	h.log.Info("tunnel: terminal opened", "rental", id)
	go func() {
		// The browser went (or the tunnel): hang the terminal up, which
		// also ends the read below.
		defer term.Close()
		defer cancel()
		for {
			typ, msg, err := ws.Read(ctx)
			if err != nil {
				return
			}
			if typ == websocket.MessageText {
				var s TermSize
				if json.Unmarshal(msg, &s) == nil && s.Cols > 0 && s.Rows > 0 && s.Cols < 1<<15 && s.Rows < 1<<15 {
					_ = term.Resize(ctx, s)
				}
				continue
			}
			if _, err := term.Write(msg); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := term.Read(buf)
		if n > 0 {
			if werr := ws.Write(ctx, websocket.MessageBinary, buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	_ = ws.Close(websocket.StatusNormalClosure, "the shell exited")
	h.log.Info("tunnel: terminal closed", "rental", id)
}

// logs streams the container's output: plain text, or with follow=1
// server-sent events (one per line, its id the line's timestamp, so that
// a reconnecting browser resumes after the last line it has).
func (h *Handler) logs(w http.ResponseWriter, r *http.Request, id int64) {
	q := r.URL.Query()
	opts := LogOptions{Tail: 200, Follow: q.Get("follow") == "1"}
	if n, err := strconv.Atoi(q.Get("tail")); err == nil && n >= 1 && n <= 10000 {
		opts.Tail = n
	}
	var after time.Time
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		if t, err := time.Parse(time.RFC3339Nano, last); err == nil {
			after, opts.Since, opts.Tail = t, t, 0
		}
	}
	rc, err := h.w.Logs(r.Context(), id, opts)
	if err != nil {
		if notThere(err) {
			fail(w, http.StatusNotFound, tunnel.ErrNoWorkload, "no running workload of this rental on this node")
			return
		}
		fail(w, http.StatusBadGateway, tunnel.ErrUnsupported, "cannot read the container's output: "+err.Error())
		return
	}
	defer rc.Close()
	rctl := http.NewResponseController(w)
	if opts.Follow {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
	} else {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	w.WriteHeader(http.StatusOK)
	_ = rctl.Flush()
	lines := newLogLines(rc)
	for {
		ts, line, err := lines.next()
		if err != nil {
			if !errors.Is(err, io.EOF) && r.Context().Err() == nil {
				h.log.Warn("tunnel: reading the container's output", "rental", id, "err", err)
			}
			return
		}
		if !opts.Follow {
			_, _ = fmt.Fprintf(w, "%s %s\n", ts, line)
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err == nil && !after.IsZero() && !t.After(after) {
			continue // sent before the browser reconnected
		}
		if _, err := fmt.Fprintf(w, "id: %s\ndata: %s\n\n", ts, line); err != nil {
			return
		}
		_ = rctl.Flush()
	}
}

// files reads a file or a directory of the workspace, or writes a file.
func (h *Handler) files(w http.ResponseWriter, r *http.Request, id int64) {
	p, ok := tunnel.WorkspacePath(r.URL.Query().Get("path"))
	if p == "" {
		p = "." // the workspace itself, for os.Root
	}
	if !ok {
		fail(w, http.StatusBadRequest, tunnel.ErrBadPath, "the path leaves /workspace")
		return
	}
	root, err := h.w.Workspace(r.Context(), id)
	if err != nil {
		if notThere(err) {
			fail(w, http.StatusNotFound, tunnel.ErrNoWorkload, "no running workload of this rental on this node")
			return
		}
		h.log.Warn("tunnel: opening the workspace", "rental", id, "err", err)
		fail(w, http.StatusBadGateway, tunnel.ErrUnsupported, "cannot open the workspace: "+err.Error())
		return
	}
	defer root.Close()
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.read(w, r, root, p)
	case http.MethodPut:
		h.write(w, r, root, p)
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT")
		fail(w, http.StatusMethodNotAllowed, tunnel.ErrBadPath, "GET or PUT")
	}
}

// read sends a file's bytes, or a directory's Listing as JSON.
func (h *Handler) read(w http.ResponseWriter, r *http.Request, root *os.Root, p string) {
	// Only files and directories are opened, and without blocking: a
	// FIFO the renter made would hold an open (and its thread) forever.
	if fi, err := root.Stat(p); err != nil {
		fail(w, http.StatusNotFound, tunnel.ErrBadPath, "no such file or directory in /workspace")
		return
	} else if !fi.Mode().IsRegular() && !fi.IsDir() {
		fail(w, http.StatusBadRequest, tunnel.ErrBadPath, "not a regular file or a directory")
		return
	}
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		fail(w, http.StatusNotFound, tunnel.ErrBadPath, "no such file or directory in /workspace")
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || (!fi.Mode().IsRegular() && !fi.IsDir()) {
		fail(w, http.StatusBadRequest, tunnel.ErrBadPath, "not a regular file or a directory")
		return
	}
	if fi.IsDir() {
		if r.URL.Query().Get("download") == "1" {
			fail(w, http.StatusBadRequest, tunnel.ErrBadPath, "a directory: download its files one by one, or copy it with scp or rsync")
			return
		}
		des, err := f.ReadDir(tunnel.MaxEntries + 1)
		if err != nil && !errors.Is(err, io.EOF) {
			fail(w, http.StatusBadGateway, tunnel.ErrBadPath, "cannot read the directory: "+err.Error())
			return
		}
		out := tunnel.Listing{Path: "/" + strings.TrimPrefix(path.Join("workspace", p), "/"), Entries: []tunnel.Entry{}}
		if len(des) > tunnel.MaxEntries {
			des, out.Truncated = des[:tunnel.MaxEntries], true
		}
		for _, de := range des {
			info, err := de.Info()
			if err != nil {
				continue
			}
			e := tunnel.Entry{Name: de.Name(), Dir: de.IsDir(), ModTime: info.ModTime().UTC()}
			if info.Mode().IsRegular() {
				e.Size = info.Size()
			}
			out.Entries = append(out.Entries, e)
		}
		slices.SortFunc(out.Entries, func(a, b tunnel.Entry) int {
			if a.Dir != b.Dir {
				if a.Dir {
					return -1
				}
				return 1
			}
			return strings.Compare(a.Name, b.Name)
		})
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	// ServeContent streams from the file (ranges too: a broken download
	// of a big file resumes).
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

// write streams the request's body into a new file beside p, then moves
// it over p: a broken upload leaves the old file as it was.
func (h *Handler) write(w http.ResponseWriter, r *http.Request, root *os.Root, p string) {
	if p == "." || strings.HasSuffix(p, "/") {
		fail(w, http.StatusBadRequest, tunnel.ErrBadPath, "name a file")
		return
	}
	if dir := path.Dir(p); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			fail(w, http.StatusBadRequest, tunnel.ErrBadPath, "cannot make the directory: "+err.Error())
			return
		}
	}
	if fi, err := root.Stat(p); err == nil && fi.IsDir() {
		fail(w, http.StatusConflict, tunnel.ErrBadPath, "a directory of that name is there")
		return
	}
	tmp := path.Join(path.Dir(p), fmt.Sprintf(".%s.upload-%d", path.Base(p), time.Now().UnixNano()))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		fail(w, http.StatusBadRequest, tunnel.ErrBadPath, "cannot write there: "+err.Error())
		return
	}
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, sum), r.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && r.ContentLength >= 0 && n != r.ContentLength {
		err = fmt.Errorf("got %d of %d bytes", n, r.ContentLength)
	}
	if err == nil {
		err = root.Rename(tmp, p)
	}
	if err != nil {
		_ = root.Remove(tmp)
		h.log.Warn("tunnel: upload failed", "path", p, "err", err)
		fail(w, http.StatusBadGateway, tunnel.ErrBadPath, "the upload did not complete: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(tunnel.Upload{Path: "/" + path.Join("workspace", p), Size: n, SHA256: hex.EncodeToString(sum.Sum(nil))})
}

// maxLogLine is the most of one line of a container's output that is
// passed on: its end, which is what a terminal shows of a progress bar
// redrawn with carriage returns.
const maxLogLine = 16 << 10

// logLines reads a container's timestamped output a line at a time, of
// any length: a line longer than maxLogLine keeps its timestamp and its
// last maxLogLine bytes, marked with "…".
type logLines struct {
	r *bufio.Reader
}

func newLogLines(r io.Reader) *logLines { return &logLines{r: bufio.NewReaderSize(r, 64<<10)} }

// next is the next line's timestamp and text: the text after its last
// carriage return that is followed by something (what a terminal would
// show), since an event cannot hold a line break.
func (l *logLines) next() (ts, text string, err error) {
	var head []byte // the line's start, with its timestamp
	var tail []byte // its last maxLogLine bytes
	cut := false
	for {
		chunk, err := l.r.ReadSlice('\n')
		if len(head) < 64 {
			head = append(head, chunk[:min(len(chunk), 64-len(head))]...)
		}
		tail = append(tail, chunk...)
		if len(tail) > 2*maxLogLine {
			tail, cut = append(tail[:0], tail[len(tail)-maxLogLine-2:]...), true // room for "\r\n"
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && len(tail) == 0 {
			return "", "", err
		}
		break
	}
	whole := strings.TrimRight(string(tail), "\r\n")
	ts, _, _ = strings.Cut(string(head), " ")
	if !cut {
		_, whole, _ = strings.Cut(whole, " ")
	}
	if len(whole) > maxLogLine {
		whole, cut = whole[len(whole)-maxLogLine:], true
	}
	if i := strings.LastIndex(strings.TrimRight(whole, "\r"), "\r"); i >= 0 {
		whole = whole[i+1:]
	}
	whole = strings.ToValidUTF8(strings.ReplaceAll(whole, "\r", ""), "")
	if cut {
		whole = "…" + whole
	}
	return ts, whole, nil
}
