package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

// TestWorker_deadline: a request's deadline attribute stops its work when
// it passes and answers it timeout, once, without a retry; a request that
// arrives after its deadline is not run; a deadline that is not a time is
// a malformed event.
func TestWorker_deadline(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	var runs atomic.Int32
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		runs.Add(1)
		<-ctx.Done() // works until stopped
		// As the engine answers a deadline: a temporary timeout.
		return nil, &ops.Error{Code: ops.CodeTimeout, Message: "model call timed out", Temporary: true, Err: ctx.Err()}
	})
	b.StartWorker(t, nil, h, nil, worker.Config{})

	tests := []struct {
		name     string
		deadline time.Time
		wantRuns int32
	}{
		{"passes while running", time.Now().Add(300 * time.Millisecond), 1},
		{"passed before it arrived", time.Now().Add(-time.Minute), 0},
	}
	for _, tt := range tests {
		before := runs.Load()
		info0, err := b.Res.Workers.Info(bustest.Ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		r := b.Do(t, "op.slow", "", map[string]any{}, client.WithDeadline(tt.deadline))
		if code := bustest.RemoteCode(t, r); code != ops.CodeTimeout {
			t.Fatalf("%s: answer code %s, want timeout", tt.name, code)
		}
		bustest.WaitFor(t, 10*time.Second, "the request acknowledged", func() bool {
			info, err := b.Res.Workers.Info(bustest.Ctx(t))
			return err == nil && info.NumAckPending == 0 && info.NumPending == 0
		})
		if got := runs.Load() - before; got != tt.wantRuns {
			t.Fatalf("%s: ran %d times, want %d", tt.name, got, tt.wantRuns)
		}
		// Answered on its first delivery: not handed back for a retry.
		// (The consumer sequence counts deliveries, redeliveries too.)
		if info, err := b.Res.Workers.Info(bustest.Ctx(t)); err != nil || info.Delivered.Consumer != info0.Delivered.Consumer+1 {
			t.Fatalf("%s: %v, %d deliveries, want 1", tt.name, err, info.Delivered.Consumer-info0.Delivered.Consumer)
		}
	}

	ev, err := protocol.EventBuilder{Source: "/test"}.Request("op.slow", "", "", "", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	ev.SetExtension(protocol.ExtDeadline, "tomorrow")
	m, err := protocol.Encode(b.Res.Subjects.Op("op.slow"), ev, protocol.Structured)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.JS.PublishMsg(bustest.Ctx(t), m); err != nil {
		t.Fatal(err)
	}
	if code := bustest.RemoteCode(t, b.Await(t, ev.ID())); code != protocol.CodeMalformedEvent {
		t.Fatalf("a deadline that is not a time: %s, want malformed_event", code)
	}
}
