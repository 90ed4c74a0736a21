package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// TestLease_one_holder_fenced_release_and_age_out: one worker at a time
// holds a branch's lease; the other waits and gets it when it is
// released; a stale release (an older lease) never removes a newer one;
// a lease nobody renews (its worker died) ages out.
func TestLease_one_holder_fenced_release_and_age_out(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{LeaseTTL: time.Second})
	_, js, res := b.Conn(t)
	one := worker.NewLeaserForTest(js, res, "one")
	two := worker.NewLeaserForTest(b.JS, b.Res, "two")
	if one.TTL() != time.Second {
		t.Fatalf("lease TTL %s, want the stream's age limit 1s", one.TTL())
	}
	ctx := bustest.Ctx(t)

	seq1, err := one.Acquire(ctx, "br")
	if err != nil {
		t.Fatal(err)
	}
	// Held: another worker waits.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	if _, err := two.Acquire(short, "br"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second acquire of a held lease: %v, want to wait until its context ends", err)
	}
	cancel()
	// Renewed, it keeps going past its age limit.
	for range 4 {
		time.Sleep(300 * time.Millisecond)
		if seq1, err = one.Renew(ctx, "br", seq1); err != nil {
			t.Fatalf("renew: %v", err)
		}
	}
	// Released: the waiting worker gets it at once.
	got := make(chan uint64, 1)
	go func() {
		s, err := two.Acquire(ctx, "br")
		if err != nil {
			t.Error(err)
		}
		got <- s
	}()
	time.Sleep(20 * time.Millisecond)
	one.Release("br", seq1)
	var seq2 uint64
	select {
	case seq2 = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting worker did not get the released lease")
	}
	// A stale release of the old lease leaves the new one in place, and
	// the old holder cannot renew it.
	one.Release("br", seq1)
	if _, err := one.Renew(ctx, "br", seq1); err == nil {
		t.Fatal("the old holder renewed a lease it no longer holds")
	}
	short, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
	if _, err := one.Acquire(short, "br"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire after a stale release: %v, want the new lease still held", err)
	}
	cancel()
	// The holder dies (stops renewing): the lease ages out.
	start := time.Now()
	if _, err := one.Acquire(ctx, "br"); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("an abandoned lease took %s to age out", waited)
	}
	_ = seq2
}

