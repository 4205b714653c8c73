package web_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"suanli/dockertest"
)

// mib is a mebibyte.
const mib = 1 << 20

// memGrowth is how much the process's memory grew while something ran:
// the peaks of HeapInuse and Sys over their values at the start, and the
// bytes allocated meanwhile (garbage included).
type memGrowth struct {
	BaseHeap, PeakHeap uint64
	BaseSys, PeakSys   uint64
	Allocated          uint64
}

// Heap is the peak HeapInuse over the baseline.
func (g memGrowth) Heap() uint64 { return g.PeakHeap - min(g.BaseHeap, g.PeakHeap) }

// Sys is the peak of the memory obtained from the OS over the baseline.
func (g memGrowth) Sys() uint64 { return g.PeakSys - min(g.BaseSys, g.PeakSys) }

func (g memGrowth) String() string {
	return fmt.Sprintf("HeapInuse %.1f → peak %.1f MiB (+%.1f), Sys %.1f → peak %.1f MiB (+%.1f), allocated %.1f MiB",
		float64(g.BaseHeap)/mib, float64(g.PeakHeap)/mib, float64(g.Heap())/mib,
		float64(g.BaseSys)/mib, float64(g.PeakSys)/mib, float64(g.Sys())/mib, float64(g.Allocated)/mib)
}

// memSampler reads the process's memory statistics every 20 ms until
// stopped and keeps the peaks. The server, the agent and the test's own
// client all run in this process: what it measures is their sum.
type memSampler struct {
	g    memGrowth
	stop chan struct{}
	done chan struct{}
}

// sampleMemory collects garbage (so that the baseline is what is live),
// reads the baseline and starts sampling.
func sampleMemory() *memSampler {
	s := &memSampler{stop: make(chan struct{}), done: make(chan struct{})}
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s.g = memGrowth{BaseHeap: m.HeapInuse, PeakHeap: m.HeapInuse, BaseSys: m.Sys, PeakSys: m.Sys, Allocated: m.TotalAlloc}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *memSampler) sample() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s.g.PeakHeap = max(s.g.PeakHeap, m.HeapInuse)
	s.g.PeakSys = max(s.g.PeakSys, m.Sys)
}

// Stop ends the sampling (a last sample included) and returns the growth.
func (s *memSampler) Stop() memGrowth {
	close(s.stop)
	<-s.done
	s.sample()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s.g.Allocated = m.TotalAlloc - s.g.Allocated
	return s.g
}

