package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

func TestPublisher_operate(t *testing.T) {
	url := startToolWorker(t, opstest.NewToolFuncs(map[string]opstest.ToolFunc{
		"add": func(_ context.Context, a map[string]any) (any, error) {
			x, _ := a["x"].(float64)
			y, _ := a["y"].(float64)
			return x + y, nil
		},
	}))
	reply := `{"answer": "ok", "action_requests": [{"function": "add", "arguments": {"x": 2, "y": 3}}]}`
	model, _ := json.Marshal(map[string]any{"provider": "scripted", "replies": []string{reply}})
	lndlModel, _ := json.Marshal(map[string]any{"provider": "scripted", "replies": []string{
		"```lndl\n<lact s>add(x=2, y=3)</lact>\n```", "```lndl\nOUT{answer: [s]}\n```"}})
	n := []string{"--nats", url}
	steps := []step{
		{name: "create", args: append(n, "branch", "create", "--id", "o1", "--tool", "add", "--chat-model", string(model)),
			wantOut: []string{"tools:       add"}},
		{name: "operate with actions", args: append(n, "--json", "operate", "o1", "--instruction", "add 2 and 3", "--actions",
			"--response-format", `{"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}`,
			"--handle-validation", "raise"),
			wantOut: []string{`"answer": "ok"`, `"action_responses": [`, `"output": 5`}},
		{name: "no instruction", args: append(n, "operate", "o1"), wantCode: exitUsage, wantErr: []string{"operate needs --instruction"}},
		{name: "removed name", stdin: `{"instruction": "x", "imodel": "scripted:echo"}`, args: append(n, "operate", "o1", "--data", "-"),
			wantCode: exitFailed, wantErr: []string{"error: invalid_request:", "use chat_model"}},
		{name: "history", args: append(n, "branch", "history", "o1"),
			wantOutRE: `(?s)user.*assistant.*action +add.*action +add`},
		{name: "create lndl", args: append(n, "branch", "create", "--id", "o2", "--tool", "add", "--chat-model", string(lndlModel))},
		{name: "operate lndl", args: append(n, "--json", "operate", "o2", "--instruction", "add 2 and 3", "--middle", "lndl", "--round-budget", "2",
			"--response-format", `{"type": "object", "properties": {"answer": {"type": "number"}}, "required": ["answer"]}`),
			wantOut: []string{`"answer": 5`, `"lndl_rounds": [`, `"outcome": "continue"`, `"outcome": "success"`, `"budget": 2`}},
		{name: "lndl budget 0", args: append(n, "operate", "o2", "--instruction", "x", "--middle", "lndl", "--round-budget", "0"),
			wantCode: exitFailed, wantErr: []string{"round_budget"}},
	}
	for _, s := range steps {
		code, stdout, stderr := call(t, s.stdin, s.args...)
		s.check(t, code, stdout, stderr)
	}
}
