package worker_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

// batches is an EventBatcher that records what the worker asks of it;
// each wait blocks until release is closed.
type batches struct {
	mu      sync.Mutex
	log     []string
	release chan struct{}
	done    chan struct{} // the test ended: every wait returns
	waiting chan string
}

func (b *batches) note(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.log = append(b.log, s)
}

func (b *batches) Open(id string) func(context.Context) error {
	b.note("open " + id)
	return func(ctx context.Context) error {
		b.note("wait " + id)
		b.waiting <- id
		select {
		case <-b.release:
		case <-b.done:
		case <-ctx.Done():
		}
		return nil
	}
}

func (b *batches) entries() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.log...)
}

// The worker opens a batch for each request before its handler runs, and
// acknowledges the request only once the batch's wait returned, the answer
// being stored meanwhile; a delivery handed back for a retry closes its
// batch too.
func TestWorker_events_batch_is_awaited_before_the_ack(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	ev := &batches{release: make(chan struct{}), done: make(chan struct{}), waiting: make(chan string, 4)}
	var calls int
	var mu sync.Mutex
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		ev.note("handler")
		if first {
			return nil, &ops.Error{Code: ops.CodeUnavailable, Temporary: true, Message: "not yet"}
		}
		return &ops.Result{Value: json.RawMessage(`"done"`)}, nil
	})
	// Built by hand: bus.Start gives a worker its own signal sink.
	nc, _, res := b.Conn(t)
	w, err := worker.New(nc, res, b.Codec, h, worker.Config{Events: ev, Backoff: worker.Backoff{300 * time.Millisecond}, FetchWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(ev.done)
		_ = w.Stop(context.Background())
	})
	id, err := b.Client.Submit(bustest.Ctx(t), "op.batch", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The first delivery fails temporarily: its batch's wait is called
	// (nothing waits for it to return), and the request is retried.
	waitChan(t, ev.waiting, "the first delivery's wait")
	// The second answers; its wait blocks, and the request stays
	// unacknowledged meanwhile, its answer stored.
	waitChan(t, ev.waiting, "the second delivery's wait")
	bustest.MustResult(t, b.Await(t, id), nil)
	time.Sleep(100 * time.Millisecond) // an ack, if it were to come, would come now
	if info, err := b.Res.Workers.Info(bustest.Ctx(t)); err != nil || info.NumAckPending != 1 {
		t.Fatalf("ack pending %d (%v) while the events were awaited, want 1", info.NumAckPending, err)
	}
	close(ev.release)
	bustest.WaitFor(t, 10*time.Second, "the request acknowledged", func() bool {
		info, err := b.Res.Workers.Info(bustest.Ctx(t))
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
	want := []string{"open " + id, "handler", "wait " + id, "open " + id, "handler", "wait " + id}
	got := ev.entries()
	if len(got) != len(want) {
		t.Fatalf("batches %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("batches %q, want %q", got, want)
		}
	}
}

func waitChan[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}
