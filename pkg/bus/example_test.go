package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
)

// Example_clientAndWorker runs a worker and a client against an embedded NATS server: it
// creates a branch whose chat model is the scripted echo model, has one
// exchange on it, reads it back, and shows how an error answer looks.
func Example_clientAndWorker() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// An embedded server with JetStream; StoreDir "" is a temporary
	// directory removed by Shutdown.
	srv, err := bus.StartServer(ctx, bus.ServerConfig{Port: bus.RandomPort})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Shutdown()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Println(err)
		return
	}

	// Streams, the workers consumer and the buckets; then the worker: a
	// codec, the NATS branch store, and the operations engine.
	res, err := bus.Provision(ctx, js, bus.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	codec, err := bus.NewCodec(res.Config)
	if err != nil {
		fmt.Println(err)
		return
	}
	store, err := bus.NewStore(js, res, bus.StoreConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	providers := ops.NewProviders(nil)
	if err := scripted.Register(providers); err != nil {
		fmt.Println(err)
		return
	}
	engine, err := ops.NewEngine(ops.Config{Store: store, Providers: providers})
	if err != nil {
		fmt.Println(err)
		return
	}
	worker, err := bus.NewWorker(nc, res, codec, engine, bus.WorkerConfig{MaxInFlight: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := worker.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = worker.Stop(ctx) }()

	client, err := bus.NewClient(nc, bus.ClientConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ask := func(verb, branch string, data any) *bus.Reply {
		r, err := client.Do(ctx, verb, branch, data)
		if err != nil {
			panic(err) // a transport failure, not an error answer
		}
		return r
	}

	created := ask("branch.create", "", map[string]any{
		"branch_id": "demo", "system": "Be brief.", "chat_model": "scripted:echo",
	})
	fmt.Println(created.Type)

	answer := ask("communicate", "demo", map[string]any{"instruction": "Say hello."})
	result, err := answer.Result()
	if err != nil {
		fmt.Println(err)
		return
	}
	var text string
	_ = json.Unmarshal(result.Value, &text)
	fmt.Println("communicate:", text)

	got, err := ask("branch.get", "demo", nil).Result()
	if err != nil {
		fmt.Println(err)
		return
	}
	var branch struct {
		Messages []ops.Message `json:"messages"`
	}
	_ = json.Unmarshal(got.Value, &branch)
	for _, m := range branch.Messages {
		fmt.Println("-", m.Kind)
	}

	// An error answer is a Reply too; Err returns it as a *RemoteError.
	if err := ask("branch.get", "missing", nil).Err(); err != nil {
		fmt.Println(err.(*bus.RemoteError).Code)
	}

	// Output:
	// lionbus.branch.create.result
	// communicate: Say hello.
	// - system
	// - instruction
	// - assistant_response
	// branch_not_found
}
