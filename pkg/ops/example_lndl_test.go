package ops_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
	"github.com/lionbus/lionbus/pkg/wire"
)

// operate with the LNDL middle: the scripted model asks for a tool call
// in round 1 and commits OUT{} citing its result in round 2.
func ExampleMiddleLNDL() {
	providers := ops.NewProviders(nil)
	if err := scripted.Register(providers); err != nil {
		panic(err)
	}
	tools := opstest.NewToolFuncs(map[string]opstest.ToolFunc{
		"add": func(_ context.Context, a map[string]any) (any, error) {
			x, _ := a["x"].(float64)
			y, _ := a["y"].(float64)
			return x + y, nil
		},
	})
	eng, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore(), Providers: providers, Tools: tools})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	model, _ := json.Marshal(map[string]any{"provider": "scripted", "replies": []string{
		"I need the sum first.\n```lndl\n<lact s>add(x=20, y=22)</lact>\n```",
		"```lndl\n<lvar why>added with the tool</lvar>\nOUT{answer: [s], why: [why]}\n```",
	}})
	if _, err := eng.Do(ctx, ops.Request{ID: "c", Verb: "branch.create",
		Data: json.RawMessage(`{"branch_id":"demo","tools":["add"],"chat_model":` + string(model) + `}`)}); err != nil {
		panic(err)
	}
	res, err := eng.Do(ctx, ops.Request{ID: "op", Verb: "operate", BranchID: "demo", Data: json.RawMessage(`{
		"instruction": "What is 20 + 22?", "middle": "lndl", "round_budget": 2,
		"response_format": {"type": "object", "properties": {"answer": {"type": "integer"}, "why": {"type": "string"}},
		                    "required": ["answer", "why"]}}`)})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Value))
	// The rounds are operate's own part of the result.
	var extra wire.OperateExtra
	if err := res.DecodeExtra(&extra); err != nil {
		panic(err)
	}
	for _, r := range extra.LNDLRounds {
		fmt.Printf("round %d of %d: %s, %d action(s)\n", r.Round, r.Budget, r.Outcome, len(r.Actions))
	}
	// Output:
	// {"answer":42,"why":"added with the tool"}
	// round 1 of 2: continue, 1 action(s)
	// round 2 of 2: success, 0 action(s)
}
