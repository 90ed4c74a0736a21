package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/nats-io/nats.go/jetstream"
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
