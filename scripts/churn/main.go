// Command churn changes offer availability at a steady rate through the
// public API, as renters do, while a load test reads the offer pages: it
// rents one GPU of a demo offer -rate times a second (POST
// /api/v1/rentals with an Idempotency-Key) and stops the oldest of its
// rentals that has lived -hold, also -rate times a second (POST
// /api/v1/rentals/{id}/stop). Each rent reserves GPUs and each stop frees
// them when the node's simulated agent confirms, so every request moves
// the offers' availability, which is what the offer index has to follow.
//
// It only touches rentals it created, and on exit (Ctrl-C, SIGTERM or
// -duration) it releases every one of them with their volumes
// (POST …/release {"delete_volume":true}). At the end it prints, per
// operation, the answers by class (2xx, 4xx, 5xx, transport errors), by
// status code, and the latency percentiles.
//
//	go run ./scripts/churn -base http://127.0.0.1:8080 -token "$TOKEN" -rate 10 -duration 60s
//
// The server must run with --demo (its simulated agents confirm the
// launches and stops) and the token's user needs a verified email and
// balance (admin create-user, admin credit, admin token: see
// scripts/capacity-run.sh). At the default --api-write-rate of 5 per
// token, 10 rents and 10 stops a second need at least 4 tokens (-token
// takes a comma-separated list; rentals are shared out round-robin) or a
// server run with SUANLI_API_WRITE_RATE=0.
//
// It is a client of the API only: the standard library and the generated
// client (suanli/apiclient), nothing of the server.
package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"suanli/apiclient"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "churn:", err)
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	base        string
	tokens      []string
	rate        float64
	hold        time.Duration
	duration    time.Duration
	offers      []int
	gpus        int
	release     bool
	maxInFlight int
	timeout     time.Duration
	report      time.Duration
	probe       int
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	var tokens, offers string
	fs := flag.NewFlagSet("churn", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.base, "base", "http://127.0.0.1:8080", "the marketplace's base URL")
	fs.StringVar(&tokens, "token", os.Getenv("SUANLI_TOKEN"), "API token(s), comma-separated; rentals are shared out among them round-robin (SUANLI_TOKEN)")
	fs.Float64Var(&c.rate, "rate", 10, "rents per second, and stops per second")
	fs.DurationVar(&c.hold, "hold", 2*time.Second, "how long a rental lives before it is stopped")
	fs.DurationVar(&c.duration, "duration", 0, "how long to run; 0: until interrupted")
	fs.StringVar(&offers, "offers", "", "offer ids to rent, comma-separated; empty: the listed demo offers, found by reading offers 1, 2, … (demo ids come first when the demo is seeded first)")
	fs.IntVar(&c.gpus, "gpus", 1, "GPUs per rental")
	fs.BoolVar(&c.release, "release", false, "stop by releasing (POST …/release with delete_volume) instead of POST …/stop")
	fs.IntVar(&c.maxInFlight, "max-in-flight", 64, "most requests waiting at once; a tick finding them all busy is counted as skipped")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "limit per request")
	fs.DurationVar(&c.report, "report", 10*time.Second, "progress line every so often on stderr; 0: none")
	fs.IntVar(&c.probe, "probe", 500, "without -offers: read at most this many offer ids looking for demo offers")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	for _, t := range strings.Split(tokens, ",") {
		if t = strings.TrimSpace(t); t != "" {
			c.tokens = append(c.tokens, t)
		}
	}
	for _, s := range strings.Split(offers, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		id, err := strconv.Atoi(s)
		if err != nil || id < 1 {
			return c, fmt.Errorf("-offers: %q is not an offer id", s)
		}
		c.offers = append(c.offers, id)
	}
	switch {
	case len(c.tokens) == 0:
		return c, errors.New("-token (or SUANLI_TOKEN) is required")
	case c.rate <= 0 || c.rate > 1000:
		return c, errors.New("-rate must be above 0 and at most 1000")
	case c.hold < 0 || c.gpus < 1 || c.maxInFlight < 1 || c.timeout <= 0:
		return c, errors.New("-hold must be ≥ 0, -gpus, -max-in-flight and -timeout positive")
	}
	return c, nil
}

