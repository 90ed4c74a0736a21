package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// echoHandler answers every request with its data as the value.
func echoHandler() worker.HandlerFunc {
	return func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		return &ops.Result{Value: req.Data, BranchID: req.BranchID}, nil
	}
}

func TestWorker_answers_and_acks(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, echoHandler(), nil, worker.Config{})
	r := b.Do(t, "op.echo", "", map[string]any{"x": 1})
	var got map[string]any
	bustest.MustResult(t, r, &got)
	if got["x"] != float64(1) || r.Type != "lionbus.op.echo.result" {
		t.Fatalf("answer %s %v", r.Type, got)
	}
	if rid, _ := r.Event.Extensions()[protocol.ExtRequestID].(string); rid == "" {
		t.Fatal("answer has no requestid")
	}
	// Acked: the work queue is empty and nothing is pending.
	bustest.WaitFor(t, 5*time.Second, "request acked", func() bool {
		info, err := b.Res.Workers.Info(bustest.Ctx(t))
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
}

func TestWorker_retries_temporary_failures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		failures   int // attempts that fail temporarily
		maxDeliver int
		wantCode   ops.Code // "" for success
		wantCalls  int
	}{
		{"succeeds on third attempt", 2, 5, "", 3},
		{"gives up after max deliver", 10, 3, ops.CodeProvider, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := bustest.New(t, provision.Config{MaxDeliver: tt.maxDeliver})
			var calls atomic.Int32
			attempts := make(chan int, 20)
			h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
				n := calls.Add(1)
				attempts <- req.Attempt
				if int(n) <= tt.failures {
					return nil, &ops.Error{Code: ops.CodeProvider, Message: "overloaded", Temporary: true}
				}
				return &ops.Result{Value: json.RawMessage(`"ok"`)}, nil
			})
			b.StartWorker(t, nil, h, nil, worker.Config{Backoff: worker.Backoff{10 * time.Millisecond}})
			r := b.Do(t, "op.flaky", "", nil)
			if tt.wantCode == "" {
				bustest.MustResult(t, r, nil)
			} else if code := bustest.RemoteCode(t, r); code != tt.wantCode {
				t.Fatalf("code %s, want %s", code, tt.wantCode)
			}
			if got := int(calls.Load()); got != tt.wantCalls {
				t.Fatalf("handler ran %d times, want %d", got, tt.wantCalls)
			}
			for i := 1; i <= tt.wantCalls; i++ {
				if a := <-attempts; a != i {
					t.Fatalf("call %d saw attempt %d", i, a)
				}
			}
		})
	}
}

func TestWorker_final_errors_and_panics_are_answered(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	var calls atomic.Int32
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		calls.Add(1)
		switch req.Verb {
		case "op.panic":
			panic("boom")
		case "op.final":
			return nil, ops.Errorf(ops.CodeInvalidRequest, "no good")
		case "op.plain":
			return nil, errors.New("disk on fire")
		case "op.missing":
			return nil, fmt.Errorf("load: %w", history.ErrBranchNotFound)
		}
		return &ops.Result{Value: json.RawMessage(`true`)}, nil
	})
	b.StartWorker(t, nil, h, nil, worker.Config{})
	tests := []struct {
		verb string
		code ops.Code
	}{
		{"op.panic", ops.CodeInternal},
		{"op.final", ops.CodeInvalidRequest},
		{"op.plain", ops.CodeInternal},
		{"op.missing", ops.CodeBranchNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.verb, func(t *testing.T) {
			before := calls.Load()
			r := b.Do(t, tt.verb, "", nil)
			if code := bustest.RemoteCode(t, r); code != tt.code {
				t.Fatalf("code %s, want %s", code, tt.code)
			}
			if got := calls.Load() - before; got != 1 {
				t.Fatalf("handler ran %d times, want 1 (final errors are not retried)", got)
			}
		})
	}
	// Still serving.
	bustest.MustResult(t, b.Do(t, "op.ok", "", nil), nil)
}

