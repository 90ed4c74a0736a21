package ops_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

// act runs tool calls on a branch: each is authorized (the branch allows
// add and divide only), invoked, and recorded with its response; failures
// are values. A redelivery of the request is answered from history.
func ExampleEngine_Do_act() {
	tools := opstest.NewToolFuncs(map[string]opstest.ToolFunc{
		"add": func(_ context.Context, args map[string]any) (any, error) {
			x, _ := args["x"].(float64)
			y, _ := args["y"].(float64)
			return x + y, nil
		},
		"divide": func(_ context.Context, args map[string]any) (any, error) {
			if args["y"] == 0.0 {
				return nil, &ops.ToolError{Code: "division_by_zero", Message: "y must not be 0"}
			}
			return args["x"].(float64) / args["y"].(float64), nil
		},
	})
	eng, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore(), Tools: tools})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := eng.Do(ctx, ops.Request{
		ID: "create-1", Verb: "branch.create",
		Data: json.RawMessage(`{"branch_id":"calc","tools":["add","divide"]}`),
	}); err != nil {
		panic(err)
	}
	req := ops.Request{ID: "act-1", Verb: "act", BranchID: "calc", Data: json.RawMessage(`{"action_requests":[
		{"function":"add","arguments":{"x":2,"y":3}},
		{"function":"divide","arguments":{"x":1,"y":0}},
		{"function":"delete_everything"}]}`)}
	res, err := eng.Do(ctx, req)
	if err != nil {
		panic(err)
	}
	var responses []ops.ActionResponse
	if err := json.Unmarshal(res.Value, &responses); err != nil {
		panic(err)
	}
	for _, r := range responses {
		if r.Error != nil {
			fmt.Printf("%s: %s: %s\n", r.Function, r.Error.Code, r.Error.Message)
			continue
		}
		fmt.Printf("%s: %v\n", r.Function, r.Output)
	}

	again, err := eng.Do(ctx, req)
	if err != nil {
		panic(err)
	}
	fmt.Println("replayed:", again.Replayed, "add ran", tools.Calls(ops.ToolCallKey("act-1", 0)), "time")
	// Output:
	// add: 5
	// divide: division_by_zero: y must not be 0
	// delete_everything: denied: tool "delete_everything" is not allowed on this branch
	// replayed: true add ran 1 time
}
