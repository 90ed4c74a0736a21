package main

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/wire"
)

// A worker process driving a batch, SIGKILLed half-way, loses nothing: a
// second worker process takes the batch over once its ownership lapses,
// and every item ends succeeded with one result; only the items in flight
// at the kill (at most the batch's concurrency) reach the model in both
// processes, none twice in one.
func TestKill_batch_driver_killed_mid_batch(t *testing.T) {
	const (
		ackWait     = 2 * time.Second
		items       = 400
		concurrency = 16
	)
	b := bustest.New(t, provision.Config{AckWait: ackWait, LeaseTTL: ackWait})
	first := startWorkerProcess(t, b, 32)

	var in bytes.Buffer
	for i := range items {
		fmt.Fprintf(&in, `{"custom_id": "doc-%d", "verb": "communicate", "data": {"instruction": "doc %d", "chat_model": "block:echo"}}`+"\n", i, i)
	}
	// The blocking model answers the requests whose id starts with
	// "quick-": the batch id starts every item's request id.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := b.Client.SubmitBatch(ctx, client.BatchSpec{ID: quickPrefix + "kill", Concurrency: concurrency}, &in); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "a hundred model calls in the first process", func() bool {
		first.child.mu.Lock()
		defer first.child.mu.Unlock()
		return len(first.child.started) >= 100
	})
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-first.exited
	second := startWorkerProcess(t, b, 32)

	var end *wire.Batch
	err := b.Client.WatchBatch(ctx, quickPrefix+"kill", func(bt *wire.Batch) error {
		if bt.Counts.Sum() != bt.Counts.Total {
			t.Errorf("counts %+v do not add up", bt.Counts)
		}
		end = bt
		return nil
	})
	if err != nil {
		t.Fatalf("watch: %v (last %+v)", err, end)
	}
	if want := (wire.BatchCounts{Total: items, Succeeded: items}); end.State != wire.BatchCompleted || end.Counts != want {
		t.Fatalf("ended %s %+v, want completed %+v", end.State, end.Counts, want)
	}
	seen := map[string]bool{}
	err = b.Client.BatchResults(ctx, quickPrefix+"kill", 0, false, func(r wire.BatchResult) error {
		if seen[r.CustomID] {
			t.Errorf("%s has two results", r.CustomID)
		}
		seen[r.CustomID] = true
		if r.Status != wire.ItemSucceeded {
			t.Errorf("%s: %+v", r.CustomID, r)
		}
		return nil
	})
	if err != nil || len(seen) != items {
		t.Fatalf("results: %d, %v", len(seen), err)
	}
	first.child.mu.Lock()
	second.child.mu.Lock()
	defer first.child.mu.Unlock()
	defer second.child.mu.Unlock()
	both := 0
	for id, n := range first.child.started {
		if n != 1 {
			t.Errorf("%s called %d times in the first process", id, n)
		}
		if second.child.started[id] > 0 {
			both++
		}
	}
	for id, n := range second.child.started {
		if n != 1 {
			t.Errorf("%s called %d times in the second process", id, n)
		}
	}
	if both > concurrency {
		t.Errorf("%d items reached the model in both processes, want at most the %d in flight at the kill", both, concurrency)
	}
	if len(first.child.started)+len(second.child.started)-both != items {
		t.Errorf("%d + %d - %d model calls, want one per item (%d)", len(first.child.started), len(second.child.started), both, items)
	}
	t.Logf("first process: %d calls, second: %d, in both: %d", len(first.child.started), len(second.child.started), both)
}
