package worker_test

import (
	"context"
	"encoding/json"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

// On its last allowed delivery a request has no redelivery left: a worker
// that stops hard under it must answer it (unavailable) instead of handing
// it back into nothing.
func TestWorker_hard_stop_on_last_delivery_answers(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{MaxDeliver: 1})
	started := make(chan struct{}, 1)
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := b.StartWorker(t, ctx, h, nil, worker.Config{})
	id, err := b.Client.Submit(bustest.Ctx(t), "op.stuck", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	cancel()
	<-w.Stopped()
	r, ok := b.AwaitWithin(t, id, 5*time.Second)
	if !ok {
		t.Fatal("request abandoned on its last delivery was never answered")
	}
	if code := bustest.RemoteCode(t, r); code != ops.CodeUnavailable {
		t.Fatalf("code %s, want %s", code, ops.CodeUnavailable)
	}
}

// A request that arrives in a fetch while the worker is stopping is handed
// back, except on its last delivery: then it runs (and drains) here.
func TestWorker_graceful_stop_runs_a_last_delivery_it_fetched(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{MaxDeliver: 1})
	var calls atomic.Int32
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		calls.Add(1)
		return &ops.Result{Value: json.RawMessage(`"ran"`)}, nil
	})
	w := b.StartWorker(t, nil, h, nil, worker.Config{FetchWait: 3 * time.Second})
	// Let the worker's first fetch reach the server, then stop it while
	// that fetch is still waiting, and only then publish.
	time.Sleep(300 * time.Millisecond)
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(context.Background()) }()
	time.Sleep(300 * time.Millisecond)
	id, err := b.Client.Submit(bustest.Ctx(t), "op.late", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Stop = %v", err)
	}
	r, ok := b.AwaitWithin(t, id, 5*time.Second)
	if !ok {
		t.Fatalf("request fetched during the stop on its last delivery was lost (handler ran %d times)", calls.Load())
	}
	bustest.MustResult(t, r, nil)
}

// A cancel that arrives after a request was answered must not replace that
// answer when the same request is delivered again: whether the worker
// learns of the cancel before the copy arrives, or while the copy waits
// for its turn behind the delivery that answered (a race that under load
// made the copy answer canceled, 1 to 3 times in 150 runs).
func TestWorker_cancel_after_answer_keeps_the_stored_answer(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	var calls atomic.Int32
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		calls.Add(1)
		return &ops.Result{Value: json.RawMessage(`"ran"`)}, nil
	})
	b.StartWorker(t, nil, h, nil, worker.Config{})
	ans := b.WatchAnswers(t)
	id := "cancel-after-answer"
	b.PublishRaw(t, "op.once", id)
	bustest.MustResult(t, b.Await(t, id), nil)
	if err := b.Client.Cancel(bustest.Ctx(t), id); err != nil {
		t.Fatal(err)
	}
	b.PublishRaw(t, "op.once", id)
	bustest.WaitFor(t, 5*time.Second, "second answer", func() bool { return ans.Count(id) == 2 })
	second := ans.Msgs(id)[1]
	r, err := b.Codec.DecodeEvent(second.Header, second.Data)
	if err != nil {
		t.Fatal(err)
	}
	if r.Type() != "lionbus.op.once.result" {
		t.Fatalf("redelivery answered %s (%s), want the stored result", r.Type(), r.Data())
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want 1", n)
	}
}

// Stopping a worker ends every goroutine it started: the fetch loop, the
// handlers, their progress tickers and the cancel subscription.
func TestWorker_stop_leaves_no_goroutines(t *testing.T) {
	b := bustest.New(t, provision.Config{})
	nc, _, res := b.Conn(t)
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		time.Sleep(30 * time.Millisecond) // a few progress ticks
		return &ops.Result{Value: json.RawMessage(`"ok"`)}, nil
	})
	settle := func() int {
		var n int
		for range 50 {
			runtime.GC()
			n = runtime.NumGoroutine()
			time.Sleep(20 * time.Millisecond)
			if runtime.NumGoroutine() == n {
				break
			}
		}
		return n
	}
	before := settle()
	for round := range 3 {
		w, err := worker.New(nc, res, b.Codec, h, worker.Config{
			FetchWait: 100 * time.Millisecond, ProgressInterval: 5 * time.Millisecond, MaxInFlight: 4,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		ids := make([]string, 8)
		for i := range ids {
			if ids[i], err = b.Client.Submit(bustest.Ctx(t), "op.tick", "", nil); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range ids {
			bustest.MustResult(t, b.Await(t, id), nil)
		}
		if err := w.Stop(bustest.Ctx(t)); err != nil {
			t.Fatalf("round %d: Stop = %v", round, err)
		}
	}
	var after int
	deadline := time.Now().Add(5 * time.Second)
	for {
		after = settle()
		if after <= before || time.Now().After(deadline) {
			break
		}
	}
	if after > before {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Fatalf("%d goroutines before, %d after three workers stopped:\n%s", before, after, buf[:n])
	}
}
