package main

// demoToolNames are the tools the demo branch may use; with --demo the
// worker serves them from the example tool services (examples/tools:
// calculator and notes), called over NATS like any other tool service.
var demoToolNames = []string{"calculate", "to_celsius", "note_put", "note_get"}

// demoActions are the calls of the demo's act step: two of the branch's
// tools, and one it may not use, which is denied.
var demoActions = []map[string]any{
	{"function": "calculate", "arguments": map[string]any{"op": "mul", "a": 6, "b": 7}},
	{"function": "note_put", "arguments": map[string]any{"key": "motto", "text": "lionbus runs tools over NATS"}},
	{"function": "delete_branch", "arguments": map[string]any{"branch_id": demoBranch}},
}