func TestWorker_bounds_in_flight(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	const maxInFlight, requests = 3, 24
	var running, peak atomic.Int32
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		return &ops.Result{Value: json.RawMessage(`1`)}, nil
	})
	b.StartWorker(t, nil, h, nil, worker.Config{MaxInFlight: maxInFlight})
	ids := make([]string, requests)
	for i := range ids {
		id, err := b.Client.Submit(bustest.Ctx(t), "op.slow", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	for _, id := range ids {
		bustest.MustResult(t, b.Await(t, id), nil)
	}
	if p := peak.Load(); p > maxInFlight || p < 1 {
		t.Fatalf("peak concurrency %d, want 1..%d", p, maxInFlight)
	}
}

func TestWorker_progress_keeps_long_requests_from_redelivery(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{AckWait: 500 * time.Millisecond})
	var calls atomic.Int32
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		calls.Add(1)
		select {
		case <-time.After(1500 * time.Millisecond): // three ack waits
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &ops.Result{Value: json.RawMessage(`"done"`)}, nil
	})
	b.StartWorker(t, nil, h, nil, worker.Config{ProgressInterval: 100 * time.Millisecond})
	b.StartWorker(t, nil, h, nil, worker.Config{ProgressInterval: 100 * time.Millisecond})
	bustest.MustResult(t, b.Do(t, "op.long", "", nil), nil)
	if n := calls.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want 1", n)
	}
}

func TestWorker_client_cancel(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	started := make(chan string, 1)
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		started <- req.ID
		<-ctx.Done()
		return nil, ctx.Err()
	})
	b.StartWorker(t, nil, h, nil, worker.Config{})
	id, err := b.Client.Submit(bustest.Ctx(t), "op.wait", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := <-started; got != id {
		t.Fatalf("started %s, want %s", got, id)
	}
	if err := b.Client.Cancel(bustest.Ctx(t), id); err != nil {
		t.Fatal(err)
	}
	if code := bustest.RemoteCode(t, b.Await(t, id)); code != ops.CodeCanceled {
		t.Fatalf("code %s, want canceled", code)
	}
}

func TestWorker_stop_drains_in_flight_work(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		started <- struct{}{}
		<-release
		return &ops.Result{Value: json.RawMessage(`"finished"`)}, nil
	})
	w := b.StartWorker(t, nil, h, nil, worker.Config{})
	id, err := b.Client.Submit(bustest.Ctx(t), "op.drain", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	stopErr := make(chan error, 1)
	go func() { stopErr <- w.Stop(bustest.Ctx(t)) }()
	select {
	case <-w.Stopped():
		t.Fatal("worker stopped before its in-flight request finished")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-stopErr; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	<-w.Stopped()
	bustest.MustResult(t, b.Await(t, id), nil)
	if err := w.Stop(bustest.Ctx(t)); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestWorker_stop_times_out_and_hands_work_back(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	var mu sync.Mutex
	blocked := true
	started := make(chan struct{}, 4)
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		mu.Lock()
		block := blocked
		blocked = false
		mu.Unlock()
		if block {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return &ops.Result{Value: json.RawMessage(`"second worker"`)}, nil
	})
	w := b.StartWorker(t, nil, h, nil, worker.Config{DrainTimeout: 100 * time.Millisecond})
	id, err := b.Client.Submit(bustest.Ctx(t), "op.stuck", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if err := w.Stop(bustest.Ctx(t)); !errors.Is(err, worker.ErrDrainTimeout) {
		t.Fatalf("Stop = %v, want ErrDrainTimeout", err)
	}
	b.StartWorker(t, nil, h, nil, worker.Config{})
	var v string
	bustest.MustResult(t, b.Await(t, id), &v)
	if v != "second worker" {
		t.Fatalf("value %q", v)
	}
}

func TestWorker_reply_to_custom_subject(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, echoHandler(), nil, worker.Config{})
	sub, err := b.NC.SubscribeSync("app.inbox.42")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	id, err := b.Client.Submit(bustest.Ctx(t), "op.echo", "", map[string]int{"n": 42}, client.WithReplyTo("app.inbox.42"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("no answer on the replyto subject: %v", err)
	}
	ev, err := b.Codec.Decode(m)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type() != "lionbus.op.echo.result" || ev.Extensions()[protocol.ExtRequestID] != id {
		t.Fatalf("answer %s for %v", ev.Type(), ev.Extensions()[protocol.ExtRequestID])
	}
	// And it is stored under the request id.
	bustest.MustResult(t, b.Await(t, id), nil)
}

// TestWorker_resent_request_gets_stored_answer: a request sent again after
// it was answered gets the stored answer on its replyto, as it was sent the
// first time, without the stream metadata of the stored copy.
func TestWorker_resent_request_gets_stored_answer(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, echoHandler(), nil, worker.Config{})
	sub, err := b.NC.SubscribeSync("app.inbox.7")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	ev, err := protocol.EventBuilder{}.Request("op.echo", "", "app.inbox.7", "", map[string]int{"n": 7})
	if err != nil {
		t.Fatal(err)
	}
	var answers []*nats.Msg
	for i, msgID := range []string{ev.ID(), ev.ID() + "-later"} {
		m, err := protocol.Encode(b.Res.Subjects.Op("op.echo"), ev, protocol.Structured)
		if err != nil {
			t.Fatal(err)
		}
		m.Header.Set(jetstream.MsgIDHeader, msgID)
		if _, err := b.JS.PublishMsg(bustest.Ctx(t), m); err != nil {
			t.Fatal(err)
		}
		a, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("send %d: no answer on the replyto subject: %v", i+1, err)
		}
		answers = append(answers, a)
	}
	if string(answers[0].Data) != string(answers[1].Data) {
		t.Fatalf("second answer differs:\n%s\n%s", answers[0].Data, answers[1].Data)
	}
	for _, k := range []string{jetstream.StreamHeader, jetstream.SequenceHeader, jetstream.SubjectHeader, jetstream.TimeStampHeaer} {
		if v := answers[1].Header.Get(k); v != "" {
			t.Errorf("resent answer carries %s: %s", k, v)
		}
	}
}

