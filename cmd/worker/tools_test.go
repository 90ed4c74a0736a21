package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/examples/tools/demotools"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/tools"
)

// The worker calls the registry's tools over NATS, within --tool-timeouts,
// and denies the tools of --tools-deny on every branch (0022-D4-05).
func TestRun_calls_registry_tools_with_the_policy_of_its_flags(t *testing.T) {
	srv := bustest.NewServer(t)
	nc, _ := bustest.Connect(t, srv)
	calc, err := tools.Serve(bustest.Ctx(t), nc, demotools.Calculator("lion"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = calc.Stop(context.Background()) })
	stdout, stderr, _ := runWorker(t, "--nats", srv.ClientURL(), "--log-level", "disabled",
		"--tools-deny", "to_celsius", "--tool-timeouts", "calculate=5s")
	waitFor(t, 30*time.Second, "the worker to start", func() bool {
		return strings.Contains(stdout.String(), "serving prefix") || strings.Contains(stderr.String(), "worker:")
	})
	cl, err := client.New(nc, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r, err := cl.Do(ctx, "branch.create", "", map[string]any{"branch_id": "calc", "tools": []string{"calculate", "to_celsius", "gone"}}); err != nil || r.Err() != nil {
		t.Fatalf("branch.create: %v %v", err, r.Err())
	}
	r, err := cl.Do(ctx, "act", "calc", map[string]any{"action_requests": []map[string]any{
		{"function": "calculate", "arguments": map[string]any{"op": "div", "a": 1, "b": 4}},
		{"function": "calculate", "arguments": map[string]any{"op": "div", "a": 1, "b": 0}},
		{"function": "to_celsius", "arguments": map[string]any{"fahrenheit": 50}},
		{"function": "gone"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Result()
	if err != nil {
		t.Fatal(err)
	}
	var got []ops.ActionResponse
	if err := json.Unmarshal(res.Value, &got); err != nil || len(got) != 4 {
		t.Fatalf("act answered %s (%v)", res.Value, err)
	}
	want := []struct{ output, code, msg string }{
		{output: "0.25"},
		{code: "division_by_zero", msg: "cannot divide 1 by zero"},
		{code: ops.ActionErrorDenied, msg: `tool "to_celsius" is denied by the worker's policy`},
		{code: ops.ActionErrorNoTool, msg: "not in the registry"},
	}
	for i, w := range want {
		if w.code == "" {
			if out, _ := json.Marshal(got[i].Output); string(out) != w.output || got[i].Error != nil {
				t.Errorf("call %d answered %s %+v, want %s", i, out, got[i].Error, w.output)
			}
			continue
		}
		if e := got[i].Error; e == nil || e.Code != w.code || !strings.Contains(e.Message, w.msg) {
			t.Errorf("call %d answered %+v, want %s: %s", i, e, w.code, w.msg)
		}
	}
}
