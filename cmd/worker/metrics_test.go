package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
)

// TestRun_metrics_and_health: with --metrics-addr the worker serves
// /healthz, /readyz and /metrics, whose request counters follow what it
// answered.
func TestRun_metrics_and_health(t *testing.T) {
	srv := bustest.NewServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	stdout, stderr, _ := runWorker(t, "--nats", srv.ClientURL(), "--metrics-addr", addr,
		"--log-format", "json", "--log-level", "info", "--name", "m1")
	waitFor(t, 30*time.Second, "the worker to start", func() bool {
		return strings.Contains(stdout.String(), "serving prefix") || strings.Contains(stderr.String(), "worker:")
	})
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz %d", code)
	}
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz %d: %s", code, body)
	}

	nc, _ := bustest.Connect(t, srv)
	cl, err := client.New(nc, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cl.Do(ctx, "branch.create", "", map[string]any{"branch_id": "m", "chat_model": "scripted:echo"}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := cl.Do(ctx, "communicate", "m", map[string]any{"instruction": "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.Do(ctx, "communicate", "missing", map[string]any{"instruction": "hi"}); err != nil {
		t.Fatal(err)
	}
	_, body := get("/metrics")
	for _, want := range []string{
		`lionbus_requests_total{code="ok",verb="communicate"} 3`,
		`lionbus_requests_total{code="branch_not_found",verb="communicate"} 1`,
		`lionbus_requests_total{code="ok",verb="branch.create"} 1`,
		`lionbus_request_duration_seconds_count{verb="communicate"} 4`,
		`lionbus_model_call_duration_seconds_count{outcome="ok",provider="scripted"} 3`,
		`lionbus_requests_in_flight 0`,
		`lionbus_store_append_conflicts_total 0`,
		`lionbus_store_rebuilds_total`,
		`lionbus_store_cache_misses_total`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestRun_demo_metrics: after the demo, /metrics counts what it did: its
// requests by verb, its model calls and their tokens, its tool calls.
func TestRun_demo_metrics(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	stdout, stderr, _ := runWorker(t, "--demo", "--port", "-1", "--metrics-addr", addr, "--log-level", "disabled", "--store-dir", t.TempDir())
	waitFor(t, 90*time.Second, "the demo to finish", func() bool {
		return strings.Contains(stdout.String(), "Ctrl-C to stop.") || strings.Contains(stderr.String(), "worker:")
	})
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	body := string(raw)
	for _, want := range []string{
		// 3 in the conversation, 1 answered after a redelivery, 64 on
		// the long branch.
		`lionbus_requests_total{code="ok",verb="communicate"} 68`,
		`lionbus_requests_total{code="ok",verb="act"} 1`,
		`lionbus_requests_total{code="ok",verb="operate"} 1`,
		`lionbus_model_call_duration_seconds_count{outcome="ok",provider="scripted"} 69`,
		`lionbus_model_call_duration_seconds_count{outcome="error",provider="scripted"} 1`,
		`lionbus_model_tokens_total{direction="input",provider="scripted"} 350`,
		`lionbus_model_tokens_total{direction="output",provider="scripted"} 108`,
		`lionbus_tool_call_duration_seconds_count{outcome="ok",tool="calculate"} 1`,
		`lionbus_tool_call_duration_seconds_count{outcome="ok",tool="note_get"} 1`,
		// The demo's second part: a model that fails once, a malformed
		// request, a conversation of 64 exchanges.
		`lionbus_redeliveries_total{verb="communicate"} 1`,
		`lionbus_dead_letters_total{reason="malformed_event"} 1`,
		`lionbus_store_snapshots_total 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics after the demo lacks %s", want)
		}
	}
}
