package models_test

import (
	"context"
	"testing"
	"time"

	"suanli/apperr"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/locales"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/listing"
	"suanli/models/rentalstore"
	"suanli/pricing"
)

// rentalWorld is the demo market with one renter, one listed offer whose
// node and GPUs are healthy, and a time to write rentals at.
type rentalWorld struct {
	ctx   context.Context
	user  *models.User
	org   *models.Org
	offer models.Offer
	gpus  []models.GPU // the offer's node's GPUs of its model, by index
	now   time.Time
}

func newRentalWorld(t *testing.T, db *models.DB) *rentalWorld {
	t.Helper()
	ctx := context.Background()
	if err := demo.SeedDemo(ctx, db); err != nil {
		t.Fatal(err)
	}
	w := &rentalWorld{ctx: ctx, now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	w.user = &models.User{Email: "renter@example.com", Name: "R", Lang: "en", CreatedAt: w.now}
	if err := models.InsertUser(db.W, w.user); err != nil {
		t.Fatal(err)
	}
	w.org = &models.Org{Kind: "team", Name: "R", Personal: true, Status: models.OrgActive, CreatedAt: w.now}
	if err := models.InsertOrg(db.W, w.org); err != nil {
		t.Fatal(err)
	}
	rows, _, err := listing.All(ctx, db)
	if err != nil || len(rows) == 0 {
		t.Fatalf("offers: %d, %v", len(rows), err)
	}
	w.offer = rows[0].Offer
	// The demo's nodes have not reported yet: make the offer's node and
	// GPUs healthy and free, as a heartbeat would.
	db.W.Model(&models.Node{}).Where("id = ?", w.offer.NodeID).Updates(map[string]any{"health": models.NodeHealthy, "last_heartbeat_at": w.now})
	db.W.Model(&models.GPU{}).Where("node_id = ?", w.offer.NodeID).Updates(map[string]any{"health": models.GPUHealthy, "state": models.GPUFree})
	db.W.Where("node_id = ? AND gpu_model = ?", w.offer.NodeID, w.offer.GPUModel).Order("idx").Find(&w.gpus)
	if len(w.gpus) < 2 {
		t.Fatalf("offer's node has %d GPUs, want 2 or more", len(w.gpus))
	}
	return w
}

// rental inserts a rental of the world's offer with the status and term.
func (w *rentalWorld) rental(t *testing.T, db *models.DB, status models.RentalStatus, term pricing.Term) *models.Rental {
	t.Helper()
	r := &models.Rental{OrgID: w.org.ID, UserID: w.user.ID, OfferID: w.offer.ID, ProviderID: w.offer.ProviderID, GPUs: 1, SLA: "basic",
		Term: term, Status: status, SSHPublicKey: "ssh-ed25519 AAAA", WorkspaceID: "ws-" + time.Now().Format("150405.000000000"),
		PricePerGPUHourFen: 1000, CreatedAt: w.now, UpdatedAt: w.now}
	if err := rentalstore.InsertRental(db.W, r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReserveAndReleaseGPUs(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		w := newRentalWorld(t, db)
		node := w.offer.NodeID
		// The lowest free, healthy GPUs first; a failing one is skipped.
		db.W.Model(&models.GPU{}).Where("id = ?", w.gpus[0].ID).Update("health", models.GPUFailing)
		ids, err := rentalstore.FreeGPUsOnNode(db.W, node, w.offer.GPUModel, 1)
		if err != nil || len(ids) != 1 || ids[0] != w.gpus[1].ID {
			t.Fatalf("free GPUs %v (%v), want [%d]", ids, err, w.gpus[1].ID)
		}
		if ids, _ := rentalstore.FreeGPUsOnNode(db.W, node, "no-such-model", 1); len(ids) != 0 {
			t.Errorf("another model's GPUs: %v", ids)
		}
		// A node that is not healthy offers none.
		db.W.Model(&models.Node{}).Where("id = ?", node).Update("health", models.NodeSilent)
		if ids, _ := rentalstore.FreeGPUsOnNode(db.W, node, w.offer.GPUModel, 1); len(ids) != 0 {
			t.Errorf("silent node's GPUs: %v", ids)
		}
		db.W.Model(&models.Node{}).Where("id = ?", node).Update("health", models.NodeHealthy)

		r := w.rental(t, db, models.RentalPending, pricing.OnDemand)
		take := []int64{w.gpus[0].ID, w.gpus[1].ID}
		if n, err := rentalstore.TakeGPUs(db.W, take); err != nil || n != 2 {
			t.Fatalf("took %d (%v), want 2", n, err)
		}
		if n, _ := rentalstore.TakeGPUs(db.W, take); n != 0 {
			t.Errorf("took %d busy GPUs again", n)
		}
		for _, id := range take {
			if err := rentalstore.AttachRentalGPU(db.W, r.ID, id, node, w.now); err != nil {
				t.Fatal(err)
			}
		}
		other := w.rental(t, db, models.RentalPending, pricing.OnDemand)
		if err := rentalstore.AttachRentalGPU(db.W, other.ID, take[0], node, w.now); !ledger.IsUniqueViolation(err) {
			t.Errorf("a GPU in two live rentals: %v", err)
		}
		if err := rentalstore.SetRentalNode(db.W, r.ID, node, w.now); err != nil {
			t.Fatal(err)
		}
		got, _ := rentalstore.ReadRental(db.W, r.ID)
		if got.NodeID == nil || *got.NodeID != node {
			t.Errorf("node %v, want %d", got.NodeID, node)
		}
		held, err := rentalstore.HeldRentalGPUs(db.W, r.ID)
		if err != nil || len(held) != 2 {
			t.Fatalf("held %d (%v)", len(held), err)
		}
		gs, err := rentalstore.HeldGPUs(w.ctx, db, r.ID)
		if err != nil || len(gs) != 2 || gs[0].ID != w.gpus[0].ID || gs[1].ID != w.gpus[1].ID {
			t.Fatalf("held GPUs %v (%v)", gs, err)
		}

		nodes, err := rentalstore.ReleaseRentalGPUs(db.W, r.ID, w.now)
		if err != nil || len(nodes) != 1 || nodes[0] != node {
			t.Fatalf("released on nodes %v (%v), want [%d]", nodes, err, node)
		}
		var g0, g1 models.GPU
		db.W.First(&g0, w.gpus[0].ID)
		db.W.First(&g1, w.gpus[1].ID)
		if g0.State != models.GPUUnhealthy || g1.State != models.GPUFree {
			t.Errorf("released states %s, %s; want %s (failing), %s", g0.State, g1.State, models.GPUUnhealthy, models.GPUFree)
		}
		if held, _ := rentalstore.HeldRentalGPUs(db.W, r.ID); len(held) != 0 {
			t.Errorf("still held: %v", held)
		}
		if nodes, err := rentalstore.ReleaseRentalGPUs(db.W, r.ID, w.now); err != nil || len(nodes) != 0 {
			t.Errorf("releasing twice: %v, %v", nodes, err)
		}
	})
}

func TestReleasedGPUState(t *testing.T) {
	for health, want := range map[models.GPUHealth]models.GPUState{models.GPUHealthy: models.GPUFree, models.GPUHealthUnknown: models.GPUFree,
		models.GPUFailing: models.GPUUnhealthy, models.GPUMissing: models.GPUUnhealthy} {
		if got := rentalstore.ReleasedGPUState(health); got != want {
			t.Errorf("%s: %s, want %s", health, got, want)
		}
	}
}

func TestMoveRentalAndItsWrites(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		w := newRentalWorld(t, db)
		r := w.rental(t, db, models.RentalPending, pricing.OnDemand)
		later := w.now.Add(time.Minute)
		// Not from the status it has: nothing changes.
		ok, err := rentalstore.MoveRental(db.W, r.ID, models.RentalRunning, []models.RentalStatus{models.RentalProvisioning}, rentalstore.RentalMove{}, later)
		if err != nil || ok {
			t.Fatalf("moved from a status it does not have: %v, %v", ok, err)
		}
		ok, err = rentalstore.MoveRental(db.W, r.ID, models.RentalProvisioning, []models.RentalStatus{models.RentalPending},
			rentalstore.RentalMove{Attempts: new(1)}, later)
		if err != nil || !ok {
			t.Fatalf("move: %v, %v", ok, err)
		}
		sec := later.Truncate(time.Second)
		end := later.Add(7 * 24 * time.Hour)
		ok, err = rentalstore.MoveRental(db.W, r.ID, models.RentalRunning, []models.RentalStatus{models.RentalProvisioning, models.RentalMigrating},
			rentalstore.RentalMove{Access: new(`{"host":"h"}`), Checks: new(`{}`), NodeID: &w.offer.NodeID, BilledUntil: &sec, RunningSince: &sec, EndsAt: &end}, later)
		if err != nil || !ok {
			t.Fatalf("move to running: %v, %v", ok, err)
		}
		got, _ := rentalstore.ReadRental(db.W, r.ID)
		if got.Status != models.RentalRunning || got.Attempts != 1 || got.Access != `{"host":"h"}` || got.Checks != `{}` ||
			got.NodeID == nil || *got.NodeID != w.offer.NodeID || got.BilledUntil == nil || !got.BilledUntil.Equal(sec) ||
			got.RunningSince == nil || !got.RunningSince.Equal(sec) || got.EndsAt == nil || !got.EndsAt.Equal(end) || !got.UpdatedAt.Equal(later) {
			t.Errorf("running rental %+v", got)
		}
		ok, _ = rentalstore.MoveRental(db.W, r.ID, models.RentalMigrating, []models.RentalStatus{models.RentalRunning},
			rentalstore.RentalMove{DownSince: &later, Free: new(true)}, later)
		got, _ = rentalstore.ReadRental(db.W, r.ID)
		if !ok || got.DownSince == nil || !got.Free {
			t.Errorf("migrating rental %+v", got)
		}
		if err := rentalstore.EndRentalDowntime(db.W, r.ID, 42); err != nil {
			t.Fatal(err)
		}
		got, _ = rentalstore.ReadRental(db.W, r.ID)
		if got.DownSince != nil || got.DowntimeSecs != 42 {
			t.Errorf("downtime ended: %v, %d", got.DownSince, got.DowntimeSecs)
		}
		msg := locales.M("event.term_unpaid")
		ok, _ = rentalstore.MoveRental(db.W, r.ID, models.RentalFailed, []models.RentalStatus{models.RentalMigrating},
			rentalstore.RentalMove{Failure: new("no node"), FailureMsg: &msg, StoppedAt: &later, StopReason: new("why")}, later)
		got, _ = rentalstore.ReadRental(db.W, r.ID)
		if !ok || got.Failure != "no node" || got.FailureMsg.IsZero() || got.StoppedAt == nil || got.StopReason != "why" {
			t.Errorf("failed rental %+v", got)
		}

		if err := rentalstore.SetRentalAttempts(db.W, r.ID, 3, later); err != nil {
			t.Fatal(err)
		}
		next := got
		next.OfferID, next.GPUs, next.PricePerGPUHourFen, next.OffpeakPct, next.StudentPct, next.Attempts = w.offer.ID, 2, 2000, 10, 5, 4
		if err := rentalstore.SwitchRental(db.W, &next, models.RentalProvisioning, later); err != nil {
			t.Fatal(err)
		}
		got, _ = rentalstore.ReadRental(db.W, r.ID)
		if got.Status != models.RentalProvisioning || got.GPUs != 2 || got.PricePerGPUHourFen != 2000 || got.OffpeakPct != 10 ||
			got.StudentPct != 5 || got.Attempts != 4 || got.StoppedAt != nil || got.StopReason != "" || got.LowBalanceMailed {
			t.Errorf("switched rental %+v", got)
		}

		term := w.rental(t, db, models.RentalRunning, pricing.Week)
		ledger.SetRentalEndsAt(db.W, term.ID, end)
		if err := rentalstore.FailUnpaidTerm(db.W, term.ID, "unpaid", msg, later); err != nil {
			t.Fatal(err)
		}
		got, _ = rentalstore.ReadRental(db.W, term.ID)
		if got.Status != models.RentalFailed || got.EndsAt != nil || got.Failure != "unpaid" || got.StoppedAt == nil {
			t.Errorf("unpaid term %+v", got)
		}

		if _, err := rentalstore.ReadRental(db.W, 1<<40); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("missing rental: %v", err)
		}
		if o, err := rentalstore.ReadOffer(db.W, w.offer.ID); err != nil || o.ID != w.offer.ID {
			t.Errorf("offer: %v", err)
		}
		if _, err := rentalstore.ReadOffer(db.W, 1<<40); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("missing offer: %v", err)
		}
		if n, err := rentalstore.NodeByID(w.ctx, db, w.offer.NodeID); err != nil || n.ID != w.offer.NodeID {
			t.Errorf("node: %v", err)
		}
		if _, err := rentalstore.NodeByID(w.ctx, db, 1<<40); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("missing node: %v", err)
		}
	})
}

