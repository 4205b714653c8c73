package witness_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/agent"
	"suanli/apperr"
	"suanli/catalog"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/locales"
	"suanli/models"
	"suanli/models/witnessstore"
	"suanli/sla"
	"suanli/witness"
)

// fixture is a node of the demo with two GPUs, each in a running rental
// of its own, and the verify tokens their launches were given.
type fixture struct {
	db      *models.DB
	node    models.Node
	offer   models.Offer
	model   catalog.GPUModel
	rentals [2]models.Rental
	uuids   [2]string
	tokens  [2]string
}

func newFixture(t *testing.T, db *models.DB, simulated bool) *fixture {
	t.Helper()
	ctx := context.Background()
	if err := demo.SeedDemo(ctx, db); err != nil {
		t.Fatal(err)
	}
	f := &fixture{db: db}
	if err := db.R.Where("demo").Order("id").First(&f.node).Error; err != nil {
		t.Fatal(err)
	}
	// The server's own record says whether a node is simulated.
	if err := db.W.Model(&models.Node{}).Where("id = ?", f.node.ID).Update("simulated", simulated).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.R.Where("node_id = ?", f.node.ID).Order("id").First(&f.offer).Error; err != nil {
		t.Fatal(err)
	}
	f.model, _ = catalog.GPUModelBySlug(f.offer.GPUModel)
	var gs []models.GPU
	if err := db.R.Where("node_id = ?", f.node.ID).Order("idx").Find(&gs).Error; err != nil || len(gs) < 2 {
		t.Fatalf("node %d: %d GPUs, %v", f.node.ID, len(gs), err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	for i := range 2 {
		tag := fmt.Sprintf("%d-%d", time.Now().UnixNano(), i)
		u := &models.User{Email: "renter-" + tag + "@example.test", Name: "renter", Lang: locales.ZH, PasswordHash: "x", CreatedAt: now}
		org := &models.Org{Kind: models.OrgTeam, Name: "team " + tag, Personal: true, Status: models.OrgActive, CreatedAt: now}
		r := models.Rental{OfferID: f.offer.ID, ProviderID: f.offer.ProviderID, NodeID: &f.node.ID, GPUs: 1,
			SLA: "standard", Term: "on_demand", Status: models.RentalRunning, SSHPublicKey: "ssh-ed25519 AAAA test", WorkspaceID: "ws-" + tag,
			PricePerGPUHourFen: f.offer.PricePerGPUHourFen, RunningSince: &now, CreatedAt: now, UpdatedAt: now}
		err := db.Tx(ctx, func(tx *gorm.DB) error {
			if err := models.InsertUser(tx, u); err != nil {
				return err
			}
			if err := models.InsertOrg(tx, org); err != nil {
				return err
			}
			r.OrgID, r.UserID = org.ID, u.ID
			if err := tx.Create(&r).Error; err != nil {
				return err
			}
			if err := tx.Create(&models.RentalGPU{RentalID: r.ID, GPUID: gs[i].ID, NodeID: f.node.ID, AttachedAt: now}).Error; err != nil {
				return err
			}
			task := agent.Task{Kind: agent.TaskLaunch, RentalID: r.ID, GPUUUIDs: []string{gs[i].UUID}}
			if err := witness.LaunchVerify(tx, &task, "http://172.17.0.1:8080/", now); err != nil {
				return err
			}
			if task.Verify == nil || task.Verify.URL != fmt.Sprintf("http://172.17.0.1:8080/witness/v1/rentals/%d/results", r.ID) ||
				!strings.HasPrefix(task.Verify.Token, witness.TokenPrefix) || task.Verify.GPUName != f.model.Name {
				return fmt.Errorf("launch task's verify: %+v", task.Verify)
			}
			f.tokens[i] = task.Verify.Token
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		f.rentals[i], f.uuids[i] = r, gs[i].UUID
	}
	return f
}

func (f *fixture) report(i int, tflops ...float64) witness.Report {
	rep := witness.Report{Version: 1, NVML: "ok", GEMM: "ran", GPUs: []witness.ReportGPU{{UUID: f.uuids[i], Name: f.model.Name, Health: "ok"}}}
	if len(tflops) > 0 {
		rep.GPUs[0].BF16TFLOPS = &tflops[0]
	}
	return rep
}

func fieldOf(err error) string {
	var f apperr.Fields
	if e, ok := err.(apperr.Fields); ok {
		f = e
	}
	var names []string
	for _, e := range f {
		names = append(names, e.Field)
	}
	return strings.Join(names, ",")
}

// A verifier's result is taken only with its own rental's token, for
// exactly the rental's GPUs, within the catalogue's bounds.
func TestSubmitRules(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		f := newFixture(t, db, false)
		s := &witness.Service{DB: db}
		r0 := f.rentals[0].ID
		good := f.model.TensorTFLOPS() * 0.8

		cases := []struct {
			name   string
			rental int64
			token  string
			rep    witness.Report
			code   string
			field  string
		}{
			{"no token", r0, "", f.report(0), apperr.EUNAUTHORIZED, ""},
			{"an unknown token", r0, witness.TokenPrefix + "00", f.report(0), apperr.EUNAUTHORIZED, ""},
			{"another rental's token", r0, f.tokens[1], f.report(0), apperr.EFORBIDDEN, ""},
			{"another rental's GPU", r0, f.tokens[0], f.report(1), apperr.EINVALID, "gpus"},
			{"no GPU at all", r0, f.tokens[0], witness.Report{NVML: "ok"}, apperr.EINVALID, "gpus"},
			{"a GPU twice", r0, f.tokens[0], func() witness.Report {
				r := f.report(0)
				r.GPUs = append(r.GPUs, r.GPUs[0])
				return r
			}(), apperr.EINVALID, "gpus"},
			{"no health verdict", r0, f.tokens[0], func() witness.Report {
				r := f.report(0)
				r.GPUs[0].Health = ""
				return r
			}(), apperr.EINVALID, "gpus[0].health"},
			{"unread health on a real node", r0, f.tokens[0], func() witness.Report {
				r := f.report(0)
				r.GPUs[0].Health = "unread"
				return r
			}(), apperr.EINVALID, "gpus[0].health"},
			{"TFLOPS above nominal", r0, f.tokens[0], f.report(0, f.model.TensorTFLOPS()*1.5), apperr.EINVALID, "gpus[0].bf16_tflops"},
			{"negative TFLOPS", r0, f.tokens[0], f.report(0, -1), apperr.EINVALID, "gpus[0].bf16_tflops"},
			{"simulated on a real node", r0, f.tokens[0], func() witness.Report {
				r := f.report(0)
				r.Simulated = true
				return r
			}(), apperr.EINVALID, "simulated"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				_, err := s.Submit(ctx, c.rental, c.token, c.rep)
				if apperr.Code(err) != c.code && !(c.code == apperr.EINVALID && fieldOf(err) != "") {
					t.Fatalf("err %v (code %s), want code %s", err, apperr.Code(err), c.code)
				}
				if c.field != "" && fieldOf(err) != c.field {
					t.Fatalf("err %v names %q, want %q", err, fieldOf(err), c.field)
				}
			})
		}
		if rs, err := witnessstore.ResultsOfRental(ctx, db, r0); err != nil || len(rs) != 0 {
			t.Fatalf("refused reports stored: %+v %v", rs, err)
		}

		res, err := s.Submit(ctx, r0, f.tokens[0], f.report(0, good))
		if err != nil {
			t.Fatal(err)
		}
		if res.Source != witnessstore.SourceRenter || res.Simulated || res.BF16TFLOPS == nil || *res.BF16TFLOPS != good || res.GPUName != f.model.Name {
			t.Fatalf("stored %+v", res)
		}

		// A stopped rental's token is worth nothing.
		if err := db.W.Model(&models.Rental{}).Where("id = ?", r0).Update("status", models.RentalStopped).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := s.Submit(ctx, r0, f.tokens[0], f.report(0, good)); apperr.Code(err) != apperr.ECONFLICT {
			t.Fatalf("after the stop: %v, want a conflict", err)
		}
	})
}

// Offers show the median of the renter-measured runs of the last 30
// days, and audit runs apart; a simulated node's runs are marked and
// measure nothing.
func TestSummaries(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		f := newFixture(t, db, false)
		s := &witness.Service{DB: db}
		nominal := f.model.TensorTFLOPS()
		// One rental's three runs are three runs but one vote in the
		// median: its latest (a rental cannot outvote the others).
		for _, x := range []float64{0.70, 0.75, 0.80} {
			if _, err := s.Submit(ctx, f.rentals[0].ID, f.tokens[0], f.report(0, nominal*x)); err != nil {
				t.Fatal(err)
			}
		}
		// An old run is outside the window.
		old := witnessstore.Result{RentalID: f.rentals[0].ID, OfferID: f.offer.ID, NodeID: f.node.ID, Source: witnessstore.SourceRenter, GPUs: 1, Healthy: true,
			BF16TFLOPS: ptr(nominal * 0.1), CreatedAt: time.Now().UTC().Add(-31 * 24 * time.Hour)}
		if err := witnessstore.InsertResult(ctx, db, &old); err != nil {
			t.Fatal(err)
		}
		// The second rental is an audit's.
		run := witnessstore.AuditRun{OfferID: f.offer.ID, RentalID: &f.rentals[1].ID, Status: witnessstore.AuditRunning, StartedAt: time.Now().UTC(), Deadline: time.Now().UTC().Add(time.Hour)}
		if err := witnessstore.InsertAuditRun(ctx, db, &run); err != nil {
			t.Fatal(err)
		}
		res, err := s.Submit(ctx, f.rentals[1].ID, f.tokens[1], f.report(1, nominal*0.5))
		if err != nil || res.Source != witnessstore.SourceAudit {
			t.Fatalf("audit rental's result %+v %v", res, err)
		}
		if a, err := witnessstore.AuditOfRental(ctx, db, f.rentals[1].ID); err != nil || a.Status != witnessstore.AuditPassed || a.FinishedAt == nil {
			t.Fatalf("audit run after its result: %+v %v", a, err)
		}
		sm, err := s.Summary(ctx, f.offer.ID)
		if err != nil {
			t.Fatal(err)
		}
		if sm.Renter == nil || sm.Renter.Runs != 3 || sm.Renter.Simulated || sm.Renter.MedianBF16TFLOPS == nil || *sm.Renter.MedianBF16TFLOPS != nominal*0.80 {
			t.Fatalf("renter figures %+v", sm.Renter)
		}
		if sm.Audit == nil || sm.Audit.Runs != 1 || *sm.Audit.MedianBF16TFLOPS != nominal*0.5 {
			t.Fatalf("audit figures %+v", sm.Audit)
		}
		if ns, err := s.NodeSummary(ctx, f.node.ID); err != nil || ns.Renter == nil || ns.Renter.Runs != 3 || ns.Audit == nil || ns.Audit.Runs != 1 {
			t.Fatalf("the node's summary %+v %v", ns, err)
		}
		if other, err := s.Summaries(ctx, []int64{f.offer.ID + 1000}); err != nil || len(other) != 0 {
			t.Fatalf("an offer without results: %+v %v", other, err)
		}
	})
}

