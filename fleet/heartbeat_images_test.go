package fleet_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm/logger"

	"suanli/agent"
	"suanli/catalog"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/fleet"
	"suanli/gpu"
	"suanli/models"
)

// sqlLog keeps the SQL of every statement gorm runs.
type sqlLog struct {
	logger.Interface
	mu   sync.Mutex
	stmt []string
}

func (l *sqlLog) LogMode(logger.LogLevel) logger.Interface { return l }

func (l *sqlLog) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	s, _ := fc()
	l.mu.Lock()
	l.stmt = append(l.stmt, s)
	l.mu.Unlock()
}

// take returns the statements since the last take.
func (l *sqlLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.stmt
	l.stmt = nil
	return out
}

func mentioning(stmts []string, words ...string) []string {
	var out []string
	for _, s := range stmts {
		for _, w := range words {
			if strings.Contains(s, w) {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// A heartbeat stores the node's volume root and CUDA driver version, and
// its images when the list changed: the same list again writes nothing
// more than a heartbeat without images (heartbeats come every few seconds
// per node), a changed list replaces the stored one.
func TestHeartbeatRecordsImagesOnlyWhenTheyChange(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		// A fixed clock: no GPU reading goes stale between the beats.
		at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		db.Now = func() time.Time { return at }
		var n models.Node
		if err := db.R.Where("demo").Order("id").First(&n).Error; err != nil {
			t.Fatal(err)
		}
		var gs []models.GPU
		if err := db.R.Where("node_id = ?", n.ID).Order("idx").Find(&gs).Error; err != nil || len(gs) == 0 {
			t.Fatalf("the node's GPUs: %d %v", len(gs), err)
		}
		host := gpu.Host{Simulated: true, CUDADriverVersion: "12.4", DriverVersion: "550.54.15"}
		for _, g := range gs {
			host.GPUs = append(host.GPUs, gpu.Info{Index: g.Idx, UUID: g.UUID, Name: "NVIDIA " + catalog.GPUName(n.GPUModel),
				PCIBusID: g.PCIBusID, MemoryTotalMiB: uint64(g.MemoryMiB), Health: gpu.Verdict{Healthy: true}})
		}
		f := &fleet.Fleet{DB: db, Hub: fleet.NewHub()}
		cred, err := f.IssueCredential(ctx, n.ID)
		if err != nil {
			t.Fatal(err)
		}
		log := &sqlLog{Interface: logger.Discard}
		db.W.Config.Logger = log
		beat := func(imgs ...agent.LocalImage) []string {
			t.Helper()
			log.take()
			if _, err := f.Heartbeat(ctx, cred, agent.Heartbeat{AgentVersion: "test", Launcher: "docker", Host: host,
				VolumeRoot: "/mnt/shared/volumes", Images: imgs}); err != nil {
				t.Fatal(err)
			}
			return log.take()
		}
		sshd := agent.LocalImage{Refs: []string{"suanli-test/sshd:bookworm"}, ID: "sha256:aa", SizeBytes: 220_000_000}
		cuda := agent.LocalImage{Refs: []string{"nvidia/cuda:12.4.1-runtime-ubuntu22.04", "cuda:local"}, ID: "sha256:bb", SizeBytes: 2_000_000_000, CUDAVersion: "12.4.1"}
		dangling := agent.LocalImage{Refs: []string{"<none>:<none>"}, ID: "sha256:cc"}

		first := beat(sshd, cuda, dangling)
		if len(mentioning(first, "node_images")) == 0 {
			t.Fatalf("a new list was not stored: %q", first)
		}
		stored, err := models.NodeImagesOf(db.R, []int64{n.ID})
		if err != nil || len(stored) != 3 || stored[0].Ref != "cuda:local" || stored[1].CUDAVersion != "12.4.1" || stored[2].SizeBytes != 220_000_000 {
			t.Fatalf("stored: %+v %v", stored, err)
		}
		var back models.Node
		if err := db.R.First(&back, n.ID).Error; err != nil || back.VolumeRoot != "/mnt/shared/volumes" || back.CUDADriverVersion != "12.4" || back.ImagesHash == "" {
			t.Errorf("node: root %q cuda %q hash %q %v", back.VolumeRoot, back.CUDADriverVersion, back.ImagesHash, err)
		}

		// The same list, in another order: nothing about images is written.
		again := beat(cuda, sshd)
		if w := mentioning(again, "node_images", "images_hash"); len(w) > 0 {
			t.Errorf("an unchanged list was written again: %q", w)
		}
		plainCount := len(again)
		t.Logf("an unchanged heartbeat: %d statements", plainCount)

		// A changed list replaces the stored one; none clears it.
		beat(sshd)
		if stored, _ := models.NodeImagesOf(db.R, []int64{n.ID}); len(stored) != 1 || stored[0].Ref != "suanli-test/sshd:bookworm" {
			t.Errorf("after a change: %+v", stored)
		}
		if again := beat(sshd); len(again) != plainCount {
			t.Errorf("unchanged heartbeat: %d statements, then %d", plainCount, len(again))
		}
		beat()
		if stored, _ := models.NodeImagesOf(db.R, []int64{n.ID}); len(stored) != 0 {
			t.Errorf("after an empty list: %+v", stored)
		}
		if err := db.R.First(&back, n.ID).Error; err != nil || back.ImagesHash != "" {
			t.Errorf("hash after an empty list: %q %v", back.ImagesHash, err)
		}
		// A root that is not an absolute path is not stored.
		log.take()
		if _, err := f.Heartbeat(ctx, cred, agent.Heartbeat{Host: host, VolumeRoot: "relative/dir"}); err != nil {
			t.Fatal(err)
		}
		if err := db.R.First(&back, n.ID).Error; err != nil || back.VolumeRoot != "" {
			t.Errorf("relative volume root stored: %q %v", back.VolumeRoot, err)
		}
	})
}
