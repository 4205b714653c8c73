package web_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/agent"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/gpu"
	"suanli/models"
	"suanli/offers"
	"suanli/rentals"
	"suanli/web"
	"suanli/workers"
)

// BenchmarkRentToRunning measures what a renter waits for: from POST
// /api/v1/rentals to GET /api/v1/rentals/{id} answering "running", through
// the real router, the River workers and the demo nodes' simulated agents
// (connected over HTTP, as `serve --demo` runs them). Each iteration rents
// one GPU of the next demo offer, polls every 20 ms until it runs, and
// stops it. It reports the p50 and p95 of that wait; use -benchtime=30x or
// so for percentiles worth reading.
func BenchmarkRentToRunning(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchRentToRunning(b, dbtest.SQLite(b)) })
	b.Run("postgres", func(b *testing.B) { benchRentToRunning(b, dbtest.Postgres(b)) })
}

func benchRentToRunning(b *testing.B, db *models.DB) {
	ctx := context.Background()
	if err := demo.SeedDemo(ctx, db); err != nil {
		b.Fatal(err)
	}
	ix := offers.NewIndex(db)
	if _, err := ix.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	h := testHandler(db, ix)
	q, err := workers.New(db, workers.Options{Work: true, Rentals: h.Rentals})
	if err != nil {
		b.Fatal(err)
	}
	h.Rentals.Jobs = q
	srv := httptest.NewServer(web.New(h, web.Options{}))
	b.Cleanup(srv.Close)
	if err := q.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = q.Stop(sctx)
	})
	startSimulatedAgents(b, db, h.Rentals, srv.URL)

	token, orgID := benchRenter(b, db, "bench-renter@example.com")
	if err := db.Tx(ctx, func(tx *gorm.DB) error {
		return billing.CreditPromo(tx, orgID, 10_000_000, "promo_credit", "benchmark", nil, nil, db.Now().UTC())
	}); err != nil {
		b.Fatal(err)
	}
	offers := rentableOffers(b, db)
	c := &renterClient{base: srv.URL, token: token, key: benchSSHKey(b)}

	var waits []time.Duration
	next := 0
	for b.Loop() {
		id, start := c.rentNext(b, offers, &next)
		waits = append(waits, c.waitRunning(b, id, start))
		c.stop(b, id)
	}
	slices.Sort(waits)
	b.ReportMetric(msOf(percentile(waits, 50)), "p50-ms")
	b.ReportMetric(msOf(percentile(waits, 95)), "p95-ms")
}

