package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

// waitDeadLetter waits for the dead letter of key.
func waitDeadLetter(t *testing.T, b *bustest.Bus, key string) *protocol.DeadLetter {
	t.Helper()
	var d *protocol.DeadLetter
	bustest.WaitFor(t, 15*time.Second, "dead letter "+key, func() bool {
		var err error
		d, err = b.Client.DeadLetter(bustest.Ctx(t), key)
		return err == nil
	})
	return d
}

// opsEmpty waits until the ops stream holds no request.
func opsEmpty(t *testing.T, b *bustest.Bus) {
	t.Helper()
	bustest.WaitFor(t, 10*time.Second, "ops stream empty", func() bool {
		info, err := b.Res.Ops.Info(bustest.Ctx(t))
		return err == nil && info.State.Msgs == 0
	})
}

// A request that fails temporarily on every delivery is answered with its
// last error, dead-lettered with the reason, and not delivered again.
func TestDeadLetter_request_failing_every_delivery(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{MaxDeliver: 3})
	var calls atomic.Int32
	var reasons atomic.Int32
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		calls.Add(1)
		return nil, &ops.Error{Code: ops.CodeProvider, Message: "model overloaded", Temporary: true}
	})
	b.StartWorker(t, nil, h, nil, worker.Config{
		Backoff:      worker.Backoff{10 * time.Millisecond},
		OnDeadLetter: func(ops.Code) { reasons.Add(1) },
	})
	id, err := b.Client.Submit(bustest.Ctx(t), "op.flaky", "", map[string]any{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	r := b.Await(t, id)
	var re *client.RemoteError
	if !errors.As(r.Err(), &re) || re.Code != ops.CodeProvider {
		t.Fatalf("answer: %v", r.Err())
	}
	d := waitDeadLetter(t, b, id)
	if d.Reason != ops.CodeProvider || d.Attempts != 3 || !d.Answered || d.RequestID != id ||
		d.Subject != "lion.ops.op.flaky" || !strings.Contains(d.Error, "every one of its 3 deliveries") ||
		!strings.Contains(d.Error, "model overloaded") {
		t.Fatalf("dead letter %+v", d)
	}
	// The request as published: a readable event with the same id and data.
	ev, err := b.Codec.DecodeEvent(d.Header, d.Data)
	if err != nil || ev.ID() != id || !bytes.Contains(ev.Data(), []byte(`"n":1`)) {
		t.Fatalf("dead letter body: %v %v %s", err, ev, d.Data)
	}
	opsEmpty(t, b)
	time.Sleep(200 * time.Millisecond) // a redelivery would run now
	if n := calls.Load(); n != 3 {
		t.Fatalf("handler ran %d times, want 3", n)
	}
	if n := reasons.Load(); n != 1 {
		t.Fatalf("OnDeadLetter called %d times", n)
	}
}

// Input that cannot be answered (no readable id, no replyto, no
// Nats-Msg-Id) is dead-lettered under its ops stream sequence.
func TestDeadLetter_unanswerable_input(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{MaxPayload: 4096})
	b.StartWorker(t, nil, echoHandler(), nil, worker.Config{})
	event := func(data string) []byte {
		return []byte(`{"specversion":"1.0","id":"req-x","type":"lionbus.op.echo.request","source":"x","data":` + data + `}`)
	}
	tests := []struct {
		name      string
		header    nats.Header
		body      []byte
		code      ops.Code
		retryable bool
	}{
		{"not JSON", nil, []byte("{{{ not json"), protocol.CodeMalformedEvent, false},
		{"no id", nil, []byte(`{"specversion":"1.0","type":"lionbus.op.echo.request","source":"x"}`), protocol.CodeMissingAttribute, false},
		{"unusable id", nil, []byte(`{"specversion":"1.0","id":"a b","type":"lionbus.op.echo.request","source":"x"}`), protocol.CodeInvalidAttribute, true},
		{"over the size limit", nil, event(`{"pad":"` + strings.Repeat("x", 5000) + `"}`), protocol.CodePayloadTooLarge, true},
		{"wrong Content-Type", nats.Header{"Content-Type": {"text/plain"}}, event(`{}`), protocol.CodeMissingAttribute, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := nats.NewMsg("lion.ops.op.echo")
			m.Data = tt.body
			for k, v := range tt.header {
				m.Header[k] = v
			}
			ack, err := b.JS.PublishMsg(bustest.Ctx(t), m)
			if err != nil {
				t.Fatal(err)
			}
			key := protocol.DeadLetterKey("", ack.Sequence)
			d := waitDeadLetter(t, b, key)
			if d.Reason != tt.code || d.Answered || d.RequestID != "" || !bytes.Equal(d.Data, tt.body) || d.OpsSeq != ack.Sequence {
				t.Fatalf("dead letter %+v", d)
			}
			if tt.retryable {
				return // readable as an event: a retry would publish it again
			}
			if _, err := b.Client.RetryDeadLetter(bustest.Ctx(t), key); !errors.Is(err, client.ErrNotRetryable) {
				t.Fatalf("retry of unreadable input: %v", err)
			}
		})
	}
	opsEmpty(t, b)
}

