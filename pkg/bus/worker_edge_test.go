package bus_test

import (
	"context"
	"encoding/json"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/ops"
)

// awaitWithin waits at most d for the answer of id and reports whether one
// came.
func (b *busBundle) awaitWithin(t testing.TB, id string, d time.Duration) (*bus.Reply, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	r, err := b.client.Await(ctx, id)
	if err != nil {
		return nil, false
	}
	return r, true
}

// publishRaw publishes a request event for verb with id, without a
// Nats-Msg-Id, so that the ops stream stores it even when it holds (or held)
// a request of the same id: a client resending the same event outside the
// duplicate window.
func (b *busBundle) publishRaw(t testing.TB, verb, id string) {
	t.Helper()
	ev, err := bus.EventBuilder{Source: "/test"}.Request(verb, "", "", "", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	ev.SetID(id)
	m, err := bus.Encode(b.res.Subjects.Op(verb), ev, bus.Structured)
	if err != nil {
		t.Fatal(err)
	}
	m.Header.Del(jetstream.MsgIDHeader)
	if _, err := b.js.PublishMsg(bg(t), m); err != nil {
		t.Fatal(err)
	}
}

// On its last allowed delivery a request has no redelivery left: a worker
// that stops hard under it must answer it (unavailable) instead of handing
// it back into nothing.
func TestWorker_hard_stop_on_last_delivery_answers(t *testing.T) {
	t.Parallel()
	b := setupBus(t, bus.Config{MaxDeliver: 1})
	started := make(chan struct{}, 1)
	h := bus.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := b.startWorker(t, ctx, h, nil, bus.WorkerConfig{})
	id, err := b.client.Submit(bg(t), "op.stuck", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	cancel()
	<-w.Stopped()
	r, ok := b.awaitWithin(t, id, 5*time.Second)
	if !ok {
		t.Fatal("request abandoned on its last delivery was never answered")
	}
	if code := remoteCode(t, r); code != string(ops.CodeUnavailable) {
		t.Fatalf("code %s, want %s", code, ops.CodeUnavailable)
	}
}

// A request that arrives in a fetch while the worker is stopping is handed
// back, except on its last delivery: then it runs (and drains) here.
func TestWorker_graceful_stop_runs_a_last_delivery_it_fetched(t *testing.T) {
	t.Parallel()
	b := setupBus(t, bus.Config{MaxDeliver: 1})
	var calls atomic.Int32
	h := bus.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		calls.Add(1)
		return &ops.Result{Value: json.RawMessage(`"ran"`)}, nil
	})
	w := b.startWorker(t, nil, h, nil, bus.WorkerConfig{FetchWait: 3 * time.Second})
	// Let the worker's first fetch reach the server, then stop it while
	// that fetch is still waiting, and only then publish.
	time.Sleep(300 * time.Millisecond)
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(context.Background()) }()
	time.Sleep(300 * time.Millisecond)
	id, err := b.client.Submit(bg(t), "op.late", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Stop = %v", err)
	}
	r, ok := b.awaitWithin(t, id, 5*time.Second)
	if !ok {
		t.Fatalf("request fetched during the stop on its last delivery was lost (handler ran %d times)", calls.Load())
	}
	mustResult(t, r, nil)
}

// A cancel that arrives after a request was answered must not replace that
// answer when the same request is delivered again.
func TestWorker_cancel_after_answer_keeps_the_stored_answer(t *testing.T) {
	t.Parallel()
	b := setupBus(t, bus.Config{})
	var calls atomic.Int32
	h := bus.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		calls.Add(1)
		return &ops.Result{Value: json.RawMessage(`"ran"`)}, nil
	})
	b.startWorker(t, nil, h, nil, bus.WorkerConfig{})
	ans := b.watchAnswers(t)
	id := "cancel-after-answer"
	b.publishRaw(t, "op.once", id)
	mustResult(t, b.await(t, id), nil)
	if err := b.client.Cancel(bg(t), id); err != nil {
		t.Fatal(err)
	}
	b.publishRaw(t, "op.once", id)
	waitFor(t, 5*time.Second, "second answer", func() bool { return ans.count(id) == 2 })
	ans.mu.Lock()
	second := ans.byID[id][1]
	ans.mu.Unlock()
	r, err := b.codec.DecodeEvent(second.Header, second.Data)
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
	b := setupBus(t, bus.Config{})
	nc, _, res := b.conn(t)
	h := bus.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
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
		w, err := bus.NewWorker(nc, res, b.codec, h, bus.WorkerConfig{
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
			if ids[i], err = b.client.Submit(bg(t), "op.tick", "", nil); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range ids {
			mustResult(t, b.await(t, id), nil)
		}
		if err := w.Stop(bg(t)); err != nil {
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