// streamUpload posts size random bytes (from a ChaCha8 stream seeded
// with seed) as the file name in dir through the workspace's upload form,
// building the multipart body as it is sent: neither the file nor the
// body is ever held whole. It returns the answer and the SHA-256 of the
// file's bytes as sent.
func streamUpload(t *testing.T, ac *actor, base, dir, name string, size int64, seed [32]byte) (*http.Response, string, string) {
	t.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	sent := sha256.New()
	written := make(chan error, 1)
	go func() {
		err := func() error {
			// The CSRF token first, as the upload form sends it.
			if err := mw.WriteField("_csrf", ac.csrf()); err != nil {
				return err
			}
			if err := mw.WriteField("dir", dir); err != nil {
				return err
			}
			fw, err := mw.CreateFormFile("file", name)
			if err != nil {
				return err
			}
			if _, err := io.Copy(io.MultiWriter(fw, sent), io.LimitReader(rand.NewChaCha8(seed), size)); err != nil {
				return err
			}
			return mw.Close()
		}()
		_ = pw.CloseWithError(err)
		written <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", ac.a.srv.URL+base+"/files", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Origin", ac.a.srv.URL)
	req.Header.Set("Accept", "application/json")
	res, err := ac.c.Do(req)
	// The body's writer ends either way: the transport closes the pipe
	// when it stops reading.
	_ = pr.Close()
	werr := <-written
	if err != nil {
		t.Fatalf("uploading %s: %v", name, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if werr != nil && res.StatusCode/100 == 2 {
		t.Fatalf("the upload's body was not all sent (%v) yet the server answered %d %s", werr, res.StatusCode, b)
	}
	return res, string(b), hex.EncodeToString(sent.Sum(nil))
}

// streamDownload GETs path as the actor and returns the status, the
// number of bytes and the SHA-256 of the body, read as it streams.
func streamDownload(t *testing.T, ac *actor, path string) (*http.Response, int64, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", ac.a.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ac.c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	sum := sha256.New()
	n, err := io.Copy(sum, res.Body)
	if err != nil {
		t.Fatalf("reading GET %s after %d bytes: %v", path, n, err)
	}
	return res, n, hex.EncodeToString(sum.Sum(nil))
}

// A renter uploads a 200 MB file in the browser and downloads it back:
// it arrives intact (the SHA-256 the server answers, and that of the
// download, are those of the bytes sent), and the server streams it
// through the agent's tunnel instead of holding it: the process's memory
// does not grow by anything near the file's size on the way up or down.
// (Not parallel: the memory measured is the whole test process's, so no
// other test may run beside it.)
func TestWorkspaceUploadOf200MBStreams(t *testing.T) {
	const size = 200_000_000
	const bound = 64 * mib
	w := newWorkspaceRig(t, nil)
	var seed [32]byte
	copy(seed[:], randomBytes(t, len(seed)))

	mem := sampleMemory()
	began := time.Now()
	res, body, sent := streamUpload(t, w.renter, w.base, "transfer", "big.bin", size, seed)
	upTook := time.Since(began)
	up := mem.Stop()
	must(t, res.StatusCode == http.StatusCreated, "the upload: %d %s", res.StatusCode, snippet(body))
	var answer struct {
		Uploads []struct {
			Path   string `json:"path"`
			Size   int64  `json:"size"`
			SHA256 string `json:"sha256"`
		} `json:"uploads"`
	}
	must(t, json.Unmarshal([]byte(body), &answer) == nil && len(answer.Uploads) == 1, "the upload's answer: %s", body)
	got := answer.Uploads[0]
	must(t, got.Path == "/workspace/transfer/big.bin" && got.Size == size && got.SHA256 == sent,
		"the upload arrived as %s, %d bytes, SHA-256 %s; sent %d bytes, SHA-256 %s", got.Path, got.Size, got.SHA256, size, sent)
	t.Logf("upload of %d MB in %.1fs (%.0f MB/s); memory: %v", size/1_000_000, upTook.Seconds(), size/1e6/upTook.Seconds(), up)

	mem = sampleMemory()
	began = time.Now()
	res, n, downSum := streamDownload(t, w.renter, w.base+"/files/download?path="+url.QueryEscape("transfer/big.bin"))
	downTook := time.Since(began)
	down := mem.Stop()
	must(t, res.StatusCode == http.StatusOK && n == size && downSum == sent,
		"the download: %d, %d bytes, SHA-256 %s; want 200, %d bytes, SHA-256 %s", res.StatusCode, n, downSum, size, sent)
	t.Logf("download of %d MB in %.1fs (%.0f MB/s); memory: %v", size/1_000_000, downTook.Seconds(), size/1e6/downTook.Seconds(), down)

	for _, m := range []struct {
		what string
		g    memGrowth
	}{{"upload", up}, {"download", down}} {
		if m.g.Heap() >= bound || m.g.Sys() >= bound {
			t.Errorf("the %s of %d MB grew the process's memory by HeapInuse %.1f MiB, Sys %.1f MiB: want both under %d MiB (streamed, not held)",
				m.what, size/1_000_000, float64(m.g.Heap())/mib, float64(m.g.Sys())/mib, bound/mib)
		}
	}
}

// sseEvent is one server-sent event.
type sseEvent struct{ id, data string }

// eventStream is a text/event-stream response being read.
type eventStream struct {
	res    *http.Response
	r      *bufio.Reader
	cancel context.CancelFunc
	seen   []sseEvent
}

// openEvents GETs path as the actor as an EventSource does (with
// Last-Event-ID when lastID is not ""). The stream ends with the test, or
// after 90 seconds.
func openEvents(t *testing.T, ac *actor, path, lastID string) *eventStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	req, err := http.NewRequestWithContext(ctx, "GET", ac.a.srv.URL+path, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := ac.c.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", path, err)
	}
	es := &eventStream{res: res, r: bufio.NewReader(res.Body), cancel: cancel}
	t.Cleanup(es.close)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		t.Fatalf("GET %s: %d %q %s, want 200 text/event-stream", path, res.StatusCode, res.Header.Get("Content-Type"), snippet(string(b)))
	}
	return es
}

func (es *eventStream) close() {
	es.cancel()
	_ = es.res.Body.Close()
}