func TestCandidateNodes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		w := newRentalWorld(t, db)
		var own models.Node
		db.W.First(&own, w.offer.NodeID)
		sibling := func(name string, health models.NodeHealth, status models.NodeStatus) int64 {
			n := models.Node{ProviderID: own.ProviderID, DatacenterID: own.DatacenterID, Name: name, GPUModel: own.GPUModel,
				Status: status, Health: health, CreatedAt: w.now}
			if err := db.W.Create(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n.ID
		}
		a := sibling("sib-a", models.NodeHealthy, models.NodeActive)
		sibling("sib-silent", models.NodeSilent, models.NodeActive)
		sibling("sib-draining", models.NodeHealthy, models.NodeDraining)
		r := w.rental(t, db, models.RentalProvisioning, pricing.OnDemand)
		got, err := rentalstore.CandidateNodes(db.W, &w.offer, r.ID)
		if err != nil || len(got) != 2 || got[0] != own.ID || got[1] != a {
			t.Fatalf("candidates %v (%v), want [%d %d]", got, err, own.ID, a)
		}
		// A node the rental has held GPUs on is not tried again.
		if err := rentalstore.AttachRentalGPU(db.W, r.ID, w.gpus[0].ID, own.ID, w.now); err != nil {
			t.Fatal(err)
		}
		if got, _ := rentalstore.CandidateNodes(db.W, &w.offer, r.ID); len(got) != 1 || got[0] != a {
			t.Errorf("candidates after the own node %v, want [%d]", got, a)
		}
	})
}

