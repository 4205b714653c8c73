package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The provider journey with real processes: `suanli serve` (without
// --demo, so no in-process agents) and a separate `suanli agent
// --simulate dgxa100` registered with a token made through the provider
// API. The node turns healthy with its 8 GPUs; an offer for a100-40g-sxm
// is listed and appears in /api/v1/offers; an offer for h100-sxm on the
// same node is refused with a message naming both models.
func TestProviderOnboardsANodeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := buildSuanli(t)
	dir := t.TempDir()
	srv := &suanliServer{t: t, bin: bin, dir: dir, addr: freeAddr(t)}

	// An operator onboards a trusted provider before the server starts.
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("provider-pass-2026\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := srv.admin("create-user", "--email", "ops@tianfu-gpu.example", "--password-file", pw, "--provider", "Tianfu GPU Co", "--simulated")
	if !strings.Contains(out, "verified provider") {
		t.Fatalf("create-user --provider said %q", out)
	}
	token := strings.TrimSpace(srv.admin("token", "--email", "ops@tianfu-gpu.example", "--name", "e2e"))

	startPlainServe(srv)
	base := "http://" + srv.addr

	call := func(method, path string, body any, into any) (int, string) {
		t.Helper()
		st, b, err := srv.api(method, path, token, body)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		if into != nil {
			_ = json.Unmarshal(b, into)
		}
		return st, string(b)
	}

	var dc struct {
		ID   int64  `json:"id"`
		Slug string `json:"slug"`
	}
	if st, body := call("POST", "/api/v1/provider/datacenters", map[string]any{"name": "天府一号机房", "city": "chengdu", "district": "天府新区"}, &dc); st != 201 || dc.ID == 0 || dc.Slug == "" {
		t.Fatalf("create datacentre: %d %s", st, body)
	}
	var node struct {
		ID      int64             `json:"id"`
		Token   string            `json:"token"`
		Install map[string]string `json:"install"`
	}
	if st, body := call("POST", "/api/v1/provider/nodes", map[string]any{"datacenter_id": dc.ID, "name": "gpu-host-1"}, &node); st != 201 || node.Token == "" {
		t.Fatalf("create node: %d %s", st, body)
	}
	if !strings.Contains(node.Install["shell"], "--token "+node.Token) {
		t.Errorf("install command %q does not carry the token", node.Install["shell"])
	}

	// The agent is its own process, as on a provider's host.
	agentLog, err := os.Create(filepath.Join(dir, "agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	agent := exec.Command(bin, "agent", "--server", base, "--token", node.Token, "--simulate", "dgxa100",
		"--state-file", filepath.Join(dir, "agent-state.json"))
	agent.Env = srv.env()
	agent.Stdout, agent.Stderr = agentLog, agentLog
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	agentDone := make(chan struct{})
	go func() { _ = agent.Wait(); agentLog.Close(); close(agentDone) }()
	t.Cleanup(func() {
		_ = agent.Process.Kill()
		<-agentDone
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "agent.log"))
			t.Logf("agent log:\n%s", b)
		}
	})

	type apiGPU struct {
		UUID   string `json:"uuid"`
		Name   string `json:"name"`
		Health string `json:"health"`
	}
	var shown struct {
		Health    string   `json:"health"`
		Simulated bool     `json:"simulated"`
		GPUModel  *string  `json:"gpu_model"`
		GPUs      []apiGPU `json:"gpus"`
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, body := call("GET", fmt.Sprintf("/api/v1/provider/nodes/%d", node.ID), nil, &shown)
		healthy := 0
		for _, g := range shown.GPUs {
			if g.Health == "healthy" && g.UUID != "" && strings.Contains(g.Name, "A100") {
				healthy++
			}
		}
		if st == 200 && shown.Health == "healthy" && healthy == 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node not healthy with 8 GPUs in time: %d %s", st, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !shown.Simulated || shown.GPUModel == nil || *shown.GPUModel != "a100-40g-sxm" {
		t.Errorf("node shows simulated %v, model %v", shown.Simulated, shown.GPUModel)
	}

	var offer struct {
		ID     int64  `json:"id"`
		Status string `json:"status"`
		Listed bool   `json:"listed"`
	}
	st, body := call("POST", "/api/v1/provider/offers", map[string]any{"node_id": node.ID, "gpu": "a100-40g-sxm", "gpus": 8, "price_per_gpu_hour_fen": 950}, &offer)
	if st != 201 || !offer.Listed || offer.Status != "listed" {
		t.Fatalf("a100 offer: %d %s", st, body)
	}
	// The public list reloads from the offers version on its next refresh.
	deadline = time.Now().Add(time.Minute)
	for {
		res, err := http.Get(base + "/api/v1/offers?gpu=a100-40g-sxm")
		if err != nil {
			t.Fatal(err)
		}
		var list []struct {
			ID int64 `json:"id"`
		}
		var wrapped struct {
			Offers []struct {
				ID int64 `json:"id"`
			} `json:"offers"`
		}
		var raw json.RawMessage
		_ = json.NewDecoder(res.Body).Decode(&raw)
		res.Body.Close()
		if json.Unmarshal(raw, &list) != nil {
			_ = json.Unmarshal(raw, &wrapped)
			list = wrapped.Offers
		}
		found := false
		for _, o := range list {
			found = found || o.ID == offer.ID
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("offer %d not in /api/v1/offers: %s", offer.ID, raw)
		}
		time.Sleep(200 * time.Millisecond)
	}

	var refusal struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Param   string `json:"param"`
		} `json:"error"`
	}
	st, body = call("POST", "/api/v1/provider/offers", map[string]any{"node_id": node.ID, "gpu": "h100-sxm", "gpus": 8, "price_per_gpu_hour_fen": 1500}, &refusal)
	if st != http.StatusUnprocessableEntity || refusal.Error.Param != "gpu" ||
		!strings.Contains(refusal.Error.Message, "a100-40g-sxm") || !strings.Contains(refusal.Error.Message, "h100-sxm") ||
		!strings.Contains(refusal.Error.Message, "A100-SXM4-40GB") {
		t.Errorf("h100 offer on the A100 node: %d %s", st, body)
	}
	srv.stop()
}

// startPlainServe is suanliServer.start without --demo: no demo market
// and no in-process agents.
func startPlainServe(s *suanliServer) {
	t := s.t
	t.Helper()
	logf, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	s.starts++
	s.cmd = exec.Command(s.bin, "serve", "--addr", s.addr, "--data-dir", s.dir, "--base-url", "http://"+s.addr)
	s.cmd.Env = s.env()
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	s.exited = exited
	go func() { exited <- s.cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		if s.cmd != nil && s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			s.dumpLog()
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			s.cmd = nil
			t.Fatalf("serve exited while starting: %v", err)
		default:
		}
		if res, err := http.Get("http://" + s.addr + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("serve not ready within 60s")
}
