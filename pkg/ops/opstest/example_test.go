package opstest_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
)

// A streaming provider's chunks are numbered and collected in a
// ChunkBuffer; their text is the completion's text.
func ExampleChunkBuffer() {
	var prov ops.StreamingProvider = scripted.New()
	model, err := history.ParseModelRef("scripted:echo")
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	var buf opstest.ChunkBuffer
	sink := ops.Sequence(&buf)
	comp, err := prov.Stream(ctx, ops.Call{Model: model, Instruction: "streams arrive in pieces", Attempt: 1},
		func(c ops.Chunk) error { return sink.Emit(ctx, c) })
	if err != nil {
		panic(err)
	}
	for _, c := range buf.Chunks() {
		fmt.Printf("%d %s %q\n", c.Seq, c.Kind, c.Content)
	}
	fmt.Println(buf.Text() == comp.Text)
	// Output:
	// 1 text "streams "
	// 2 text "arrive "
	// 3 text "in "
	// 4 text "pieces"
	// 5 result ""
	// true
}

// A ToolFuncs invoker serves Go functions as tools; act authorizes each
// call, then invokes it with a stable idempotency key.
func ExampleToolFuncs() {
	tools := opstest.NewToolFuncs(map[string]opstest.ToolFunc{
		"add": func(_ context.Context, args map[string]any) (any, error) {
			x, _ := args["x"].(float64)
			y, _ := args["y"].(float64)
			return map[string]any{"sum": x + y}, nil
		},
		"divide": func(_ context.Context, args map[string]any) (any, error) {
			if args["y"] == 0.0 {
				return nil, &ops.ToolError{Code: "division_by_zero", Message: "y must not be 0"}
			}
			return args["x"].(float64) / args["y"].(float64), nil
		},
	})
	gate := ops.AllowTools("add", "divide")
	ctx := context.Background()
	for i, call := range []ops.ToolInvocation{
		{Function: "add", Arguments: map[string]any{"x": 2, "y": 3}},
		{Function: "divide", Arguments: map[string]any{"x": 1, "y": 0}},
		{Function: "delete_everything"},
	} {
		call.RequestID = "req-1"
		call.IdempotencyKey = ops.ToolCallKey(call.RequestID, i)
		if d, _ := gate.Authorize(ctx, call); !d.Allow {
			fmt.Println("denied:", d.Reason)
			continue
		}
		out, err := tools.Invoke(ctx, call)
		if err != nil {
			fmt.Println("invoker failed:", err)
			continue
		}
		b, _ := json.Marshal(out)
		fmt.Println(call.IdempotencyKey, string(b))
	}
	fmt.Println(tools.Calls("req-1/tool/0"))
	// Output:
	// req-1/tool/0 {"output":{"sum":5}}
	// req-1/tool/1 {"error":{"code":"division_by_zero","message":"y must not be 0"}}
	// denied: tool "delete_everything" is not allowed on this branch
	// 1
}
