package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

func TestPublisher_interpret_and_react(t *testing.T) {
	url := startToolWorker(t, opstest.NewToolFuncs(map[string]opstest.ToolFunc{
		"add": func(_ context.Context, a map[string]any) (any, error) {
			x, _ := a["x"].(float64)
			y, _ := a["y"].(float64)
			return x + y, nil
		},
	}))
	// Three reacts of three model calls each.
	script := []string{
		`{"analysis": "Adding first.", "extension_needed": true, "action_requests": [{"function": "add", "arguments": {"x": 2, "y": 3}}]}`,
		`{"analysis": "The sum is 5.", "extension_needed": false}`,
		"It is 5.",
	}
	model, _ := json.Marshal(map[string]any{"provider": "scripted", "replies": append(append(script, script...), script...)})
	rewrite, _ := json.Marshal(map[string]any{"provider": "scripted", "replies": []string{"Add 2 and 3 and report the sum."}})
	n := []string{"--nats", url}
	steps := []step{
		{name: "create", args: append(n, "branch", "create", "--id", "r1", "--tool", "add", "--chat-model", string(model))},
		{name: "interpret", args: append(n, "interpret", "r1", "--text", "2+3?", "--domain", "math", "--interpret-model", string(rewrite)),
			wantOut: []string{"Add 2 and 3 and report the sum."}},
		{name: "interpret needs text", args: append(n, "interpret", "r1"), wantCode: exitUsage, wantErr: []string{"interpret needs --text"}},
		{name: "react", args: append(n, "react", "r1", "--instruction", "add 2 and 3", "--max-extensions", "1", "--return-analysis"),
			wantOut: []string{"round 0 (1 tool calls, another round): Adding first.", "round 1 (0 tool calls): The sum is 5.", "It is 5."}},
		{name: "react json", args: append(n, "--json", "react", "r1", "--instruction", "add 2 and 3", "--max-extensions", "1", "--return-analysis"),
			wantOut: []string{`"analyses": [`, `"output": 5`}},
		{name: "react streamed", args: append(n, "react", "r1", "--instruction", "add 2 and 3", "--max-extensions", "1", "--stream"),
			wantOut: []string{"round 0: Adding first.\nround 1: The sum is 5.\nIt is 5.\n"}, notWantOut: "tool calls"},
		{name: "react needs an instruction", args: append(n, "react", "r1"), wantCode: exitUsage, wantErr: []string{"react needs --instruction"}},
		{name: "react refuses a bad strategy", args: append(n, "react", "r1", "--instruction", "x", "--action-strategy", "random"),
			wantCode: exitFailed, wantErr: []string{"action_strategy"}},
	}
	for _, s := range steps {
		code, stdout, stderr := call(t, s.stdin, s.args...)
		s.check(t, code, stdout, stderr)
	}
}
