package main

import (
	"context"
	"sync"
	"testing"

	"suanli/dbtest"
	"suanli/demo"
	"suanli/models"
	"suanli/rentals"
)

// A demo node that the demo provider removed is not brought back by the
// next start: no agent, no new credential.
func TestDemoAgentsSkipRemovedNodes(t *testing.T) {
	db := dbtest.SQLite(t)
	ctx := context.Background()
	if err := demo.SeedDemo(ctx, db); err != nil {
		t.Fatal(err)
	}
	var demoNodes []models.Node
	if err := db.R.Where("demo").Order("id").Find(&demoNodes).Error; err != nil || len(demoNodes) < 2 {
		t.Fatalf("demo nodes: %d %v", len(demoNodes), err)
	}
	gone := demoNodes[0].ID
	if err := db.W.Model(&models.Node{}).Where("id = ?", gone).
		Updates(map[string]any{"status": models.NodeRemoved, "cred_hash": nil, "reg_token_hash": nil}).Error; err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	n, err := startDemoAgents(actx, &wg, db, &rentals.Service{DB: db}, "http://127.0.0.1:1")
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if n != len(demoNodes)-1 {
		t.Errorf("%d demo agents started, want %d (every demo node but the removed one)", n, len(demoNodes)-1)
	}
	var got models.Node
	db.R.First(&got, gone)
	if got.CredHash != nil {
		t.Error("the removed demo node was given a credential again")
	}
}