func TestHealthPassQueries(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		w := newRentalWorld(t, db)
		node := w.offer.NodeID
		// Heard at w.now: silent only for a cut-off after it.
		if ns, err := rentalstore.SilentNodes(w.ctx, db, w.now); err != nil || len(ns) != 0 {
			t.Errorf("silent before the cut-off: %v, %v", ns, err)
		}
		ns, err := rentalstore.SilentNodes(w.ctx, db, w.now.Add(time.Second))
		if err != nil || len(ns) != 1 || ns[0].ID != node {
			t.Fatalf("silent nodes %v (%v)", ns, err)
		}
		if ok, err := rentalstore.MarkNodeSilent(db.W, node, models.NodeNoNVML); err != nil || ok {
			t.Errorf("marked silent from a health it does not have: %v, %v", ok, err)
		}
		if st, err := rentalstore.NodeStatus(w.ctx, db, node); err != nil || st != models.NodeActive {
			t.Errorf("node status %q (%v)", st, err)
		}

		onNode := w.rental(t, db, models.RentalRunning, pricing.OnDemand)
		rentalstore.SetRentalNode(db.W, onNode.ID, node, w.now)
		onGPU := w.rental(t, db, models.RentalRunning, pricing.OnDemand)
		rentalstore.AttachRentalGPU(db.W, onGPU.ID, w.gpus[1].ID, node, w.now)
		if hits, err := rentalstore.RentalsOnFailures(w.ctx, db); err != nil || len(hits) != 0 {
			t.Errorf("failures while healthy: %v, %v", hits, err)
		}
		g, err := rentalstore.GPUByUUID(db.W, w.gpus[1].UUID)
		if err != nil || g.ID != w.gpus[1].ID {
			t.Fatalf("GPU by UUID: %v", err)
		}
		if _, err := rentalstore.GPUByUUID(db.W, "GPU-nope"); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("unknown UUID: %v", err)
		}
		msg := locales.M("event.gpu_reasons", "x", "y")
		if err := rentalstore.MarkGPUFailing(db.W, g.ID, "ecc\nthermal", msg, w.now); err != nil {
			t.Fatal(err)
		}
		g, _ = rentalstore.GPUByUUID(db.W, w.gpus[1].UUID)
		if g.Health != models.GPUFailing || g.Reasons != "ecc\nthermal" || g.ReasonsMsg.IsZero() || g.CheckedAt == nil {
			t.Errorf("failing GPU %+v", g)
		}
		if ok, err := rentalstore.MarkNodeSilent(db.W, node, models.NodeHealthy); err != nil || !ok {
			t.Fatalf("mark silent: %v, %v", ok, err)
		}
		hits, err := rentalstore.RentalsOnFailures(w.ctx, db)
		if err != nil || len(hits) != 2 {
			t.Fatalf("failures %+v (%v), want 2", hits, err)
		}
		byRental := map[int64]rentalstore.RentalOnFailure{hits[0].RentalID: hits[0], hits[1].RentalID: hits[1]}
		if h := byRental[onNode.ID]; h.NodeID != node || h.GPUID != 0 || h.Reasons != "node silent" {
			t.Errorf("silent node hit %+v", h)
		}
		if h := byRental[onGPU.ID]; h.NodeID != node || h.GPUID != g.ID || h.Reasons != "ecc\nthermal" || h.ReasonsMsg.IsZero() {
			t.Errorf("failing GPU hit %+v", h)
		}

		stopping := w.rental(t, db, models.RentalStopping, pricing.OnDemand)
		rentalstore.MoveRental(db.W, stopping.ID, models.RentalStopping, []models.RentalStatus{models.RentalStopping}, rentalstore.RentalMove{StoppedAt: &w.now}, w.now)
		if ids, err := rentalstore.UnconfirmedStops(w.ctx, db, w.now); err != nil || len(ids) != 0 {
			t.Errorf("unconfirmed at the cut-off: %v, %v", ids, err)
		}
		if ids, err := rentalstore.UnconfirmedStops(w.ctx, db, w.now.Add(time.Second)); err != nil || len(ids) != 1 || ids[0] != stopping.ID {
			t.Errorf("unconfirmed stops %v (%v)", ids, err)
		}

		running := w.rental(t, db, models.RentalRunning, pricing.Week)
		stoppedHolding := w.rental(t, db, models.RentalStopped, pricing.Month)
		stoppedFree := w.rental(t, db, models.RentalStopped, pricing.Week)
		for _, r := range []*models.Rental{running, stoppedHolding, stoppedFree, onNode} {
			ledger.SetRentalEndsAt(db.W, r.ID, w.now)
		}
		rentalstore.AttachRentalGPU(db.W, stoppedHolding.ID, w.gpus[0].ID, node, w.now)
		ended, err := rentalstore.EndedTerms(w.ctx, db, w.now)
		if err != nil || len(ended) != 2 {
			t.Fatalf("ended terms %d (%v), want 2", len(ended), err)
		}
		got := map[int64]bool{ended[0].ID: true, ended[1].ID: true}
		if !got[running.ID] || !got[stoppedHolding.ID] {
			t.Errorf("ended terms %v, want %d and %d", got, running.ID, stoppedHolding.ID)
		}
		if ended, _ := rentalstore.EndedTerms(w.ctx, db, w.now.Add(-time.Second)); len(ended) != 0 {
			t.Errorf("ended before their end: %d", len(ended))
		}
	})
}
