package worker_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

// The server drops the worker's connection while a request runs: the
// request is still answered exactly once and acknowledged after the client
// library reconnects, the fetch loop and the cancel subscription keep
// working, and nothing runs twice.
func TestWorker_connection_lost_mid_request(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	nc, err := nats.Connect(b.Srv.ClientURL(), nats.ReconnectWait(50*time.Millisecond), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	res, err := provision.Ensure(bustest.Ctx(t), mustJS(t, nc), b.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan string, 4)
	release := make(chan struct{})
	var calls atomic.Int32
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		calls.Add(1)
		started <- req.Verb
		switch req.Verb {
		case "op.hold":
			<-release
		case "op.wait":
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return &ops.Result{Value: json.RawMessage(`"done"`)}, nil
	})
	w, err := worker.New(nc, res, b.Codec, h, worker.Config{FetchWait: 200 * time.Millisecond, ProgressInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	ans := b.WatchAnswers(t)

	id, err := b.Client.Submit(bustest.Ctx(t), "op.hold", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	cid, err := nc.GetClientID()
	if err != nil {
		t.Fatal(err)
	}
	reconnected := nc.Statistics.Reconnects
	if err := b.Srv.NATSServer().DisconnectClientByID(cid); err != nil {
		t.Fatal(err)
	}
	bustest.WaitFor(t, 10*time.Second, "reconnect", func() bool {
		return nc.IsConnected() && nc.Stats().Reconnects > reconnected
	})
	close(release)
	bustest.MustResult(t, b.Await(t, id), nil)
	bustest.WaitFor(t, 10*time.Second, "request acked", func() bool {
		info, err := b.Res.Workers.Info(bustest.Ctx(t))
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})

	// The worker still fetches, and still hears cancels.
	id2, err := b.Client.Submit(bustest.Ctx(t), "op.wait", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := <-started; v != "op.wait" {
		t.Fatalf("started %s", v)
	}
	if err := b.Client.Cancel(bustest.Ctx(t), id2); err != nil {
		t.Fatal(err)
	}
	if code := bustest.RemoteCode(t, b.Await(t, id2)); code != ops.CodeCanceled {
		t.Fatalf("code %s, want canceled", code)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("handler ran %d times, want 2", n)
	}
	if n := ans.Count(id); n != 1 {
		t.Fatalf("%d answers to the request that ran across the reconnect, want 1", n)
	}
}

func mustJS(t testing.TB, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// A worker whose connection is closed (not merely disconnected) cannot
// fetch again: it stops by itself instead of retrying forever.
func TestWorker_stops_when_its_connection_is_closed(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	nc, _, res := b.Conn(t)
	w, err := worker.New(nc, res, b.Codec, echoHandler(), worker.Config{FetchWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	time.Sleep(200 * time.Millisecond)
	nc.Close()
	select {
	case <-w.Stopped():
	case <-time.After(5 * time.Second):
		t.Fatal("worker still running 5s after its connection was closed")
	}
}