// rental is one rental this run created, with the client of the token
// that made it (only its user may stop it).
type rental struct {
	id      int
	client  *apiclient.ClientWithResponses
	created time.Time
}

// churner holds the run's state: the clients, the offers, the rentals
// waiting for their stop and every rental made (for the release at exit).
type churner struct {
	cfg     config
	clients []*apiclient.ClientWithResponses
	offers  []int
	slots   chan struct{}
	stats   *stats
	sshKey  string
	runID   string

	mu       sync.Mutex
	nextTok  int
	nextOff  int
	queue    []rental     // rented, not yet stopped, oldest first
	made     []rental     // every rental made
	released map[int]bool // released already (-release)
}

func run(args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hc := &http.Client{Timeout: cfg.timeout, Transport: &http.Transport{MaxIdleConnsPerHost: cfg.maxInFlight}}
	ch := &churner{cfg: cfg, slots: make(chan struct{}, cfg.maxInFlight), stats: newStats(), sshKey: newSSHKey(), runID: randomHex(4), released: map[int]bool{}}
	for _, t := range cfg.tokens {
		c, err := newClient(cfg.base, t, hc)
		if err != nil {
			return err
		}
		ch.clients = append(ch.clients, c)
	}
	if err := ch.checkTokens(ctx); err != nil {
		return err
	}
	ch.offers = cfg.offers
	if len(ch.offers) == 0 {
		anon, err := newClient(cfg.base, "", hc)
		if err != nil {
			return err
		}
		if ch.offers, err = demoOffers(ctx, anon, cfg.probe, cfg.gpus); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "churn: %s, %.3g rents/s and %.3g stops/s, hold %s, %d offers %v, %d token(s), run %s\n",
		cfg.base, cfg.rate, cfg.rate, cfg.hold, len(ch.offers), ch.offers, len(ch.clients), ch.runID)

	runCtx := ctx
	if cfg.duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, cfg.duration)
		defer cancel()
	}
	start := time.Now()
	var wg sync.WaitGroup
	ch.loop(runCtx, &wg, stderr)
	wg.Wait() // the rents and stops under way answer (or time out)
	elapsed := time.Since(start)

	// Release everything made, even after Ctrl-C: a fresh context, so a
	// second Ctrl-C is what abandons the clean-up.
	cleanCtx, cancelClean := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancelClean()
	left := ch.releaseAll(cleanCtx, stderr)

	ch.stats.print(stdout, elapsed, cfg.hold, cfg.rate)
	if left > 0 {
		return fmt.Errorf("%d rental(s) not released: release them by hand (suanli release ID)", left)
	}
	return nil
}

// newClient is an API client sending token (none when empty).
func newClient(base, token string, hc *http.Client) (*apiclient.ClientWithResponses, error) {
	return apiclient.NewClientWithResponses(base, apiclient.WithHTTPClient(hc),
		apiclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			return nil
		}))
}

// checkTokens fails early on a token the server refuses.
func (ch *churner) checkTokens(ctx context.Context) error {
	for i, c := range ch.clients {
		res, err := c.GetMeWithResponse(ctx)
		if err != nil {
			return fmt.Errorf("token %d: %w", i+1, err)
		}
		if res.StatusCode() != http.StatusOK {
			return fmt.Errorf("token %d: GET /api/v1/me answered %d: %s", i+1, res.StatusCode(), strings.TrimSpace(string(res.Body)))
		}
	}
	return nil
}