// next reads the next event (lines up to a blank one).
func (es *eventStream) next() (sseEvent, error) {
	var ev sseEvent
	for {
		line, err := es.r.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if ev != (sseEvent{}) {
				es.seen = append(es.seen, ev)
				return ev, nil
			}
		case strings.HasPrefix(line, "id:"):
			ev.id = strings.TrimPrefix(strings.TrimPrefix(line, "id:"), " ")
		case strings.HasPrefix(line, "data:"):
			ev.data = strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
		}
	}
}

// until reads events until one's data is want and returns it; the
// stream's deadline bounds the wait. An event whose data is never (a line
// that must not come again) fails the test.
func (es *eventStream) until(t *testing.T, want, never string) sseEvent {
	t.Helper()
	for {
		ev, err := es.next()
		if err != nil {
			t.Fatalf("waiting for the event %q: %v; the events so far: %q", want, err, es.seen)
		}
		if never != "" && ev.data == never {
			t.Fatalf("the event %q came again (id %s) before %q; the events so far: %q", never, ev.id, want, es.seen)
		}
		if ev.data == want {
			return ev
		}
	}
}

// The rental page follows the container's output live: a line the
// renter's program prints arrives within moments as a server-sent event
// whose id is the line's time, and a browser that lost the stream and
// reconnects with that id (as EventSource does, Last-Event-ID) is not
// sent that line again, only the newer ones.
func TestWorkspaceLogsFollowLive(t *testing.T) {
	t.Parallel()
	w := newWorkspaceRig(t, nil)
	term, _, err := wsDial(t, w.renter, w.base+"/terminal/ws", w.a.srv.URL)
	if err != nil {
		t.Fatalf("the terminal's WebSocket: %v", err)
	}
	defer term.Close(websocket.StatusNormalClosure, "")

	first := openEvents(t, w.renter, w.base+"/logs?follow=1", "")
	marker := "suanli-marker-" + randomHex(t)
	// The container's main process's output is what its log holds.
	terminalRun(t, term, "echo "+marker+" > /proc/1/fd/1; echo printed-$((40+2))", "printed-42")
	ev := first.until(t, marker, "")
	at, err := time.Parse(time.RFC3339Nano, ev.id)
	must(t, err == nil, "the event's id %q is not the line's RFC 3339 time: %v", ev.id, err)
	must(t, time.Since(at) < 10*time.Minute && time.Until(at) < 10*time.Minute, "the event's id %q is not the time the line was printed (now %s)", ev.id, time.Now().UTC().Format(time.RFC3339Nano))
	first.close()

	again := openEvents(t, w.renter, w.base+"/logs?follow=1", ev.id)
	newer := "suanli-newer-" + randomHex(t)
	terminalRun(t, term, "echo "+newer+" > /proc/1/fd/1; echo printed-$((40+3))", "printed-43")
	ev2 := again.until(t, newer, marker)
	at2, err := time.Parse(time.RFC3339Nano, ev2.id)
	must(t, err == nil && at2.After(at), "the newer line's id %q is not after the marker's %q (%v)", ev2.id, ev.id, err)
	for _, e := range again.seen {
		et, err := time.Parse(time.RFC3339Nano, e.id)
		must(t, err == nil && et.After(at), "after reconnecting with Last-Event-ID %s the stream sent the older event %q (id %s)", ev.id, e.data, e.id)
	}
}

// wsEchoApp is a WebSocket echo server written with Python's standard
// library only (the handshake of RFC 6455 and its frames): it answers a
// text message with the path it was opened on and the message, and a
// binary message with the same bytes.
const wsEchoApp = `import base64, hashlib, socketserver, struct
GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
class H(socketserver.StreamRequestHandler):
    def handle(self):
        path = self.rfile.readline().split()[1].decode()
        headers = {}
        while True:
            line = self.rfile.readline().decode().strip()
            if not line:
                break
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
        key = headers.get("sec-websocket-key")
        if not key or headers.get("upgrade", "").lower() != "websocket":
            body = b"a WebSocket echo server\n"
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
            return
        accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        self.wfile.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n" % accept).encode())
        while True:
            head = self.rfile.read(2)
            if len(head) < 2:
                return
            op, n = head[0] & 0x0F, head[1] & 0x7F
            if n == 126:
                n = struct.unpack(">H", self.rfile.read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self.rfile.read(8))[0]
            mask = self.rfile.read(4) if head[1] & 0x80 else b"\0\0\0\0"
            data = self.rfile.read(n)
            data = (int.from_bytes(data, "big") ^ int.from_bytes((mask * (n // 4 + 1))[:n], "big")).to_bytes(n, "big") if n else b""
            if op == 8:
                self.send(8, data[:2])
                return
            if op == 9:
                self.send(10, data)
            elif op == 1:
                self.send(1, ("path=%s %s" % (path, data.decode())).encode())
            elif op == 2:
                self.send(2, data)
    def send(self, op, data):
        n = len(data)
        if n < 126:
            head = bytes([0x80 | op, n])
        elif n < 65536:
            head = bytes([0x80 | op, 126]) + struct.pack(">H", n)
        else:
            head = bytes([0x80 | op, 127]) + struct.pack(">Q", n)
        self.wfile.write(head + data)
class S(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
S(("0.0.0.0", 8002), H).serve_forever()
`

