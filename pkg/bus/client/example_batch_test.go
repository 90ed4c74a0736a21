package client_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/wire"
)

// A batch of three items, one of which fails, watched to its end, its
// results read, and the failed item run again.
func ExampleClient_SubmitBatch() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, stop, err := exampleClient(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	input := strings.NewReader(`{"custom_id": "a", "verb": "communicate", "data": {"instruction": "first", "chat_model": "scripted:echo"}}
{"custom_id": "b", "verb": "communicate", "data": {"instruction": "second", "chat_model": "scripted:echo"}}
{"custom_id": "c", "verb": "communicate", "data": {"instruction": "third", "chat_model": {"provider": "scripted", "replies": [{"error": "no"}]}}}
`)
	if _, err := cl.SubmitBatch(ctx, client.BatchSpec{ID: "example", Concurrency: 2}, input); err != nil {
		fmt.Println(err)
		return
	}
	err = cl.WatchBatch(ctx, "example", func(b *wire.Batch) error {
		if wire.BatchFinal(b.State) {
			fmt.Printf("%s: %d succeeded, %d failed of %d\n", b.State, b.Counts.Succeeded, b.Counts.Failed, b.Counts.Total)
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	statuses := map[string]string{}
	err = cl.BatchResults(ctx, "example", 0, false, func(r wire.BatchResult) error {
		statuses[r.CustomID] = r.Status
		if r.Error != nil {
			statuses[r.CustomID] += " (" + r.Error.Code + ")"
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(statuses["a"], statuses["b"], statuses["c"])
	b, err := cl.RetryBatch(ctx, "example") // only c runs again
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("round", b.Round, b.State)
	// Output:
	// completed: 2 succeeded, 1 failed of 3
	// succeeded succeeded failed (provider_error)
	// round 2 running
}
