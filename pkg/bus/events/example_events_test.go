package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/lionbus/lionbus/pkg/bus/events"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
)

// Publish the engine's signals with an EventSink and read them back from
// the events stream.
func ExampleNewSink() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "lionbus-example-*")
	defer os.RemoveAll(dir)
	srv, err := embedded.Start(ctx, embedded.Config{Port: embedded.RandomPort, StoreDir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Shutdown()
	nc, err := client.Connect(ctx, client.ConnectConfig{URL: srv.ClientURL()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	res, err := provision.Ensure(ctx, js, provision.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}

	store, _ := store.New(js, res, store.Config{})
	sink, _ := events.NewSink(js, res, protocol.EventBuilder{Source: "/example"}, zerolog.Nop())
	providers := ops.NewProviders(nil)
	_ = scripted.Register(providers)
	eng, err := ops.NewEngine(ops.Config{Store: store, Providers: providers, Signals: sink})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, req := range []ops.Request{
		{ID: "r1", Verb: "branch.create", Data: json.RawMessage(`{"branch_id":"demo","chat_model":"scripted:echo"}`)},
		{ID: "r2", Verb: "communicate", BranchID: "demo", Data: json.RawMessage(`{"instruction":"hello"}`)},
	} {
		if _, err := eng.Do(ctx, req); err != nil {
			fmt.Println(err)
			return
		}
	}

	cons, _ := js.OrderedConsumer(ctx, res.Subjects.EventsStream(), jetstream.OrderedConsumerConfig{})
	batch, err := cons.Fetch(4, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	for msg := range batch.Messages() {
		var ev struct {
			Type      string `json:"type"`
			RequestID string `json:"requestid"`
		}
		_ = json.Unmarshal(msg.Data(), &ev)
		fmt.Println(msg.Subject(), ev.Type, ev.RequestID)
	}
	// Output:
	// lion.events.demo.run_start lionbus.run.start r2
	// lion.events.demo.message_added lionbus.message.added r2
	// lion.events.demo.message_added lionbus.message.added r2
	// lion.events.demo.run_end lionbus.run.end r2
}