// demoOffers reads offers 1, 2, … and keeps the listed demo offers with
// at least gpus GPUs, stopping after 20 misses in a row once it found
// one, or after probe ids.
func demoOffers(ctx context.Context, c *apiclient.ClientWithResponses, probe, gpus int) ([]int, error) {
	var ids []int
	misses := 0
	for id := 1; id <= probe && (len(ids) == 0 || misses < 20); id++ {
		res, err := c.GetOfferWithResponse(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("finding demo offers: %w", err)
		}
		o := res.JSON200
		if o == nil || !o.Demo || o.Status != "listed" || o.Gpus < gpus {
			misses++
			continue
		}
		misses = 0
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no listed demo offer among ids 1–%d: run the server with --demo, or name offers with -offers", probe)
	}
	return ids, nil
}

// loop rents and stops on two tickers until ctx ends. A tick starts its
// request in a goroutine, so a slow answer never delays the next tick: the
// rate holds whatever the latency, up to -max-in-flight requests waiting.
func (ch *churner) loop(ctx context.Context, wg *sync.WaitGroup, stderr io.Writer) {
	// A request under way when the run ends finishes (within -timeout):
	// cut off, it would leave a rental made or stopped unknown to us.
	reqCtx := context.WithoutCancel(ctx)
	every := time.Duration(float64(time.Second) / ch.cfg.rate)
	rentTick := time.NewTicker(every)
	defer rentTick.Stop()
	// The stops run half a period after the rents, so the two do not
	// arrive in pairs.
	time.Sleep(every / 2)
	stopTick := time.NewTicker(every)
	defer stopTick.Stop()
	var report <-chan time.Time
	if ch.cfg.report > 0 {
		t := time.NewTicker(ch.cfg.report)
		defer t.Stop()
		report = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-rentTick.C:
			ch.spawn(wg, "rent", func() { ch.rent(reqCtx) })
		case <-stopTick.C:
			r, ok := ch.due()
			if !ok {
				ch.stats.skip("stop (none due)")
				continue
			}
			ch.spawn(wg, "stop", func() { ch.stop(reqCtx, r) })
		case <-report:
			ch.stats.progress(stderr, ch.waiting())
		}
	}
}

// spawn runs fn in a goroutine if a slot is free, else counts the tick as
// skipped.
func (ch *churner) spawn(wg *sync.WaitGroup, op string, fn func()) {
	select {
	case ch.slots <- struct{}{}:
	default:
		ch.stats.skip(op + " (max in flight)")
		return
	}
	wg.Go(func() {
		defer func() { <-ch.slots }()
		fn()
	})
}

// rent rents gpus GPUs of the next offer with the next token.
func (ch *churner) rent(ctx context.Context) {
	ch.mu.Lock()
	c := ch.clients[ch.nextTok%len(ch.clients)]
	offer := ch.offers[ch.nextOff%len(ch.offers)]
	ch.nextTok++
	ch.nextOff++
	ch.mu.Unlock()
	key := apiclient.IdempotencyKey("churn-" + ch.runID + "-" + randomHex(8))
	name := "churn-" + ch.runID
	body := apiclient.CreateRentalJSONRequestBody{OfferId: &offer, Gpus: &ch.cfg.gpus, SshPublicKey: &ch.sshKey, Name: &name}
	start := time.Now()
	res, err := c.CreateRentalWithResponse(ctx, &apiclient.CreateRentalParams{IdempotencyKey: &key}, body)
	took := time.Since(start)
	if err != nil {
		ch.stats.add("rent", 0, took, err)
		return
	}
	ch.stats.add("rent", res.StatusCode(), took, nil)
	if res.JSON201 == nil {
		return
	}
	r := rental{id: res.JSON201.Id, client: c, created: time.Now()}
	ch.mu.Lock()
	ch.queue = append(ch.queue, r)
	ch.made = append(ch.made, r)
	ch.mu.Unlock()
}

