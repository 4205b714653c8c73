package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/benchmarks"
	"suanli/dbtest"
	"suanli/fleet"
	"suanli/models"
	"suanli/providers"
	"suanli/routenames"
	"suanli/witness"
)

// badgeStatus is the benchmark status the badge linking to report
// reportID says in page ("" when there is no such badge): "verified"
// for the verified badge, "simulated" for the simulated one, else its
// data-status.
func badgeStatus(page string, reportID int64) string {
	re := regexp.MustCompile(fmt.Sprintf(`<a class="(badge[^"]*)"(?: data-status="([^"]*)")? href="/benchmarks/%d"`, reportID))
	m := re.FindStringSubmatch(page)
	switch {
	case m == nil:
		return ""
	case m[2] != "":
		return m[2]
	case strings.Contains(" "+m[1]+" ", " verified "):
		return "verified"
	case strings.Contains(" "+m[1]+" ", " simulated "):
		return "simulated"
	}
	return "?" + m[1]
}

// The witnesses judge a real node's benchmark: its in-bounds report is
// unverified (the agent's word only) on the offer list, the datacenter
// page, the offer page, the report page and their APIs until a renter's
// verifier posts a result; one that agrees within DisputeTolerance makes
// it verified everywhere (the offer list's cached row included, once the
// index reloads for the moved offers version), one far below the
// agent's figure disputed.
func TestWitnessJudgesTheBenchmarkStatus(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		a := newApp(t, db)
		ctx := context.Background()
		owner := mustUser(t, db, "owner@judged.example", "Owner", false)
		renter := mustUser(t, db, "renter@judged.example", "Renter", false)
		var orgID int64
		if err := db.Tx(ctx, func(tx *gorm.DB) (err error) { orgID, err = models.PersonalOrgOf(tx, renter.ID); return err }); err != nil {
			t.Fatal(err)
		}
		p := &providers.Service{DB: db}
		acc, err := p.CreateVerified(ctx, owner, "Judged Compute")
		if err != nil {
			t.Fatal(err)
		}
		dc, err := p.CreateDatacenter(ctx, owner, acc.Provider.ID, providers.DatacenterInput{NameZH: "机房", NameEN: "DC", City: "chengdu"})
		if err != nil {
			t.Fatal(err)
		}
		f := &fleet.Fleet{DB: db, Hub: fleet.NewHub()}

		// subject is a real node of a real provider with an offer, a
		// stored in-bounds report, and a running rental of one of its
		// GPUs with the rental's verify token.
		type subject struct {
			name                     string
			node, offer, rep, rental int64
			agentTFLOPS              float64
			gpuUUID, token           string
		}
		setup := func(name, prefix string, fen int64) subject {
			s := subject{name: name}
			n, tok, err := p.AddNode(ctx, owner, acc.Provider.ID, providers.NodeInput{DatacenterID: dc.ID, Name: name})
			if err != nil {
				t.Fatal(err)
			}
			s.node = n.ID
			st, body := a.agentCall("/agent/v1/heartbeat", tok, agent.Heartbeat{AgentVersion: "judged", Launcher: "simulated", Host: forgedHost(t, prefix, false)})
			var reply agent.HeartbeatReply
			if st != http.StatusOK || json.Unmarshal([]byte(body), &reply) != nil || reply.Credential == "" {
				t.Fatalf("%s: registration: %d %s", name, st, body)
			}
			o, err := p.CreateOffer(ctx, owner, acc.Provider.ID, providers.OfferInput{NodeID: n.ID, GPU: "h100-sxm", MaxGPUs: 2, PricePerGPUHourFen: fen})
			if err != nil {
				t.Fatal(err)
			}
			s.offer = o.ID
			if _, err := benchmarks.Request(ctx, f, n.ID, models.BenchOnDemand); err != nil {
				t.Fatal(err)
			}
			task := a.takeTask(reply.Credential, agent.TaskBenchmark)
			detail, _ := json.Marshal(honestRun(task.GPUUUIDs))
			if st, body := a.agentCall(fmt.Sprintf("/agent/v1/tasks/%d/result", task.ID), reply.Credential, agent.Result{OK: true, Detail: detail}); st != http.StatusOK {
				t.Fatalf("%s: a plausible report: %d %s", name, st, body)
			}
			var rep models.BenchmarkReport
			if err := db.R.Where("task_id = ?", task.ID).First(&rep).Error; err != nil {
				t.Fatal(err)
			}
			if rep.Refused() || rep.Simulated || rep.BF16TFLOPS == nil {
				t.Fatalf("%s: the report %+v, want a real in-bounds one with a BF16 figure", name, rep)
			}
			s.rep, s.agentTFLOPS = rep.ID, *rep.BF16TFLOPS

			var g models.GPU
			if err := db.R.Where("node_id = ?", n.ID).Order("idx").First(&g).Error; err != nil {
				t.Fatal(err)
			}
			s.gpuUUID = g.UUID
			now := time.Now().UTC()
			r := &models.Rental{OrgID: orgID, UserID: renter.ID, OfferID: o.ID, ProviderID: acc.Provider.ID, NodeID: &s.node, GPUs: 1, SLA: "standard", Term: "on_demand",
				Status: models.RentalRunning, SSHPublicKey: testSSHKey(t), WorkspaceID: "ws-judged-" + name,
				PricePerGPUHourFen: fen, RunningSince: &now, BilledUntil: &now, CreatedAt: now, UpdatedAt: now}
			if err := db.W.Create(r).Error; err != nil {
				t.Fatal(err)
			}
			s.rental = r.ID
			if err := db.Tx(ctx, func(tx *gorm.DB) error {
				if err := tx.Create(&models.RentalGPU{RentalID: r.ID, GPUID: g.ID, NodeID: n.ID, AttachedAt: now}).Error; err != nil {
					return err
				}
				lt := agent.Task{Kind: agent.TaskLaunch, RentalID: r.ID, GPUUUIDs: []string{g.UUID}}
				if err := witness.LaunchVerify(tx, &lt, a.srv.URL, now); err != nil {
					return err
				}
				s.token = lt.Verify.Token
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			return s
		}
		agrees := setup("agrees", "GPU-a9ee0000", 115)
		half := setup("half", "GPU-4a1f0000", 116)
		subjects := []subject{agrees, half}
		if _, err := a.index.Refresh(ctx); err != nil {
			t.Fatal(err)
		}

		// statuses reads every place that judges the subject's report.
		listPath := "/offers" + query("gpu", "h100-sxm", "max_price", "1.20")
		dcPath := a.url(routenames.DatacentersShow, dc.Slug)
		statuses := func(s subject) map[string]string {
			t.Helper()
			out := map[string]string{}
			page := func(name, path string) string {
				res, body := a.get(path, "Accept-Language", "en")
				if res.StatusCode != http.StatusOK {
					t.Fatalf("%s: GET %s: %d", s.name, path, res.StatusCode)
				}
				out[name] = badgeStatus(body, s.rep)
				return body
			}
			page("offers list", listPath)
			page("datacenter", dcPath)
			page("offer page", a.url(routenames.OffersShow, s.offer))
			_, body := a.get(a.url(routenames.BenchmarksShow, s.rep), "Accept-Language", "en")
			for _, st := range []benchmarks.Status{benchmarks.StatusVerified, benchmarks.StatusUnverified, benchmarks.StatusDisputed, benchmarks.StatusRefused, benchmarks.StatusSimulated} {
				if strings.Contains(body, fmt.Sprintf(`id="bench-%s"`, st)) {
					out["report page"] += string(st)
				}
			}
			_, body = a.get(a.url(routenames.NodesBenchmarks, s.node), "Accept-Language", "en")
			if m := regexp.MustCompile(fmt.Sprintf(`<strong>#%d</strong></a>\s*<span class="[^"]*" data-status="([^"]*)"`, s.rep)).FindStringSubmatch(body); m != nil {
				out["node history"] = m[1]
			}
			api := func(name, path string, v any) {
				res, body := a.get(path)
				if res.StatusCode != http.StatusOK {
					t.Fatalf("%s: GET %s: %d %s", s.name, path, res.StatusCode, body)
				}
				if err := json.Unmarshal([]byte(body), v); err != nil {
					t.Fatalf("%s: GET %s: %v", s.name, path, err)
				}
			}
			type bench struct {
				Benchmark *struct {
					ID     int64  `json:"id"`
					Status string `json:"status"`
				} `json:"benchmark"`
			}
			var list struct {
				Offers []struct {
					ID int64 `json:"id"`
					bench
				} `json:"offers"`
			}
			api("api offers", "/api/v1/offers"+query("gpu", "h100-sxm", "max_price", "1.20", "per_page", "100"), &list)
			for _, o := range list.Offers {
				if o.ID == s.offer && o.Benchmark != nil && o.Benchmark.ID == s.rep {
					out["api offers"] = o.Benchmark.Status
				}
			}
			var one bench
			api("api offer", a.url(routenames.APIOffersShow, s.offer), &one)
			if one.Benchmark != nil && one.Benchmark.ID == s.rep {
				out["api offer"] = one.Benchmark.Status
			}
			var rep struct {
				ID     int64  `json:"id"`
				Status string `json:"status"`
			}
			api("api report", a.url(routenames.APIBenchmarksShow, s.rep), &rep)
			out["api report"] = rep.Status
			var hist struct {
				Reports []struct {
					ID     int64  `json:"id"`
					Status string `json:"status"`
				} `json:"reports"`
			}
			api("api node history", a.url(routenames.APINodesBenchmarks, s.node), &hist)
			for _, r := range hist.Reports {
				if r.ID == s.rep {
					out["api node history"] = r.Status
				}
			}
			return out
		}
		expect := func(s subject, when string, want benchmarks.Status) {
			t.Helper()
			got := statuses(s)
			for _, place := range []string{"offers list", "datacenter", "offer page", "report page", "node history", "api offers", "api offer", "api report", "api node history"} {
				if got[place] != string(want) {
					t.Errorf("%s, %s: the %s says %q, want %q", s.name, when, place, got[place], want)
				}
			}
		}

		// Before any witness: the agent's word only. These requests also
		// fill the offer list's row cache with the unverified rows.
		for _, s := range subjects {
			expect(s, "before any witness", benchmarks.StatusUnverified)
		}

		post := func(s subject, tflops float64) {
			t.Helper()
			body := fmt.Sprintf(`{"version":1,"simulated":false,"nvml":"ok","gemm":"ran","gpus":[{"uuid":%q,"name":"NVIDIA H100 80GB HBM3","health":"ok","bf16_tflops":%g}]}`, s.gpuUUID, tflops)
			req, err := http.NewRequest("POST", a.srv.URL+a.url(routenames.WitnessResults, s.rental), strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+s.token)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusCreated || !strings.Contains(string(b), `"simulated":false`) || !strings.Contains(string(b), `"source":"renter"`) {
				t.Fatalf("%s: posting %g TFLOPS: %d %s", s.name, tflops, res.StatusCode, b)
			}
		}
		// 3 % below the agent's figure: within the 15 % tolerance.
		post(agrees, agrees.agentTFLOPS*0.97)
		// Half the agent's figure: far outside it.
		post(half, half.agentTFLOPS*0.5)

		// A result moves the offers version: the index (which holds the
		// lists' statuses) reloads, as every replica's does on its next
		// refresh, and the list does not serve its cached rows.
		if reloaded, err := a.index.Refresh(ctx); err != nil || !reloaded {
			t.Fatalf("index after the witnesses' results: reloaded %v, %v", reloaded, err)
		}
		expect(agrees, "after a renter's result within 15 %", benchmarks.StatusVerified)
		expect(half, "after a renter's result of half the agent's figure", benchmarks.StatusDisputed)
		_, page := a.get(a.url(routenames.OffersShow, half.offer), "Accept-Language", "en")
		contains(t, page, `id="witness-disputed"`)
		_, page = a.get(a.url(routenames.OffersShow, agrees.offer), "Accept-Language", "en")
		if strings.Contains(page, `id="witness-disputed"`) {
			t.Errorf("agrees: the offer page shows the disagreement notice")
		}
	})
}