// TestWorker_replyto_cannot_replace_another_answer: the results stream
// keeps one answer per reply subject, so a request naming another request's
// reply subject as its replyto is refused and that answer stays as it was;
// a replyto outside the prefix gets the answer as well as the stored copy.
func TestWorker_replyto_cannot_replace_another_answer(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, echoHandler(), nil, worker.Config{})
	first := b.Do(t, "op.echo", "", map[string]any{"who": "first"})
	bustest.MustResult(t, first, nil)
	firstID := first.Event.Extensions()[protocol.ExtRequestID].(string)

	tests := []struct {
		name     string
		replyTo  string
		wantCode ops.Code // "" for a result
	}{
		{"another request's reply subject", b.Res.Subjects.Reply(firstID), protocol.CodeInvalidAttribute},
		{"under the reply prefix", b.Res.Subjects.Reply(firstID) + ".x", protocol.CodeInvalidAttribute},
		{"inbox", "_INBOX.replyto-test", ""},
		{"application subject", "app.answers", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sub *nats.Subscription
			if tt.wantCode == "" {
				var err error
				if sub, err = b.NC.SubscribeSync(tt.replyTo); err != nil {
					t.Fatal(err)
				}
				defer sub.Unsubscribe()
				if err := b.NC.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			// Published directly: the Client refuses such a replyto itself.
			ev, err := protocol.EventBuilder{}.Request("op.echo", "", tt.replyTo, "", map[string]any{"who": "second"})
			if err != nil {
				t.Fatal(err)
			}
			id := ev.ID()
			m, err := protocol.Encode(b.Res.Subjects.Op("op.echo"), ev, protocol.Structured)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.JS.PublishMsg(bustest.Ctx(t), m); err != nil {
				t.Fatal(err)
			}
			r := b.Await(t, id)
			if tt.wantCode != "" {
				if code := bustest.RemoteCode(t, r); code != tt.wantCode {
					t.Fatalf("code = %s, want %s", code, tt.wantCode)
				}
				if msg := r.Err().Error(); !strings.Contains(msg, "only the request's own "+b.Res.Subjects.Reply(id)) {
					t.Errorf("message %q does not say which reply subject is allowed", msg)
				}
			} else {
				bustest.MustResult(t, r, nil)
				m, err := sub.NextMsg(10 * time.Second)
				if err != nil {
					t.Fatalf("no answer on %s: %v", tt.replyTo, err)
				}
				ev, err := b.Codec.Decode(m)
				if err != nil {
					t.Fatal(err)
				}
				if ev.ID() != r.Event.ID() {
					t.Errorf("answer on %s is %s, stored answer is %s", tt.replyTo, ev.ID(), r.Event.ID())
				}
			}
			again, err := b.Client.Result(bustest.Ctx(t), firstID)
			if err != nil {
				t.Fatal(err)
			}
			if again.Event.ID() != first.Event.ID() {
				t.Fatalf("answer of %s replaced: %s (%s), was %s", firstID, again.Event.ID(), again.Data, first.Event.ID())
			}
		})
	}
}