func TestSimulatedNode(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		f := newFixture(t, db, true)
		s := &witness.Service{DB: db}
		rep := witness.Report{Version: 1, Simulated: true, NVML: "unavailable", GEMM: "not run: simulated",
			GPUs: []witness.ReportGPU{{UUID: f.uuids[0], Name: f.model.Name, Health: "unread"}}}
		// Figures for a GPU that is not there are refused.
		measured := rep
		measured.GPUs = []witness.ReportGPU{{UUID: f.uuids[0], Health: "unread", BF16TFLOPS: ptr(10)}}
		if _, err := s.Submit(ctx, f.rentals[0].ID, f.tokens[0], measured); fieldOf(err) != "gpus[0].bf16_tflops" {
			t.Fatalf("a simulated GPU's TFLOPS: %v", err)
		}
		res, err := s.Submit(ctx, f.rentals[0].ID, f.tokens[0], rep)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Simulated || res.BF16TFLOPS != nil {
			t.Fatalf("stored %+v, want simulated without figures", res)
		}
		// The server's record decides, not the report.
		rep.Simulated = false
		if res, err := s.Submit(ctx, f.rentals[0].ID, f.tokens[0], rep); err != nil || !res.Simulated {
			t.Fatalf("a report that does not say simulated, from a simulated node: %+v %v", res, err)
		}
		sm, err := s.Summary(ctx, f.offer.ID)
		if err != nil || sm.Renter == nil || !sm.Renter.Simulated || sm.Renter.Runs != 2 || sm.Renter.MedianBF16TFLOPS != nil {
			t.Fatalf("summary %+v %v", sm.Renter, err)
		}
	})
}

