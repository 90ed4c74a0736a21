package demotools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/lionbus/lionbus/examples/tools/demotools"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/tools"
)

// The example services answer their tools over NATS, with their errors as
// values.
func TestExampleServices(t *testing.T) {
	t.Parallel()
	srv := bustest.NewServer(t)
	nc, js := bustest.Connect(t, srv)
	ctx := bustest.Ctx(t)
	notes, err := demotools.Notes(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []tools.ServiceConfig{demotools.Calculator("lion"), notes} {
		svc, err := tools.Serve(ctx, nc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	}
	inv, err := tools.NewInvoker(nc, tools.InvokerConfig{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool string
		args map[string]any
		want string // the outcome as JSON
	}{
		{"calculate", map[string]any{"op": "add", "a": 2, "b": 3}, `{"output":5}`},
		{"calculate", map[string]any{"op": "div", "a": 1, "b": 8}, `{"output":0.125}`},
		{"calculate", map[string]any{"op": "div", "a": 1, "b": 0}, `{"error":{"code":"division_by_zero","message":"cannot divide 1 by zero"}}`},
		{"to_celsius", map[string]any{"fahrenheit": 212}, `{"output":{"celsius":100}}`},
		{"note_get", map[string]any{"key": "todo"}, `{"error":{"code":"not_found","message":"no note under \"todo\""}}`},
		{"note_put", map[string]any{"key": "todo", "text": "write the docs"}, `{"output":{"key":"todo","words":3}}`},
		{"note_get", map[string]any{"key": "todo"}, `{"output":{"key":"todo","text":"write the docs"}}`},
		{"note_list", nil, `{"output":["todo"]}`},
	}
	for i, tt := range tests {
		out, err := inv.Invoke(ctx, ops.ToolInvocation{Function: tt.tool, Arguments: tt.args, IdempotencyKey: fmt.Sprint("demo/tool/", i)})
		if err != nil {
			t.Fatalf("%s: %v", tt.tool, err)
		}
		if got, _ := json.Marshal(out); string(got) != tt.want {
			t.Errorf("%s %v = %s, want %s", tt.tool, tt.args, got, tt.want)
		}
	}
	out, err := inv.Invoke(ctx, ops.ToolInvocation{Function: "calculate", Arguments: map[string]any{"op": "pow", "a": 1, "b": 2}, IdempotencyKey: "demo/bad"})
	if err != nil || out.Error == nil || out.Error.Code != tools.CodeInvalidArguments {
		t.Fatalf("calculate pow = %+v, %v; want invalid_arguments", out, err)
	}
}
