package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// `work --metrics-addr` serves /healthz and /metrics with the jobs the
// process works (the refresh job runs on start), and stops with the worker.
func TestWorkServesJobMetrics(t *testing.T) {
	withoutOwnSettings(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- work(ctx, []string{"--data-dir", t.TempDir(), "--metrics-addr", addr}) }()
	var body string
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(body, `suanli_jobs_total{kind="refresh_offer_availability",outcome="completed"}`) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		res, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		body = string(b)
	}
	if !strings.Contains(body, `suanli_jobs_total{kind="refresh_offer_availability",outcome="completed"}`) || !strings.Contains(body, "go_goroutines") {
		t.Errorf("work's /metrics has no completed refresh job:\n%s", body)
	}
	if res, err := http.Get("http://" + addr + "/healthz"); err != nil || res.StatusCode != 200 {
		t.Errorf("work's /healthz: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("work: %v", err)
	}
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Error("the metrics listener is still open after work returned")
	}
}