// One rental may post MaxResultsPerRental results; the next is refused
// (rate_limited) and stores nothing.
func TestResultsPerRentalAreBounded(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		f := newFixture(t, db, false)
		s := &witness.Service{DB: db}
		fig := f.model.TensorTFLOPS() * 0.8
		for i := range witness.MaxResultsPerRental {
			if _, err := s.Submit(ctx, f.rentals[0].ID, f.tokens[0], f.report(0, fig)); err != nil {
				t.Fatalf("result %d: %v", i+1, err)
			}
		}
		if _, err := s.Submit(ctx, f.rentals[0].ID, f.tokens[0], f.report(0, fig)); apperr.Code(err) != apperr.ERATELIMIT {
			t.Fatalf("result %d: %v, want rate_limited", witness.MaxResultsPerRental+1, err)
		}
		if n, err := witnessstore.CountResultsOfRental(ctx, db, f.rentals[0].ID); err != nil || n != witness.MaxResultsPerRental {
			t.Fatalf("stored %d %v", n, err)
		}
		// Another rental is not held back by it.
		if _, err := s.Submit(ctx, f.rentals[1].ID, f.tokens[1], f.report(1, fig)); err != nil {
			t.Fatal(err)
		}
	})
}

func ptr(f float64) *float64 { return &f }

