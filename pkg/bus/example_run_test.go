package bus_test

import (
	"context"
	"fmt"
	"time"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/wire"
)

// echoCLI stands in for a coding-agent CLI: it streams a session id, the
// instruction back in two pieces, and a result.
type echoCLI struct{}

func (echoCLI) IsCLI(history.ModelRef) bool { return true }

func (e echoCLI) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	return e.Stream(ctx, call, func(ops.Chunk) error { return nil })
}

func (echoCLI) Stream(_ context.Context, call ops.Call, emit func(ops.Chunk) error) (*ops.Completion, error) {
	for _, c := range []ops.Chunk{
		{Kind: ops.ChunkSystem, Metadata: map[string]any{"session_id": "s-1"}},
		{Kind: ops.ChunkText, Content: "You said: "},
		{Kind: ops.ChunkText, Content: call.Instruction, IsDelta: true},
		{Kind: ops.ChunkResult, Metadata: map[string]any{"num_turns": 1}},
	} {
		if err := emit(c); err != nil {
			return nil, err
		}
	}
	return &ops.Completion{Text: "You said: " + call.Instruction, SessionID: "s-1"}, nil
}

// Example_run serves a CLI model (a stand-in registered as the provider
// "cli"; cmd/worker registers the real one with --cli NAME=COMMAND) and
// follows a run with Client.Run: every chunk, in order, then the typed
// result.
func Example_run() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	providers := ops.NewProviders(map[string]ops.Provider{"cli": echoCLI{}})
	svc, err := bus.Start(ctx, bus.Config{Embedded: embedded.Config{Port: embedded.RandomPort}, Providers: providers})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer svc.Close()
	defer func() { _ = svc.Stop(ctx) }()
	nc, err := client.Connect(ctx, client.ConnectConfig{URL: svc.URL()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	cl, err := client.New(nc, client.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := cl.Do(ctx, "branch.create", "", map[string]any{"branch_id": "agent", "chat_model": "cli:echo"}); err != nil {
		fmt.Println(err)
		return
	}

	req := wire.RunRequest{}
	req.Instruction = "hello"
	res, err := cl.Run(ctx, "agent", req, func(c wire.Chunk) error {
		fmt.Printf("chunk %d: %s %q\n", c.Seq, c.Kind, c.Content)
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	v := res.Value
	fmt.Printf("text %q, session %s, %d chunks\n", *v.Text, v.SessionID, v.Chunks)
	// Output:
	// chunk 1: system ""
	// chunk 2: system ""
	// chunk 3: text "You said: "
	// chunk 4: text "hello"
	// chunk 5: result ""
	// text "You said: hello", session s-1, 5 chunks
}
