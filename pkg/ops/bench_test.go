package ops_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
)

func BenchmarkEngine_communicate(b *testing.B) {
	providers := ops.NewProviders(nil)
	if err := scripted.Register(providers); err != nil {
		b.Fatal(err)
	}
	eng, err := ops.NewEngine(ops.Config{Store: ops.NewMemoryStore(), Providers: providers})
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
	events := []ops.Event{opstest.CreatedEvent("b1", "c")}
	events[0].Seq = 1
	for i := 0; i < 500; i++ {
		ev := opstest.MessagesEvent("b1", fmt.Sprint("r", i), 1)
		ev.Seq = uint64(i + 2)
		events = append(events, ev)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ops.Replay(events); err != nil {
			b.Fatal(err)
		}
	}
}