// A report its witnesses dispute costs its node DisputePenaltyPct of
// reliability, and the offer's API status says disputed.
func TestDisputeLowersReliability(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		f := newFixture(t, db, false)
		s := &witness.Service{DB: db}
		nominal := f.model.TensorTFLOPS()
		agent := nominal * 0.9
		// The agent's report: a real node's, within bounds, its latest;
		// the node has sent heartbeats (its uptime is computed).
		now := time.Now().UTC()
		rep := models.BenchmarkReport{NodeID: f.node.ID, GPUModel: f.offer.GPUModel, GPUs: 2, Trigger: "on_demand", Nominal: "{}", Report: "{}",
			BF16TFLOPS: &agent, MeasuredAt: now, CreatedAt: now}
		if err := db.W.Create(&rep).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.W.Model(&models.Node{}).Where("id = ?", f.node.ID).
			Updates(map[string]any{"latest_report_id": rep.ID, "last_heartbeat_at": now}).Error; err != nil {
			t.Fatal(err)
		}
		uptime := func() float64 {
			t.Helper()
			if _, err := sla.RefreshUptime(ctx, db); err != nil {
				t.Fatal(err)
			}
			var n models.Node
			if err := db.R.First(&n, f.node.ID).Error; err != nil || n.Uptime30dPct == nil {
				t.Fatalf("node uptime: %v %v", n.Uptime30dPct, err)
			}
			return *n.Uptime30dPct
		}
		before := uptime()
		// A witness that agrees within the tolerance: no penalty.
		if _, err := s.Submit(ctx, f.rentals[0].ID, f.tokens[0], f.report(0, agent*0.95)); err != nil {
			t.Fatal(err)
		}
		if d, err := sla.DisputedNodes(ctx, db); err != nil || d[f.node.ID] {
			t.Fatalf("an agreeing witness disputes: %v %v", d, err)
		}
		if got := uptime(); math.Abs(got-before) > 0.01 {
			t.Fatalf("uptime %v after an agreeing witness, want %v", got, before)
		}
		// The platform's audit measures half: disputed.
		run := witnessstore.AuditRun{OfferID: f.offer.ID, RentalID: &f.rentals[1].ID, Status: witnessstore.AuditRunning, StartedAt: time.Now().UTC(), Deadline: time.Now().UTC().Add(time.Hour)}
		if err := witnessstore.InsertAuditRun(ctx, db, &run); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Submit(ctx, f.rentals[1].ID, f.tokens[1], f.report(1, agent*0.5)); err != nil {
			t.Fatal(err)
		}
		if d, err := sla.DisputedNodes(ctx, db); err != nil || !d[f.node.ID] {
			t.Fatalf("a witness at half the agent's figure does not dispute: %v %v", d, err)
		}
		if got, want := uptime(), math.Max(0, before-sla.DisputePenaltyPct); math.Abs(got-want) > 0.01 {
			t.Fatalf("uptime %v while disputed, want %v", got, want)
		}
	})
}
