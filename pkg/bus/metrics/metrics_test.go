package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lionbus/lionbus/pkg/bus/metrics"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	opsbudget "github.com/lionbus/lionbus/pkg/ops/budget"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

func TestHandler_counts_outcomes_by_verb(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler(worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		switch req.ID {
		case "bad":
			return nil, ops.Errorf(ops.CodeInvalidRequest, "bad")
		case "odd":
			return nil, errors.New("not an ops.Error")
		}
		return &ops.Result{}, nil
	}))
	for _, r := range []ops.Request{
		{ID: "a", Verb: "communicate", Attempt: 1},
		{ID: "b", Verb: "communicate", Attempt: 2},
		{ID: "bad", Verb: "communicate", Attempt: 1},
		{ID: "odd", Verb: "op.anything", Attempt: 1},
		{ID: "c", Verb: "op.other", Attempt: 1},
	} {
		_, _ = h.Do(context.Background(), r)
	}
	m.DeadLettered(ops.CodeUnavailable)
	m.DeadLettered(ops.CodeUnavailable)
	call := ops.Call{Model: history.ModelRef{Provider: "openai", Model: "m"}}
	_, done := m.ModelCall(context.Background(), call)
	done(&ops.Completion{Usage: &ops.Usage{InputTokens: 7, OutputTokens: 3}}, nil)
	_, done = m.ModelCall(context.Background(), call)
	done(nil, errors.New("overloaded"))
	for _, tc := range []struct {
		out ops.ToolOutcome
		err error
	}{{ops.ToolOutcome{Output: 1}, nil}, {ops.ToolOutcome{Error: &ops.ToolError{Code: "bad"}}, nil}, {ops.ToolOutcome{}, context.DeadlineExceeded}, {ops.ToolOutcome{}, ops.ErrNoTool}} {
		_, done := m.ToolCall(context.Background(), ops.ToolInvocation{Function: "add"})
		done(tc.out, tc.err)
	}
	tests := []struct {
		metric string
		got    float64
		want   float64
	}{
		{"ok communicate", counter(t, reg, "lionbus_requests_total", map[string]string{"verb": "communicate", "code": "ok"}), 2},
		{"invalid communicate", counter(t, reg, "lionbus_requests_total", map[string]string{"verb": "communicate", "code": "invalid_request"}), 1},
		{"named operations share one label", counter(t, reg, "lionbus_requests_total", map[string]string{"verb": "op", "code": "ok"}), 1},
		{"a plain error counts as internal", counter(t, reg, "lionbus_requests_total", map[string]string{"verb": "op", "code": "internal"}), 1},
		{"redeliveries", counter(t, reg, "lionbus_redeliveries_total", map[string]string{"verb": "communicate"}), 1},
		{"dead letters", counter(t, reg, "lionbus_dead_letters_total", map[string]string{"reason": "unavailable"}), 2},
		{"input tokens", counter(t, reg, "lionbus_model_tokens_total", map[string]string{"provider": "openai", "direction": "input"}), 7},
		{"output tokens", counter(t, reg, "lionbus_model_tokens_total", map[string]string{"provider": "openai", "direction": "output"}), 3},
		{"model calls ok", histCount(t, reg, "lionbus_model_call_duration_seconds", map[string]string{"provider": "openai", "outcome": "ok"}), 1},
		{"model calls failed", histCount(t, reg, "lionbus_model_call_duration_seconds", map[string]string{"provider": "openai", "outcome": "error"}), 1},
		{"tool ok", histCount(t, reg, "lionbus_tool_call_duration_seconds", map[string]string{"tool": "add", "outcome": "ok"}), 1},
		{"tool error", histCount(t, reg, "lionbus_tool_call_duration_seconds", map[string]string{"tool": "add", "outcome": "tool_error"}), 1},
		{"tool timeout", histCount(t, reg, "lionbus_tool_call_duration_seconds", map[string]string{"tool": "add", "outcome": "timeout"}), 1},
		{"tool absent", histCount(t, reg, "lionbus_tool_call_duration_seconds", map[string]string{"tool": "add", "outcome": "no_service"}), 1},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %v, want %v", tt.metric, tt.got, tt.want)
		}
	}
}

func TestMux_health_and_readiness(t *testing.T) {
	reg := prometheus.NewRegistry()
	notReady := errors.New("consumer gone")
	ready := func(context.Context) error { return notReady }
	srv := httptest.NewServer(metrics.NewMux(reg, func(ctx context.Context) error { return ready(ctx) }))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz %d", code)
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "consumer gone") {
		t.Fatalf("/readyz when not ready: %d %q", code, body)
	}
	ready = func(context.Context) error { return nil }
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz when ready: %d", code)
	}
	if code, _ := get("/metrics"); code != http.StatusOK {
		t.Fatalf("/metrics %d", code)
	}
}

func TestBudget_records_wait_tokens_cost_and_pauses(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.Budget(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Call(opsbudget.CallReport{Key: "openai:m", Waited: 2 * time.Second, Used: 42, CostUSD: 0.5})
	m.Call(opsbudget.CallReport{Key: "openai:m", Used: 8, CostUSD: 0.25})
	m.Paused("openai:m")
	m.Members(3)
	lab := map[string]string{"model": "openai:m"}
	if got := histCount(t, reg, "lionbus_budget_wait_seconds", lab); got != 2 {
		t.Errorf("wait observations %v, want 2", got)
	}
	if got := counter(t, reg, "lionbus_budget_tokens_total", lab); got != 50 {
		t.Errorf("tokens %v, want 50", got)
	}
	if got := counter(t, reg, "lionbus_model_cost_usd_total", lab); got != 0.75 {
		t.Errorf("cost %v, want 0.75", got)
	}
	if got := counter(t, reg, "lionbus_budget_pauses_total", lab); got != 1 {
		t.Errorf("pauses %v, want 1", got)
	}
	if got := gauge(t, reg, "lionbus_budget_members", nil); got != 3 {
		t.Errorf("members %v, want 3", got)
	}
}

func TestBudget_registers_beside_the_worker_metrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.Budget(reg); err != nil {
		t.Fatalf("budget metrics beside the worker's: %v", err)
	}
}