// due takes the oldest rental that has lived -hold, if any.
func (ch *churner) due() (rental, bool) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if len(ch.queue) == 0 || time.Since(ch.queue[0].created) < ch.cfg.hold {
		return rental{}, false
	}
	r := ch.queue[0]
	ch.queue = ch.queue[1:]
	return r, true
}

// waiting is how many rentals wait for their stop.
func (ch *churner) waiting() int {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return len(ch.queue)
}

// stop stops r (or releases it, with -release).
func (ch *churner) stop(ctx context.Context, r rental) {
	op := "stop"
	start := time.Now()
	var code int
	var err error
	if ch.cfg.release {
		op = "release"
		if code, err = release(ctx, r); err == nil && code/100 == 2 {
			ch.mu.Lock()
			ch.released[r.id] = true
			ch.mu.Unlock()
		}
	} else {
		var res *apiclient.StopRentalResponse
		if res, err = r.client.StopRentalWithResponse(ctx, r.id); err == nil {
			code = res.StatusCode()
		}
	}
	ch.stats.add(op, code, time.Since(start), transportOnly(err))
}

// release releases r for good, deleting its volume.
func release(ctx context.Context, r rental) (int, error) {
	yes := true
	res, err := r.client.ReleaseRentalWithResponse(ctx, r.id, apiclient.ReleaseRentalJSONRequestBody{DeleteVolume: &yes})
	if err != nil {
		return 0, err
	}
	if res.StatusCode() == http.StatusTooManyRequests {
		return res.StatusCode(), &rateLimited{retryAfter(res.HTTPResponse.Header.Get("Retry-After"))}
	}
	return res.StatusCode(), nil
}

// rateLimited is a 429 with its Retry-After.
type rateLimited struct{ after time.Duration }

func (e *rateLimited) Error() string { return "rate limited" }

func retryAfter(h string) time.Duration {
	if s, err := strconv.Atoi(h); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return time.Second
}

// releaseAll releases every rental made and not released yet, 8 at a
// time, waiting out 429s, and returns how many it could not release.
func (ch *churner) releaseAll(ctx context.Context, stderr io.Writer) int {
	ch.mu.Lock()
	todo := slices.DeleteFunc(slices.Clone(ch.made), func(r rental) bool { return ch.released[r.id] })
	ch.mu.Unlock()
	if len(todo) == 0 {
		return 0
	}
	fmt.Fprintf(stderr, "churn: releasing the %d rentals made\n", len(todo))
	work := make(chan rental)
	var mu sync.Mutex
	left := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for r := range work {
				ok := false
				for try := 0; try < 20 && ctx.Err() == nil; try++ {
					rctx, cancel := context.WithTimeout(ctx, ch.cfg.timeout)
					start := time.Now()
					code, err := release(rctx, r)
					cancel()
					ch.stats.add("release at exit", code, time.Since(start), transportOnly(err))
					var rl *rateLimited
					if errors.As(err, &rl) {
						time.Sleep(rl.after)
						continue
					}
					if err == nil && code < 500 {
						ok = code/100 == 2
						if !ok {
							fmt.Fprintf(stderr, "churn: release %d answered %d\n", r.id, code)
						}
						break
					}
					time.Sleep(time.Second)
				}
				if !ok {
					mu.Lock()
					left++
					mu.Unlock()
				}
			}
		})
	}
	for _, r := range todo {
		work <- r
	}
	close(work)
	wg.Wait()
	return left
}

// transportOnly keeps an error that is not an answer (a 429 is one).
func transportOnly(err error) error {
	var rl *rateLimited
	if errors.As(err, &rl) {
		return nil
	}
	return err
}

// newSSHKey makes a throwaway ed25519 public key in authorized_keys form
// (the API requires one; nothing ever logs in with it).
func newSSHKey() string {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	var b []byte
	for _, part := range [][]byte{[]byte("ssh-ed25519"), pub} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(part)))
		b = append(b, part...)
	}
	return "ssh-ed25519 " + base64.StdEncoding.EncodeToString(b) + " churn"
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