// Copies of a request without a branch, published without a Nats-Msg-Id
// and delivered to two workers at once, run once: the first copy claims
// the request id's lease until its answer is stored, and the others answer
// with that answer.
func TestClaims_branchless_copies_across_workers_run_once(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	var calls atomic.Int32
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		n := calls.Add(1)
		time.Sleep(300 * time.Millisecond) // long enough for every copy to be delivered meanwhile
		return &ops.Result{Value: json.RawMessage(fmt.Sprintf(`{"call":%d}`, n))}, nil
	})
	for range 2 {
		b.StartWorker(t, nil, h, nil, worker.Config{})
	}
	watch := b.WatchAnswers(t)
	ev, err := protocol.EventBuilder{Source: "/test"}.Request("op.slow", "", "", "", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		m, err := protocol.Encode(b.Res.Subjects.Op("op.slow"), ev, protocol.Structured)
		if err != nil {
			t.Fatal(err)
		}
		m.Header.Del(jetstream.MsgIDHeader)
		if _, err := b.JS.PublishMsg(bustest.Ctx(t), m); err != nil {
			t.Fatal(err)
		}
	}
	stored := b.Await(t, ev.ID())
	bustest.WaitFor(t, 20*time.Second, "every copy acknowledged", func() bool {
		info, err := b.Res.Workers.Info(bustest.Ctx(t))
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
	if n := calls.Load(); n != 1 {
		t.Fatalf("the handler ran %d times for five copies, want 1", n)
	}
	msgs := watch.Msgs(ev.ID())
	for _, m := range msgs {
		if !bytes.Equal(m.Data, msgs[0].Data) {
			t.Fatalf("answers differ: %s vs %s", m.Data, msgs[0].Data)
		}
	}
	if stored.Event.ID() != protocol.AnswerID(ev.ID()) {
		t.Errorf("stored answer %s", stored.Event.ID())
	}
}

// gateModel answers each call once the test lets it (first call only),
// and reports the instruction of every call it starts and how many user
// turns its prompt had.
type gateModel struct {
	started chan string
	release chan struct{}
	once    atomic.Bool
	mu      sync.Mutex
	users   map[string]int
}

func (m *gateModel) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	n := 0
	for _, msg := range call.Messages.All() {
		if msg.Role == history.RoleUser {
			n++
		}
	}
	m.mu.Lock()
	m.users[call.Instruction] = n
	m.mu.Unlock()
	m.started <- call.Instruction
	if m.once.CompareAndSwap(false, true) {
		select {
		case <-m.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &ops.Completion{Text: "done " + call.Instruction}, nil
}

// TestLease_release_notice_wakes_the_waiting_worker: a request waiting
// for a branch lease another worker holds runs as soon as the holder lets
// the lease go, because the holder says so on the branch's LeaseFree
// subject: here the waiting worker polls only once an hour, so the request
// is answered through the notice or not at all. It sees the first
// request's exchange.
func TestLease_release_notice_wakes_the_waiting_worker(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{LeaseTTL: 3 * time.Second})
	model := &gateModel{started: make(chan string, 4), release: make(chan struct{}), users: map[string]int{}}
	providers := map[string]ops.Provider{"gate": model}
	cfg := worker.LeasePollForTest(worker.Config{MaxInFlight: 1}, time.Hour)
	b.StartWorker(t, nil, nil, providers, cfg)
	b.CreateBranch(t, "hand")
	ctx := bustest.Ctx(t)
	data := func(text string) map[string]any {
		return map[string]any{"instruction": text, "chat_model": "gate:x"}
	}
	id1, err := b.Client.Submit(ctx, "communicate", "hand", data("first"))
	if err != nil {
		t.Fatal(err)
	}
	if got := <-model.started; got != "first" {
		t.Fatalf("first model call for %q", got)
	}
	// The first worker's one slot is taken: the second worker gets the
	// next request, and must wait for the lease.
	wants, err := b.NC.SubscribeSync(b.Res.Subjects.LeaseWant("hand"))
	if err != nil {
		t.Fatal(err)
	}
	b.StartWorker(t, nil, nil, providers, cfg)
	id2, err := b.Client.Submit(ctx, "communicate", "hand", data("second"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wants.NextMsg(30 * time.Second); err != nil {
		t.Fatalf("the second worker never asked for the lease: %v", err)
	}
	time.Sleep(50 * time.Millisecond) // for the holder to hear the ask too
	close(model.release)
	for _, id := range []string{id1, id2} {
		if _, err := b.Await(t, id).Result(); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	if model.users["second"] != 2 {
		t.Fatalf("the second request's prompt had %d user turns, want 2 (it must see the first exchange)", model.users["second"])
	}
}

// TestClaims_release_notice_wakes_a_waiting_copy: a copy of a request
// without a branch that waits on another worker for the request id's
// claim is woken when the claim is let go, like a request waiting for a
// branch lease: with a one-hour poll, it is answered through the notice
// (the claim's key, "_req.<id>", holds a dot that the notices must carry)
// or not at all.
func TestClaims_release_notice_wakes_a_waiting_copy(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{LeaseTTL: 3 * time.Second})
	var calls atomic.Int32
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		calls.Add(1)
		time.Sleep(300 * time.Millisecond) // the other copy reaches the other worker meanwhile
		return &ops.Result{Value: json.RawMessage(`"once"`)}, nil
	})
	// One request at a time each: the second copy goes to the other
	// worker while the first runs.
	cfg := worker.LeasePollForTest(worker.Config{MaxInFlight: 1}, time.Hour)
	for range 2 {
		b.StartWorker(t, nil, h, nil, cfg)
	}
	ev, err := protocol.EventBuilder{Source: "/test"}.Request("op.slow", "", "", "", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		m, err := protocol.EncodeCore(b.Res.Subjects.Op("op.slow"), ev, protocol.Structured)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.JS.PublishMsg(bustest.Ctx(t), m); err != nil {
			t.Fatal(err)
		}
	}
	b.Await(t, ev.ID())
	bustest.WaitFor(t, 20*time.Second, "both copies acknowledged", func() bool {
		info, err := b.Res.Workers.Info(bustest.Ctx(t))
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
	if n := calls.Load(); n != 1 {
		t.Fatalf("the handler ran %d times for two copies, want 1", n)
	}
}

// TestLanes_an_ask_during_the_take_is_kept: another worker's ask for a
// lease can arrive while this worker's request is still taking it (the
// asker saw the lease in the stream before this worker recorded it). The
// ask is kept: when the request leaves, the lease goes and the release is
// announced, instead of lingering unannounced while the asker waits for
// its poll.
func TestLanes_an_ask_during_the_take_is_kept(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{LeaseTTL: 3 * time.Second})
	nc, js, res := b.Conn(t)
	lanes := worker.NewLanesForTest(js, res, "w1")
	free := make(chan struct{}, 1)
	sub, err := nc.Subscribe(res.Subjects.LeaseFree("b"), func(*nats.Msg) {
		select {
		case free <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	tk := lanes.Enter("b", 1)
	lanes.Wanted("b") // the ask, before the lease is recorded
	if err := lanes.Hold(bustest.Ctx(t), tk); err != nil {
		t.Fatal(err)
	}
	lanes.Leave(tk)
	select {
	case <-free:
	case <-time.After(10 * time.Second):
		t.Fatal("the lease went without the release the other worker asked for being announced")
	}
	// And the lease is gone: another worker takes it at once.
	other := worker.NewLeaserForTest(js, res, "w2")
	ctx, cancel := context.WithTimeout(bustest.Ctx(t), 5*time.Second)
	defer cancel()
	if _, err := other.Acquire(ctx, "b"); err != nil {
		t.Fatalf("the released lease could not be taken: %v", err)
	}
}
