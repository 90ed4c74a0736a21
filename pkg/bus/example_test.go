package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// Example starts a worker service on an embedded NATS server with
// bus.Start, then uses a client to create a branch whose chat model is the
// scripted echo model, have one exchange on it, read it back, and see how an
// error answer looks.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Connect.URL "" starts an embedded server; RandomPort picks a free
	// port and an empty StoreDir is a temporary directory.
	svc, err := bus.Start(ctx, bus.Config{Embedded: embedded.Config{Port: embedded.RandomPort}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer svc.Close()
	defer func() { _ = svc.Stop(ctx) }()

	// A client needs only a connection: package client links no server.
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
	ask := func(verb, branch string, data any) *client.Reply {
		r, err := cl.Do(ctx, verb, branch, data)
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
		Messages []history.Message `json:"messages"`
	}
	_ = json.Unmarshal(got.Value, &branch)
	for _, m := range branch.Messages {
		fmt.Println("-", m.Kind)
	}

	// An error answer is a Reply too; Err returns it as a *RemoteError.
	if err := ask("branch.get", "missing", nil).Err(); err != nil {
		fmt.Println(err.(*client.RemoteError).Code)
	}

	// Output:
	// lionbus.branch.create.result
	// communicate: Say hello.
	// - system
	// - instruction
	// - assistant_response
	// branch_not_found
}