func TestWorker_config_errors(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	tests := []struct {
		name string
		cfg  worker.Config
		h    worker.Handler
	}{
		{"nil handler", worker.Config{}, nil},
		{"negative in flight", worker.Config{MaxInFlight: -1}, echoHandler()},
		{"negative backoff", worker.Config{Backoff: worker.Backoff{-time.Second}}, echoHandler()},
		{"progress slower than the ack wait", worker.Config{ProgressInterval: provision.DefaultAckWait}, echoHandler()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := worker.New(b.NC, b.Res, b.Codec, tt.h, tt.cfg); !errors.Is(err, worker.ErrInvalidConfig) {
				t.Fatalf("err = %v, want ErrInvalidConfig", err)
			}
		})
	}
	w, err := worker.New(b.NC, b.Res, b.Codec, echoHandler(), worker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(bustest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(bustest.Ctx(t)); !errors.Is(err, worker.ErrWorkerStarted) {
		t.Fatalf("second Start = %v", err)
	}
	if err := w.Stop(bustest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
}

func TestBackoff_Delay(t *testing.T) {
	t.Parallel()
	b := worker.Backoff{time.Second, 2 * time.Second, 5 * time.Second}
	tests := []struct {
		attempt int
		want    time.Duration
	}{{0, time.Second}, {1, time.Second}, {2, 2 * time.Second}, {3, 5 * time.Second}, {9, 5 * time.Second}}
	for _, tt := range tests {
		if got := b.Delay(tt.attempt); got != tt.want {
			t.Errorf("Delay(%d) = %s, want %s", tt.attempt, got, tt.want)
		}
	}
	if got := (worker.Backoff{}).Delay(3); got != 0 {
		t.Errorf("empty schedule Delay = %s", got)
	}
}

// BenchmarkRoundTrip measures request→result through one worker running the
// real engine with the scripted echo model: Submit, the worker's decode,
// branch load, model call, history append, answer, and Await. Each
// communicate clears the branch's messages so that the branch stays the
// same size whatever b.N is.
func BenchmarkRoundTrip(b *testing.B) {
	for _, par := range []int{1, 8} {
		b.Run(fmt.Sprintf("concurrent=%d", par), func(b *testing.B) {
			bb := bustest.New(b, provision.Config{})
			bb.StartWorker(b, nil, nil, nil, worker.Config{MaxInFlight: 8, FetchWait: time.Second})
			for i := range par {
				bb.CreateBranch(b, fmt.Sprintf("bench-%d", i))
			}
			ctx := context.Background()
			data := map[string]any{"instruction": "ping", "clear_messages": true}
			var next atomic.Int32
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			per := b.N / par
			for g := range par {
				n := per
				if g == 0 {
					n += b.N % par
				}
				branch := fmt.Sprintf("bench-%d", next.Add(1)-1)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range n {
						r, err := bb.Client.Do(ctx, "communicate", branch, data)
						if err != nil {
							b.Error(err)
							return
						}
						if err := r.Err(); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

func TestWorker_lifecycle(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	newWorker := func() *worker.Worker {
		w, err := worker.New(b.NC, b.Res, b.Codec, echoHandler(), worker.Config{FetchWait: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}

	// Stop before Start: nothing to drain, and it cannot start afterwards.
	w := newWorker()
	if err := w.Stop(bustest.Ctx(t)); err != nil {
		t.Fatalf("Stop before Start: %v", err)
	}
	<-w.Stopped()
	if err := w.Start(bustest.Ctx(t)); !errors.Is(err, worker.ErrWorkerStarted) {
		t.Fatalf("Start after Stop = %v, want ErrWorkerStarted", err)
	}

	// Concurrent Stops of a busy worker all return nil once it drained.
	w = newWorker()
	if err := w.Start(bustest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	bustest.MustResult(t, b.Do(t, "op.echo", "", nil), nil)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- w.Stop(bustest.Ctx(t))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Stop: %v", err)
		}
	}
	<-w.Stopped()

	// Cancelling the Start context stops the worker too.
	w = newWorker()
	ctx, cancel := context.WithCancel(context.Background())
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-w.Stopped():
	case <-time.After(10 * time.Second):
		t.Fatal("worker did not stop after its context was cancelled")
	}
}

func TestWorker_cancel_of_a_queued_request(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	release := make(chan struct{})
	started := make(chan string, 2)
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		started <- req.ID
		if req.Verb == "op.block" {
			<-release
		}
		return &ops.Result{Value: json.RawMessage(`"ran"`)}, nil
	})
	// One slot: the second request waits in the stream while the first runs.
	b.StartWorker(t, nil, h, nil, worker.Config{MaxInFlight: 1})
	first, err := b.Client.Submit(bustest.Ctx(t), "op.block", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := <-started; got != first {
		t.Fatalf("started %s", got)
	}
	queued, err := b.Client.Submit(bustest.Ctx(t), "op.quick", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Client.Cancel(bustest.Ctx(t), queued); err != nil {
		t.Fatal(err)
	}
	close(release)
	bustest.MustResult(t, b.Await(t, first), nil)
	if code := bustest.RemoteCode(t, b.Await(t, queued)); code != ops.CodeCanceled {
		t.Fatalf("code %s, want canceled", code)
	}
	select {
	case id := <-started:
		t.Fatalf("the cancelled request %s ran", id)
	default:
	}
}
