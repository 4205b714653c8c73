package fleet_test

import (
	"context"
	"errors"
	"testing"

	"suanli/accounts"
	"suanli/agent"
	"suanli/apperr"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/fleet"
	"suanli/gpu"
	"suanli/models"
	"suanli/providers"
)

// simHost reads two simulated H100 SXM through go-nvml's mock server, as
// `suanli agent --simulate h100-sxm` would; real claims the host is not.
func simHost(t *testing.T, real bool) gpu.Host {
	t.Helper()
	sim, err := gpu.SimulateCatalog("h100-sxm", 2)
	if err != nil {
		t.Fatal(err)
	}
	r, err := gpu.Open(sim, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h := r.Read()
	if real {
		h.Simulated, h.Model = false, ""
	}
	return h
}

// newNode makes a provider (simulated by the platform or not), its
// datacentre and a node, and returns the node's registration token.
func newNode(t *testing.T, db *models.DB, email string, simulated bool) (*models.Node, string) {
	t.Helper()
	ctx := context.Background()
	u, err := (&accounts.Service{DB: db}).CreateUser(ctx, email, "correct horse battery", "Owner", false)
	if err != nil {
		t.Fatal(err)
	}
	p := &providers.Service{DB: db}
	create := p.CreateVerified
	if simulated {
		create = p.CreateSimulated
	}
	acc, err := create(ctx, u, "Provider "+email)
	if err != nil {
		t.Fatal(err)
	}
	if acc.Provider.Simulated != simulated {
		t.Fatalf("provider simulated %v, want %v", acc.Provider.Simulated, simulated)
	}
	dc, err := p.CreateDatacenter(ctx, u, acc.Provider.ID, providers.DatacenterInput{NameZH: "机房", NameEN: "DC", City: "chengdu"})
	if err != nil {
		t.Fatal(err)
	}
	n, tok, err := p.AddNode(ctx, u, acc.Provider.ID, providers.NodeInput{DatacenterID: dc.ID, Name: "node-1"})
	if err != nil {
		t.Fatal(err)
	}
	return n, tok
}

func nodeSimulated(t *testing.T, db *models.DB, id int64) bool {
	t.Helper()
	var n models.Node
	if err := db.R.First(&n, id).Error; err != nil {
		t.Fatal(err)
	}
	return n.Simulated
}

// Simulation is the platform's decision: a simulated agent of a real
// provider is refused at registration (its token stays unused) and after
// it; a test provider's node is simulated whatever its agent says, and so
// are the demo's.
func TestSimulationIsThePlatformsDecision(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		f := &fleet.Fleet{DB: db, Hub: fleet.NewHub()}

		real, tok := newNode(t, db, "real@provider.example", false)
		_, err := f.Heartbeat(ctx, tok, agent.Heartbeat{AgentVersion: "test", Host: simHost(t, false)})
		if !errors.Is(err, fleet.ErrSimulatedRefused) || apperr.Code(err) != apperr.EFORBIDDEN {
			t.Fatalf("a simulated agent of a real provider at registration: %v, want ErrSimulatedRefused", err)
		}
		// The refusal used nothing up: the same token registers the real agent.
		reply, err := f.Heartbeat(ctx, tok, agent.Heartbeat{AgentVersion: "test", Host: simHost(t, true)})
		if err != nil || reply.Credential == "" {
			t.Fatalf("the real agent's registration after the refusal: %+v %v", reply, err)
		}
		if nodeSimulated(t, db, real.ID) {
			t.Error("a real provider's node is simulated")
		}
		// And after registration too.
		if _, err := f.Heartbeat(ctx, reply.Credential, agent.Heartbeat{AgentVersion: "test", Host: simHost(t, false)}); !errors.Is(err, fleet.ErrSimulatedRefused) {
			t.Fatalf("a simulated heartbeat after registration: %v, want ErrSimulatedRefused", err)
		}
		if nodeSimulated(t, db, real.ID) {
			t.Error("the refused heartbeat made the node simulated")
		}

		// A test provider's node is simulated even when its agent says not.
		test, tok := newNode(t, db, "test@provider.example", true)
		if _, err := f.Heartbeat(ctx, tok, agent.Heartbeat{AgentVersion: "test", Host: simHost(t, true)}); err != nil {
			t.Fatal(err)
		}
		if !nodeSimulated(t, db, test.ID) {
			t.Error("a test provider's node whose agent claims real GPUs is not simulated")
		}

		// The demo's providers and nodes are simulated from the seed on.
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := db.R.Model(&models.Provider{}).Where("demo AND NOT simulated").Count(&n).Error; err != nil || n != 0 {
			t.Errorf("%d demo providers not simulated (%v)", n, err)
		}
		if err := db.R.Model(&models.Node{}).Where("demo AND NOT simulated").Count(&n).Error; err != nil || n != 0 {
			t.Errorf("%d demo nodes not simulated (%v)", n, err)
		}
	})
}
