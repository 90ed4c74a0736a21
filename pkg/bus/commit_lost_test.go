package bus_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

// loseConnAfterCommit runs the engine of the service in svc and, once a
// communicate has returned its result (it is committed to history), closes
// the service's NATS connection before handing the result back: the worker
// then can neither store the answer nor acknowledge the request, as when
// the connection drops between the commit and the ack. It sends the
// request id on closed.
type loseConnAfterCommit struct {
	svc    *atomic.Pointer[bus.Service]
	closed chan<- string
}

func (h loseConnAfterCommit) Do(ctx context.Context, req ops.Request) (*ops.Result, error) {
	svc := h.svc.Load()
	if svc == nil {
		return nil, errors.New("loseConnAfterCommit: no service yet")
	}
	res, err := svc.Engine().Do(ctx, req)
	if err != nil || req.Verb != "communicate" {
		return res, err
	}
	svc.Conn().Close()
	h.closed <- req.ID
	return res, nil
}

// A worker that committed a communicate and lost its connection before it
// stored the answer and acknowledged: the redelivery goes to another
// worker, which answers from history (replayed) without calling the model,
// so the request has one answer, one commit and one model call.
func TestAcceptance_committed_then_connection_lost_before_ack(t *testing.T) {
	t.Parallel()
	const ackWait = time.Second
	b := bustest.New(t, provision.Config{AckWait: ackWait})
	watch := b.WatchAnswers(t)
	model := countCalls(echo{})
	extra := map[string]ops.Provider{"count": model}

	var svc1 atomic.Pointer[bus.Service]
	closed := make(chan string, 1)
	svc1.Store(b.StartService(t, nil, loseConnAfterCommit{svc: &svc1, closed: closed}, extra, worker.Config{}))
	b.CreateBranch(t, "lost")

	id, err := b.Client.Submit(bustest.Ctx(t), "communicate", "lost", map[string]any{
		"instruction": "committed once", "chat_model": "count:x",
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-closed:
		if got != id {
			t.Fatalf("worker 1 lost its connection after %s, want %s", got, id)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("worker 1 never committed the request")
	}
	lostAt := time.Now()
	if c := bustest.Commits(b.History(t, "lost")); c[id] != 1 {
		t.Fatalf("commits %v after worker 1 returned, want one of %s", c, id)
	}

	// Worker 2 gets the request when its ack wait has passed.
	b.StartWorker(t, nil, nil, extra, worker.Config{})
	answer := b.Await(t, id)
	if got := communicateValue(t, answer); got != "committed once" {
		t.Fatalf("value %q", got)
	}
	res, err := answer.Result()
	if err != nil {
		t.Fatal(err)
	}
	// Replayed also shows that worker 1 stored no answer: worker 2 would
	// have sent that one again.
	if !res.Replayed {
		t.Fatal("answer not replayed: worker 2 ran the request again instead of answering from history")
	}
	t.Logf("answered from history %s after the connection was lost (ack wait %s)", time.Since(lostAt).Round(time.Millisecond), ackWait)
	bustest.WaitFor(t, 10*time.Second, "the request acknowledged", func() bool {
		info, err := b.Res.Workers.Info(bustest.Ctx(t))
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
	watch.Sync(t)
	if n := watch.Count(id); n != 1 {
		t.Fatalf("%d answers, want exactly 1", n)
	}
	if c := bustest.Commits(b.History(t, "lost")); len(c) != 1 || c[id] != 1 {
		t.Fatalf("commits %v, want one of %s", c, id)
	}
	if n := model.total(); n != 1 {
		t.Fatalf("%d model calls, want 1: the redelivery must not call the model again", n)
	}
}
