package main

import (
	"context"
	"math"
	"strings"

	"github.com/lionbus/lionbus/pkg/ops"
)

// demoToolNames are the tools the demo branch may use; the worker serves
// them with --demo.
var demoToolNames = []string{"to_celsius", "word_count"}

// demoTools returns the tools of the demo: Go functions run in the worker's
// process (an in-memory ops.ToolFuncs invoker).
func demoTools() *ops.ToolFuncs {
	return ops.NewToolFuncs(map[string]ops.ToolFunc{
		"to_celsius": func(_ context.Context, args map[string]any) (any, error) {
			f, ok := args["fahrenheit"].(float64)
			if !ok {
				return nil, &ops.ToolError{Code: "bad_input", Message: "fahrenheit must be a number"}
			}
			return map[string]any{"celsius": math.Round((f-32)*5/9*10) / 10}, nil
		},
		"word_count": func(_ context.Context, args map[string]any) (any, error) {
			text, ok := args["text"].(string)
			if !ok {
				return nil, &ops.ToolError{Code: "bad_input", Message: "text must be a string"}
			}
			return len(strings.Fields(text)), nil
		},
	})
}

// demoActions are the calls of the demo's act step: the branch's two tools,
// and one it may not use, which is denied.
var demoActions = []map[string]any{
	{"function": "to_celsius", "arguments": map[string]any{"fahrenheit": 68}},
	{"function": "word_count", "arguments": map[string]any{"text": "lionbus runs tools over NATS"}},
	{"function": "delete_branch", "arguments": map[string]any{"branch_id": demoBranch}},
}
