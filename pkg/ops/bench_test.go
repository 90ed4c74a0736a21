package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
)

func BenchmarkEngine_communicate(b *testing.B) {
	providers := ops.NewProviders(nil)
	if err := scripted.Register(providers); err != nil {
		b.Fatal(err)
	}
	eng, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore(), Providers: providers})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := eng.Do(ctx, ops.Request{ID: "c", Verb: "branch.create", Data: json.RawMessage(`{"branch_id":"main","chat_model":"scripted:echo"}`)}); err != nil {
		b.Fatal(err)
	}
	data := json.RawMessage(`{"instruction":"{\"answer\": \"4\"}","response_format":{"type":"object","required":["answer"]},"clear_messages":true}`)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := eng.Do(ctx, ops.Request{ID: fmt.Sprint("r", i), Verb: "communicate", BranchID: "main", Data: data}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReplay(b *testing.B) {
	events := []history.Event{opstest.CreatedEvent("b1", "c")}
	events[0].Seq = 1
	for i := 0; i < 500; i++ {
		ev := opstest.MessagesEvent("b1", fmt.Sprint("r", i), 1)
		ev.Seq = uint64(i + 2)
		events = append(events, ev)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := history.Replay(events); err != nil {
			b.Fatal(err)
		}
	}
}

// lndlBenchProvider answers round 1 with two lacts and later rounds with
// OUT citing them.
type lndlBenchProvider struct{}

func (lndlBenchProvider) Complete(_ context.Context, call ops.Call) (*ops.Completion, error) {
	if len(call.Instruction) > 6 && call.Instruction[:6] == "Round " {
		return &ops.Completion{Text: "```lndl\nOUT{total: [s], shout: [u]}\n```"}, nil
	}
	return &ops.Completion{Text: "```lndl\n<lact s>add(x=1, y=2)</lact>\n<lact u>upper(s=\"hi\")</lact>\n```"}, nil
}

// BenchmarkEngine_operate_lndl is a two-round LNDL operate: two
// recorded exchanges, one act stage of two calls, validation.
func BenchmarkEngine_operate_lndl(b *testing.B) {
	eng, err := ops.NewEngine(ops.Config{
		Store: opstest.NewMemoryStore(), Providers: ops.NewProviders(map[string]ops.Provider{"bench": lndlBenchProvider{}}),
		Tools: actTools(),
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := eng.Do(ctx, ops.Request{ID: "c", Verb: "branch.create", Data: json.RawMessage(
		`{"branch_id":"main","chat_model":"bench:m","tools":["add","upper"]}`)}); err != nil {
		b.Fatal(err)
	}
	data := json.RawMessage(`{"instruction":"add and shout","middle":"lndl","clear_messages":true,"response_format":` + sumFormat + `}`)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := eng.Do(ctx, ops.Request{ID: fmt.Sprint("r", i), Verb: "operate", BranchID: "main", Data: data}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEngine_refuse_deep_schema: the cost of refusing a communicate
// whose response_format is nested 9,000 deep (226 KB, the request that
// held a worker for minutes before schemas were bounded), next to the
// accepted worst case, a schema right at the bounds (64 deep).
func BenchmarkEngine_refuse_deep_schema(b *testing.B) {
	providers := ops.NewProviders(nil)
	if err := scripted.Register(providers); err != nil {
		b.Fatal(err)
	}
	eng, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore(), Providers: providers})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := eng.Do(ctx, ops.Request{ID: "c", Verb: "branch.create", Data: json.RawMessage(`{"branch_id":"main","chat_model":"scripted:echo"}`)}); err != nil {
		b.Fatal(err)
	}
	nested := func(depth int) string {
		return strings.Repeat(`{"type":"array","items":`, depth) + `{"type":"string"}` + strings.Repeat("}", depth)
	}
	for _, bc := range []struct {
		name   string
		depth  int
		refuse bool
	}{{"9000_deep_refused", 9000, true}, {"64_deep_accepted", ops.MaxSchemaDepth - 1, false}} {
		b.Run(bc.name, func(b *testing.B) {
			data := json.RawMessage(`{"instruction":"[]","clear_messages":true,"skip_validation":true,"response_format":` + nested(bc.depth) + `}`)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				_, err := eng.Do(ctx, ops.Request{ID: fmt.Sprint(bc.name, i), Verb: "communicate", BranchID: "main", Data: data})
				if refused := errors.Is(err, ops.ErrSchemaTooComplex); refused != bc.refuse {
					b.Fatalf("err = %v, want refused %v", err, bc.refuse)
				}
			}
		})
	}
}
