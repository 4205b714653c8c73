package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"suanli/agent"
	"suanli/audit"
	"suanli/models"
)

// An operator clears a GPU's critical XIDs with the admin command: it
// queues a clear_xids task for the node's agent naming exactly that GPU,
// and writes an audit entry saying who (the system: the console), which
// GPU and why.
func TestAdminClearXIDsQueuesATaskAndAudits(t *testing.T) {
	withoutOwnSettings(t)
	ctx := context.Background()
	dir := t.TempDir()
	if err := seed(ctx, []string{"--data-dir", dir, "--demo"}); err != nil {
		t.Fatal(err)
	}
	db, err := models.Open(ctx, "sqlite", filepath.Join(dir, "suanli.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var g models.GPU
	if err := db.R.Order("id").First(&g).Error; err != nil {
		t.Fatal(err)
	}
	node := func(id int64) string { b, _ := json.Marshal(id); return string(b) }

	for _, bad := range [][]string{
		{"--node", node(g.NodeID), "--gpu", g.UUID},                                  // no reason
		{"--node", node(g.NodeID), "--reason", "reset"},                              // no GPU
		{"--gpu", g.UUID, "--reason", "reset"},                                       // no node
		{"--node", node(g.NodeID), "--gpu", "GPU-not-on-this-node", "--reason", "x"}, // another node's or none
	} {
		if err := admin(ctx, append([]string{"clear-xids", "--data-dir", dir}, bad...)); err == nil {
			t.Errorf("clear-xids %v accepted", bad)
		}
	}
	if err := admin(ctx, []string{"clear-xids", "--data-dir", dir, "--node", node(g.NodeID), "--gpu", g.UUID,
		"--reason", "GPU reset after XID 48"}); err != nil {
		t.Fatal(err)
	}
	var tasks []models.AgentTask
	if err := db.R.Where("node_id = ? AND kind = ?", g.NodeID, agent.TaskClearXIDs).Find(&tasks).Error; err != nil || len(tasks) != 1 {
		t.Fatalf("clear_xids tasks: %+v %v", tasks, err)
	}
	var task agent.Task
	if err := json.Unmarshal([]byte(tasks[0].Payload), &task); err != nil || task.ID != tasks[0].ID || len(task.GPUUUIDs) != 1 || task.GPUUUIDs[0] != g.UUID {
		t.Errorf("task payload %s (%v)", tasks[0].Payload, err)
	}
	entries, _, err := db.AuditLog(ctx, models.AuditFilter{Action: audit.GPUXIDsCleared})
	if err != nil || len(entries) != 1 {
		t.Fatalf("audit entries: %+v %v", entries, err)
	}
	e := entries[0]
	if e.ActorID != nil || e.Subject != "node:"+node(g.NodeID) || !strings.Contains(e.Detail, g.UUID) || !strings.Contains(e.Detail, "GPU reset after XID 48") {
		t.Errorf("audit entry %+v", e)
	}
}