// A renter's app that speaks WebSocket on a declared port (a Gradio or
// TensorBoard front end does) works through the marketplace: opened from
// the marketplace's own pages it connects at /rentals/{id}/ports/{port}/…
// (the prefix taken off), text and big binary messages go both ways
// intact; a page of another site cannot open it with the renter's
// cookies (403), and another organisation's user does not find it (404).
func TestWorkspaceProxiesWebSocketsOfDeclaredPorts(t *testing.T) {
	t.Parallel()
	w := newWorkspaceRig(t, []int{8002})
	a, renter, base := w.a, w.renter, w.base
	res, body := upload(t, renter, base, "app", map[string][]byte{"ws.py": []byte(wsEchoApp)})
	must(t, res.StatusCode == http.StatusCreated, "uploading the app: %d %s", res.StatusCode, snippet(body))
	term, _, err := wsDial(t, renter, base+"/terminal/ws", a.srv.URL)
	if err != nil {
		t.Fatalf("the terminal's WebSocket: %v", err)
	}
	terminalRun(t, term, "setsid python3 /workspace/app/ws.py >/tmp/ws.log 2>&1 < /dev/null & "+untilListening(8002)+"echo started-$((40+2))", "started-42")
	_ = term.Close(websocket.StatusNormalClosure, "")
	dockertest.Eventually(t, 30*time.Second, "the WebSocket app on port 8002", func() (bool, string) {
		res, body := renter.do("GET", base+"/ports/8002/", nil)
		return res.StatusCode == http.StatusOK, fmt.Sprintf("%d %s", res.StatusCode, snippet(body))
	})

	c, res, err := wsDial(t, renter, base+"/ports/8002/echo?x=1", a.srv.URL)
	if err != nil {
		t.Fatalf("the app's WebSocket through the marketplace: %v %v", res, err)
	}
	defer c.Close(websocket.StatusNormalClosure, "")
	c.SetReadLimit(4 << 20)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte("hello 你好")); err != nil {
		t.Fatal(err)
	}
	typ, got, err := c.Read(ctx)
	must(t, err == nil && typ == websocket.MessageText && string(got) == "path=/echo?x=1 hello 你好", "the text echo: %v %q %v", typ, got, err)
	big := randomBytes(t, 300_000) // over 64 KiB: a frame with a 64-bit length
	if err := c.Write(ctx, websocket.MessageBinary, big); err != nil {
		t.Fatal(err)
	}
	typ, got, err = c.Read(ctx)
	must(t, err == nil && typ == websocket.MessageBinary && string(got) == string(big), "the binary echo of %d bytes: %v, %d bytes, %v", len(big), typ, len(got), err)
	if err := c.Close(websocket.StatusNormalClosure, ""); err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("closing the app's WebSocket: %v", err)
	}

	_, res, err = wsDial(t, renter, base+"/ports/8002/echo", "https://evil.example")
	must(t, err != nil && res != nil && res.StatusCode == http.StatusForbidden, "the app's WebSocket opened from another site: %v %v, want 403", res, err)
	other, _ := fundedRenter(t, a.db, "other-"+randomHex(t)+"@example.com", testPassword, 0)
	stranger := loggedIn(a, "stranger", other)
	_, res, err = wsDial(t, stranger, base+"/ports/8002/echo", a.srv.URL)
	must(t, err != nil && res != nil && res.StatusCode == http.StatusNotFound, "the app's WebSocket for another organisation's user: %v %v, want 404", res, err)
}
