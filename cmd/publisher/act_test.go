package main

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

// startToolWorker starts an embedded server and a worker serving tools,
// and returns the server's URL.
func startToolWorker(t *testing.T, tools ops.Invoker) string {
	t.Helper()
	b := bustest.New(t, provision.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc, err := bus.Start(ctx, bus.Config{
		Connect:   client.ConnectConfig{URL: b.Srv.ClientURL(), Name: t.Name()},
		Provision: b.Cfg,
		Worker:    worker.Config{Name: "test", FetchWait: 200 * time.Millisecond},
		Tools:     tools,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = svc.Stop(ctx)
		svc.Close()
	})
	return b.Srv.ClientURL()
}

func TestPublisher_act(t *testing.T) {
	url := startToolWorker(t, opstest.NewToolFuncs(map[string]opstest.ToolFunc{
		"add": func(_ context.Context, a map[string]any) (any, error) {
			x, _ := a["x"].(float64)
			y, _ := a["y"].(float64)
			return x + y, nil
		},
		"fails": func(context.Context, map[string]any) (any, error) {
			return nil, &ops.ToolError{Code: "bad_input", Message: "x is required"}
		},
	}))
	n := []string{"--nats", url}
	steps := []step{
		{name: "create", args: append(n, "branch", "create", "--id", "t1", "--tool", "add", "--tool", "fails"),
			wantOut: []string{"tools:       add, fails"}},
		{name: "calls", args: append(n, "act", "t1", "--call", `add={"x": 2, "y": 3}`, "--call", "fails", "--call", "rm"),
			wantOut: []string{
				`add {"x":2,"y":3} → 5` + "\n",
				"fails {} → error bad_input: x is required\n",
				`rm {} → error denied: tool "rm" is not allowed on this branch` + "\n",
			}},
		{name: "requests then calls, sequential, as JSON", args: append(n, "--json", "act", "--branch", "t1", "--strategy", "sequential",
			"--requests", `[{"id": "c1", "function": "add", "arguments": {"x": 1}}]`, "--call", `add={"y": 1}`),
			wantOut: []string{`"id": "c1"`, `"output": 1`, `"arguments": {`}},
		{name: "data from stdin", stdin: `{"action_requests": [{"function": "add", "arguments": {"x": 4}}]}`,
			args: append(n, "act", "t1", "--data", "-"), wantOut: []string{`add {"x":4} → 4`}},
		{name: "errors not suppressed", args: append(n, "act", "t1", "--call", "fails", "--suppress-errors=false"),
			wantCode: exitFailed, wantErr: []string{"error: action_failed: action 0 (fails) failed: bad_input"}},
		{name: "unknown strategy", args: append(n, "act", "t1", "--call", "add", "--strategy", "parallel"),
			wantCode: exitFailed, wantErr: []string{"error: invalid_request:", "strategy"}},
		{name: "no call", args: append(n, "act", "t1"), wantCode: exitUsage, wantErr: []string{"act needs a call"}},
		{name: "arguments not an object", args: append(n, "act", "t1", "--call", "add=[1]"),
			wantCode: exitUsage, wantErr: []string{"--call add: arguments must be a JSON object"}},
		{name: "no branch", args: append(n, "act", "--call", "add"), wantCode: exitUsage, wantErr: []string{"which branch?"}},
		{name: "history", args: append(n, "branch", "history", "t1"),
			wantOutRE: `(?s)branch\.messages.*action +add.*action +add.*action +fails.*action +fails.*action +rm`},
	}
	for _, s := range steps {
		code, stdout, stderr := call(t, s.stdin, s.args...)
		s.check(t, code, stdout, stderr)
	}
}

func TestActionRequests(t *testing.T) {
	tests := []struct {
		name     string
		had      any
		requests string
		calls    []string
		want     string
		wantErr  bool
	}{
		{"calls", nil, "", []string{"now", `add={"x":1}`, `eq={"s":"a=b"}`},
			`[{"function":"now"},{"arguments":{"x":1},"function":"add"},{"arguments":{"s":"a=b"},"function":"eq"}]`, false},
		{"data, requests, calls in that order", []any{map[string]any{"function": "a"}}, `[{"function":"b"}]`, []string{"c"},
			`[{"function":"a"},{"function":"b"},{"function":"c"}]`, false},
		{"requests not an array", nil, `{"function":"b"}`, nil, "", true},
		{"data not an array", "x", "", nil, "", true},
		{"empty name", nil, "", []string{`={"x":1}`}, "", true},
		{"null arguments", nil, "", []string{"add=null"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := actionRequests(tt.had, tt.requests, tt.calls)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			b, _ := json.Marshal(got)
			var g, w any
			_ = json.Unmarshal(b, &g)
			_ = json.Unmarshal([]byte(tt.want), &w)
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("got %s, want %s", b, tt.want)
			}
		})
	}
}