// startSimulatedAgents connects one simulated agent per demo node, as
// `serve --demo` does (go-nvml mock servers with the seeded GPU UUIDs, a
// launcher that starts nothing), and waits until every node is healthy.
func startSimulatedAgents(b *testing.B, db *models.DB, rentals *rentals.Service, server string) {
	ctx := context.Background()
	var nodes []models.Node
	if err := db.R.Where("demo").Order("id").Find(&nodes).Error; err != nil {
		b.Fatal(err)
	}
	actx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	b.Cleanup(func() { cancel(); wg.Wait() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	client := &http.Client{Timeout: 60 * time.Second}
	for _, n := range nodes {
		var uuids []string
		if err := db.R.Model(&models.GPU{}).Where("node_id = ?", n.ID).Order("idx").Pluck("uuid", &uuids).Error; err != nil {
			b.Fatal(err)
		}
		sim, err := gpu.SimulateCatalog(n.GPUModel, len(uuids), gpu.WithUUIDs(uuids))
		if err != nil {
			b.Fatalf("node %s: %v", n.Name, err)
		}
		reader, err := gpu.Open(sim, gpu.Options{})
		if err != nil {
			b.Fatalf("node %s: %v", n.Name, err)
		}
		cred, err := rentals.Fleet().IssueCredential(ctx, n.ID)
		if err != nil {
			b.Fatal(err)
		}
		a, err := agent.New(agent.Config{Server: server, Token: cred, HTTPClient: client, GPUs: reader,
			Launcher: &agent.SimulatedLauncher{Host: n.Name + ".sim.invalid"}, Silent: sim.Silent, Version: "bench", Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			defer reader.Close()
			_ = a.Run(actx)
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var healthy int64
		if err := db.R.Model(&models.Node{}).Where("demo AND health = ?", models.NodeHealthy).Count(&healthy).Error; err != nil {
			b.Fatal(err)
		}
		if int(healthy) == len(nodes) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d demo nodes healthy after 30s", healthy, len(nodes))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// benchRenter creates a verified user with a personal organisation and
// returns an API token and the organisation.
func benchRenter(b *testing.B, db *models.DB, email string) (string, int64) {
	ctx := context.Background()
	svc := &accounts.Service{DB: db}
	u, err := svc.CreateUser(ctx, email, "bench-pass-2026", "Bench", false)
	if err != nil {
		b.Fatal(err)
	}
	orgs, err := db.OrgsOfUser(ctx, u.ID)
	if err != nil || len(orgs) == 0 {
		b.Fatalf("organisations of the renter: %v", err)
	}
	token, _, err := svc.CreateAPIToken(ctx, u, "bench")
	if err != nil {
		b.Fatal(err)
	}
	return token, orgs[0].Org.ID
}

// rentableOffers are the listed demo offers with free GPUs.
func rentableOffers(b *testing.B, db *models.DB) []int64 {
	var ids []int64
	if err := db.R.Model(&models.Offer{}).Where("demo AND status = ? AND available_gpus > 0", models.OfferListed).Order("id").Pluck("id", &ids).Error; err != nil {
		b.Fatal(err)
	}
	if len(ids) == 0 {
		b.Fatal("no demo offer has free GPUs")
	}
	return ids
}

// renterClient speaks the rental API with a bearer token.
type renterClient struct {
	base, token, key string
}

func (c *renterClient) do(b *testing.B, method, path string, body any) (int, []byte) {
	var rd io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		b.Fatal(err)
	}
	return res.StatusCode, out
}

// rentNext rents one GPU of the next offer that has one free (GPUs of a
// just-stopped rental come back when its agent confirms the stop) and
// returns the rental and when its request was sent.
func (c *renterClient) rentNext(b *testing.B, offers []int64, next *int) (int64, time.Time) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for range offers {
			o := offers[*next%len(offers)]
			*next++
			start := time.Now()
			code, body := c.do(b, "POST", "/api/v1/rentals", map[string]any{"offer_id": o, "gpus": 1, "sla": "standard", "ssh_public_key": c.key})
			switch code {
			case http.StatusCreated:
				var r struct {
					ID int64 `json:"id"`
				}
				if err := json.Unmarshal(body, &r); err != nil {
					b.Fatal(err)
				}
				return r.ID, start
			case http.StatusConflict:
				if !strings.Contains(string(body), "GPU") {
					b.Fatalf("rent offer %d: %s", o, body)
				}
			default:
				b.Fatalf("rent offer %d: %d %s", o, code, body)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatal("no offer had a free GPU for 30s")
	return 0, time.Time{}
}

// waitRunning polls the rental every 20 ms until it runs and returns how
// long that took from start.
func (c *renterClient) waitRunning(b *testing.B, id int64, start time.Time) time.Duration {
	deadline := start.Add(60 * time.Second)
	for time.Now().Before(deadline) {
		code, body := c.do(b, "GET", fmt.Sprintf("/api/v1/rentals/%d", id), nil)
		var r struct {
			Status  string `json:"status"`
			Failure string `json:"failure"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &r) != nil {
			b.Fatalf("rental %d: %d %s", id, code, body)
		}
		switch models.RentalStatus(r.Status) {
		case models.RentalRunning:
			return time.Since(start)
		case models.RentalPending, models.RentalProvisioning:
		default:
			b.Fatalf("rental %d went %s: %s", id, r.Status, r.Failure)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("rental %d not running after 60s", id)
	return 0
}

func (c *renterClient) stop(b *testing.B, id int64) {
	if code, body := c.do(b, "POST", fmt.Sprintf("/api/v1/rentals/%d/stop", id), nil); code != http.StatusOK {
		b.Fatalf("stop rental %d: %d %s", id, code, body)
	}
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (p*len(sorted)+99)/100 - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchSSHKey is a fresh OpenSSH public key line.
func benchSSHKey(b *testing.B) string {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		b.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}
