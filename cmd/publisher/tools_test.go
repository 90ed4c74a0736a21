package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/tools/toolschema"
)

func TestPublisher_tools(t *testing.T) {
	srv := bustest.NewServer(t)
	nc, _ := bustest.Connect(t, srv)
	svc, err := tools.Serve(bustest.Ctx(t), nc, tools.ServiceConfig{Compile: toolschema.Compile, Name: "math", Version: "2.0.0", Tools: []tools.Tool{{
		Name: "add", Description: "Adds x and y.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]}`),
		Handler: func(_ context.Context, a map[string]any) (any, error) {
			return a["x"].(float64) + a["y"].(float64), nil
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = svc.Stop(ctx)
	})
	n := []string{"--nats", srv.ClientURL(), "--timeout", "5s"}
	steps := []step{
		{name: "list", args: append(n, "tools", "list"),
			wantOutRE: `NAME +VERSION +SUBJECT +DESCRIPTION\nadd +2\.0\.0 +lion\.tool\.add +Adds x and y\.\n`},
		{name: "list as JSON", args: append(n, "--json", "tools", "list"), wantOut: []string{`"name":"add"`, `"subject":"lion.tool.add"`}},
		{name: "show", args: append(n, "tools", "show", "add"), wantOut: []string{`"parameters": {`, `"required": [`}},
		{name: "show unknown", args: append(n, "tools", "show", "sub"), wantCode: exitFailed, wantErr: []string{"no such tool"}},
		{name: "call", args: append(n, "tools", "call", "add", "--args", `{"x": 2, "y": 3}`), wantOut: []string{"5\n"}},
		{name: "call with arguments from stdin", stdin: `{"x": 1, "y": 1}`, args: append(n, "tools", "call", "add", "--args", "-"), wantOut: []string{"2\n"}},
		{name: "call with invalid arguments", args: append(n, "tools", "call", "add", "--args", `{"x": 2}`),
			wantCode: exitFailed, wantErr: []string{"answered error invalid_arguments", "y"}},
		{name: "call as JSON", args: append(n, "--json", "tools", "call", "add", "--args", `{"x": 2}`),
			wantCode: exitFailed, wantOut: []string{`{"error":{"code":"invalid_arguments"`}},
		{name: "call unknown", args: append(n, "tools", "call", "sub"), wantCode: exitFailed, wantErr: []string{"no such tool"}},
		{name: "no subcommand", args: append(n, "tools"), wantCode: exitUsage, wantErr: []string{"list, show or call"}},
		{name: "bad subcommand", args: append(n, "tools", "rm", "add"), wantCode: exitUsage, wantErr: []string{"unknown tools subcommand"}},
		{name: "arguments not an object", args: append(n, "tools", "call", "add", "--args", "[1]"), wantCode: exitUsage, wantErr: []string{"JSON object"}},
	}
	for _, s := range steps {
		code, stdout, stderr := call(t, s.stdin, s.args...)
		s.check(t, code, stdout, stderr)
	}
}