// A poison request, whose workers die on every delivery, is answered
// unavailable and dead-lettered by a live worker when the server gives up
// on it, and removed from the ops stream; the live worker never runs it.
func TestDeadLetter_poison_request_whose_workers_die(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{MaxDeliver: 2, AckWait: time.Second})
	took := make(chan string, 4)
	hang := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		took <- req.ID
		<-ctx.Done()
		return nil, ctx.Err()
	})
	id, err := b.Client.Submit(bustest.Ctx(t), "op.poison", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	a := b.StartService(t, nil, hang, nil, worker.Config{})
	<-took
	second := b.StartService(t, nil, hang, nil, worker.Config{})
	a.Conn().Close() // the first worker dies
	<-took           // the second delivery, the last
	var ran atomic.Int32
	b.StartWorker(t, nil, worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		ran.Add(1)
		return &ops.Result{}, nil
	}), nil, worker.Config{})
	second.Conn().Close() // and so does the second

	r := b.Await(t, id)
	var re *client.RemoteError
	if !errors.As(r.Err(), &re) || re.Code != ops.CodeUnavailable || !strings.Contains(re.Message, "delivered 2 times and never answered") {
		t.Fatalf("answer: %v", r.Err())
	}
	d := waitDeadLetter(t, b, id)
	if d.Reason != ops.CodeUnavailable || d.Attempts != 2 || !d.Answered {
		t.Fatalf("dead letter %+v", d)
	}
	opsEmpty(t, b)
	if n := ran.Load(); n != 0 {
		t.Fatalf("the live worker ran the poison request %d times", n)
	}
}

// A dead letter is listed, and retried as a new request that refers to
// the original; the retry removes it from the stream.
func TestDeadLetter_list_and_retry(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{MaxDeliver: 2})
	var failing atomic.Bool
	failing.Store(true)
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		if failing.Load() {
			return nil, &ops.Error{Code: ops.CodeUnavailable, Message: "tool backend down", Temporary: true}
		}
		return &ops.Result{Value: req.Data}, nil
	})
	b.StartWorker(t, nil, h, nil, worker.Config{Backoff: worker.Backoff{10 * time.Millisecond}})
	var ids []string
	for i := range 3 {
		id, err := b.Client.Submit(bustest.Ctx(t), "op.later", "", map[string]any{"i": i})
		if err != nil {
			t.Fatal(err)
		}
		if r := b.Await(t, id); r.Err() == nil {
			t.Fatal("want a failure")
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		waitDeadLetter(t, b, id)
	}
	list, err := b.Client.DeadLetters(bustest.Ctx(t), 0)
	if err != nil || len(list) != 3 {
		t.Fatalf("list: %v %d", err, len(list))
	}
	for i, d := range list {
		if d.RequestID != ids[i] {
			t.Fatalf("list[%d] = %s, want %s (oldest first)", i, d.RequestID, ids[i])
		}
	}
	if two, _ := b.Client.DeadLetters(bustest.Ctx(t), 2); len(two) != 2 {
		t.Fatalf("limit 2 listed %d", len(two))
	}

	failing.Store(false)
	newID, err := b.Client.RetryDeadLetter(bustest.Ctx(t), ids[1])
	if err != nil || newID == ids[1] {
		t.Fatalf("retry: %q %v", newID, err)
	}
	r := b.Await(t, newID)
	var got map[string]any
	bustest.MustResult(t, r, &got)
	if got["i"] != float64(1) {
		t.Fatalf("retried request answered %v", got)
	}
	if _, err := b.Client.DeadLetter(bustest.Ctx(t), ids[1]); !errors.Is(err, client.ErrNoDeadLetter) {
		t.Fatalf("dead letter still there after retry: %v", err)
	}
	if _, err := b.Client.DeadLetter(bustest.Ctx(t), newID); !errors.Is(err, client.ErrNoDeadLetter) {
		t.Fatalf("the retry was dead-lettered: %v", err)
	}
	list, _ = b.Client.DeadLetters(bustest.Ctx(t), 0)
	if len(list) != 2 {
		t.Fatalf("%d dead letters after a retry, want 2", len(list))
	}
	raw, _ := json.Marshal(list[0].Header)
	if strings.Contains(string(raw), "Lion-Dead-") {
		t.Fatalf("request headers keep dead-letter headers: %s", raw)
	}
}
