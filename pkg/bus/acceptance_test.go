package bus_test

// Acceptance tests of issue 2, against the embedded server, with the real
// ops.Engine, the NATS store and the scripted provider.

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
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
)

// modelCalls wraps a model provider and counts the calls made to it, by
// request id, before passing them on.
type modelCalls struct {
	p    ops.Provider
	mu   sync.Mutex
	byID map[string]int
}

// countCalls returns p counting its calls.
func countCalls(p ops.Provider) *modelCalls { return &modelCalls{p: p, byID: map[string]int{}} }

func (m *modelCalls) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	m.mu.Lock()
	m.byID[call.RequestID]++
	m.mu.Unlock()
	return m.p.Complete(ctx, call)
}

// of returns how many calls were made for request id.
func (m *modelCalls) of(id string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byID[id]
}

// total returns how many calls were made.
func (m *modelCalls) total() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.byID {
		n += c
	}
	return n
}

// communicateValue returns the value of a communicate result (the echo).
func communicateValue(t testing.TB, r *client.Reply) string {
	t.Helper()
	bustest.CheckSchema(t, r)
	var v string
	bustest.MustResult(t, r, &v)
	return v
}

func TestAcceptance_structured_and_binary_requests_get_results(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	b.CreateBranch(t, "modes")

	tests := []struct {
		name    string
		publish func(t *testing.T, id, instruction string)
	}{
		{"structured", func(t *testing.T, id, instruction string) {
			if _, err := b.Client.Submit(bustest.Ctx(t), "communicate", "modes", map[string]any{"instruction": instruction}, client.WithID(id)); err != nil {
				t.Fatal(err)
			}
		}},
		{"binary", func(t *testing.T, id, instruction string) {
			if _, err := b.Client.Submit(bustest.Ctx(t), "communicate", "modes", map[string]any{"instruction": instruction}, client.WithID(id), client.WithBinary()); err != nil {
				t.Fatal(err)
			}
		}},
		{"plain JSON without content type", func(t *testing.T, id, instruction string) {
			body := fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":"/cli","type":"lionbus.communicate.request","branchid":"modes","data":{"instruction":%q}}`, id, instruction)
			if err := b.NC.Publish(b.Res.Subjects.Op("communicate"), []byte(body)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := fmt.Sprintf("mode-%d", i)
			instruction := "hello in " + tt.name
			sub, err := b.NC.SubscribeSync(b.Res.Subjects.Reply(id))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = sub.Unsubscribe() }()
			if err := b.NC.Flush(); err != nil {
				t.Fatal(err)
			}
			tt.publish(t, id, instruction)

			m, err := sub.NextMsg(10 * time.Second)
			if err != nil {
				t.Fatalf("no answer on %s: %v", b.Res.Subjects.Reply(id), err)
			}
			ev, err := b.Codec.Decode(m)
			if err != nil {
				t.Fatalf("answer is not a CloudEvent: %v", err)
			}
			onWire := &client.Reply{Event: *ev, Type: ev.Type(), Data: ev.Data()}
			if onWire.Type != "lionbus.communicate.result" {
				t.Fatalf("answer type %s: %s", onWire.Type, onWire.Data)
			}
			if got := communicateValue(t, onWire); got != instruction {
				t.Fatalf("value %q, want the echo %q", got, instruction)
			}
			if ev.Extensions()[protocol.ExtRequestID] != id || ev.Extensions()[protocol.ExtBranchID] != "modes" {
				t.Fatalf("answer extensions %v", ev.Extensions())
			}

			// Read again later by id. The answer reached subscribers before
			// the results stream stored it, so this waits for the stored
			// copy (Await looks again after a few milliseconds).
			later, err := b.Client.Await(bustest.Ctx(t), id)
			if err != nil {
				t.Fatalf("Await(%s): %v", id, err)
			}
			if later.Event.ID() != ev.ID() || communicateValue(t, later) != instruction {
				t.Fatalf("stored answer %s differs from the one received %s", later.Event.ID(), ev.ID())
			}
		})
	}
	if _, err := b.Client.Result(bustest.Ctx(t), "never-sent"); !errors.Is(err, client.ErrNoResult) {
		t.Fatalf("Result of an unknown id: %v, want ErrNoResult", err)
	}
}

// countingHandler counts the requests h runs.
type countingHandler struct {
	h     worker.Handler
	runs  atomic.Int64
	mu    sync.Mutex
	perID map[string]int
}

func countRuns(h worker.Handler) *countingHandler {
	return &countingHandler{h: h, perID: map[string]int{}}
}

func (c *countingHandler) Do(ctx context.Context, req ops.Request) (*ops.Result, error) {
	c.runs.Add(1)
	c.mu.Lock()
	c.perID[req.ID]++
	c.mu.Unlock()
	return c.h.Do(ctx, req)
}

func (c *countingHandler) ran(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.perID[id]
}

func TestAcceptance_two_workers_share_a_burst(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	const branches, requests = 10, 200
	var handlers []*countingHandler
	model := countCalls(echo{})
	for range 2 {
		_, js, res := b.Conn(t)
		h := countRuns(bustest.NewEngine(t, js, res, map[string]ops.Provider{"count": model}))
		handlers = append(handlers, h)
		b.StartWorker(t, nil, h, nil, worker.Config{})
	}
	for i := range branches {
		b.CreateBranch(t, fmt.Sprintf("burst-%d", i))
	}
	watch := b.WatchAnswers(t)
	before0, before1 := handlers[0].runs.Load(), handlers[1].runs.Load()

	ids := make([]string, requests)
	for i := range ids {
		branch := fmt.Sprintf("burst-%d", i%branches)
		id, err := b.Client.Submit(bustest.Ctx(t), "communicate", branch, map[string]any{"instruction": fmt.Sprintf("n%d", i), "chat_model": "count:x"})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	for i, id := range ids {
		r := b.Await(t, id)
		if got, want := communicateValue(t, r), fmt.Sprintf("n%d", i); got != want {
			t.Fatalf("request %d answered %q, want %q", i, got, want)
		}
	}
	bustest.WaitFor(t, 10*time.Second, "200 answers", func() bool { n, _ := watch.Total(); return n >= requests })
	bustest.WaitFor(t, 10*time.Second, "every request acknowledged", func() bool {
		info, err := b.Res.Workers.Info(bustest.Ctx(t))
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
	for _, id := range ids {
		watch.Sync(t)
		if n := watch.Count(id); n != 1 {
			t.Errorf("request %s answered %d times, want exactly 1", id, n)
		}
	}
	if nIDs, nMsgs := watch.Total(); nIDs != requests || nMsgs != requests {
		t.Errorf("%d answers for %d ids, want %d for %d", nMsgs, nIDs, requests, requests)
	}
	ran0, ran1 := handlers[0].runs.Load()-before0, handlers[1].runs.Load()-before1
	// More runs than requests are legitimate only as retries of temporary
	// failures (logged); the answers and commits above are exact.
	if ran0+ran1 < requests || ran0 == 0 || ran1 == 0 {
		t.Errorf("workers ran %d and %d requests; want both to share %d", ran0, ran1, requests)
	}
	// Every run called the model once: none found its request committed,
	// so each request made one call per run before its commit.
	for _, id := range ids {
		if n, runs := model.of(id), handlers[0].ran(id)+handlers[1].ran(id); n != runs || n < 1 {
			t.Errorf("request %s: %d model calls in %d runs, want one per run", id, n, runs)
		}
	}
	if n := model.total(); n != int(ran0+ran1) {
		t.Errorf("%d model calls for %d runs", n, ran0+ran1)
	}
	// Every request committed exactly once to its branch.
	for i := range branches {
		commits := bustest.Commits(b.History(t, fmt.Sprintf("burst-%d", i)))
		if len(commits) != requests/branches {
			t.Errorf("branch burst-%d has %d commits, want %d", i, len(commits), requests/branches)
		}
		for id, n := range commits {
			if n != 1 {
				t.Errorf("request %s committed %d times", id, n)
			}
		}
	}
}

// gate is a model provider that blocks every call until its context ends,
// signalling entered first. It stands for a worker that hangs mid-request.
type gate struct{ entered chan string }

func (g gate) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	g.entered <- call.RequestID
	<-ctx.Done()
	return nil, ctx.Err()
}

// echo answers like scripted:echo under any provider name.
type echo struct{}

func (echo) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	call.Model = history.ModelRef{Provider: scripted.Name, Model: "echo"}
	return scripted.New().Complete(ctx, call)
}

// hangAfter runs the engine, then, for a communicate, hangs until its
// context ends without answering: a worker that committed its operation and died before it could
// publish the result.
type hangAfter struct {
	h       worker.Handler
	entered chan string
}

func (h hangAfter) Do(ctx context.Context, req ops.Request) (*ops.Result, error) {
	res, err := h.h.Do(ctx, req)
	if err != nil || req.Verb != "communicate" {
		return res, err
	}
	h.entered <- req.ID
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestAcceptance_stopped_worker_request_is_redelivered(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// stop makes the first worker stop mid-request without acking.
		stop func(cancel context.CancelFunc, nc *nats.Conn)
		// committed: the first worker hangs after committing to history
		// rather than in the model call.
		committed bool
	}{
		{"context cancelled", func(cancel context.CancelFunc, _ *nats.Conn) { cancel() }, false},
		{"connection lost", func(_ context.CancelFunc, nc *nats.Conn) { nc.Close() }, false},
		{"context cancelled after commit", func(cancel context.CancelFunc, _ *nats.Conn) { cancel() }, true},
		{"connection lost after commit", func(_ context.CancelFunc, nc *nats.Conn) { nc.Close() }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := bustest.New(t, provision.Config{AckWait: time.Second})
			watch := b.WatchAnswers(t)

			// Worker 1 hangs until the request is cancelled: in its "model",
			// or after the engine committed.
			entered := make(chan string, 1)
			nc1, js1, res1 := b.Conn(t)
			var h1 *countingHandler
			var model1 *modelCalls
			if tt.committed {
				model1 = countCalls(echo{})
				h1 = countRuns(hangAfter{h: bustest.NewEngine(t, js1, res1, map[string]ops.Provider{"hang": model1}), entered: entered})
			} else {
				model1 = countCalls(gate{entered: entered})
				h1 = countRuns(bustest.NewEngine(t, js1, res1, map[string]ops.Provider{"hang": model1}))
			}
			w1, err := worker.New(nc1, res1, b.Codec, h1, worker.Config{FetchWait: 200 * time.Millisecond, DrainTimeout: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ctx1, cancel1 := context.WithCancel(context.Background())
			defer cancel1()
			if err := w1.Start(ctx1); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = w1.Stop(context.Background()) })

			b.CreateBranch(t, "redeliver")
			id, err := b.Client.Submit(bustest.Ctx(t), "communicate", "redeliver", map[string]any{
				"instruction": "survive", "chat_model": "hang:model",
			})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-entered:
				if got != id {
					t.Fatalf("worker 1 runs %s, want %s", got, id)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("worker 1 never started the request")
			}

			// Worker 2's "hang" model answers.
			h2 := countRuns(nil)
			_, js2, res2 := b.Conn(t)
			model2 := countCalls(echo{})
			h2.h = bustest.NewEngine(t, js2, res2, map[string]ops.Provider{"hang": model2})
			b.StartWorker(t, nil, h2, nil, worker.Config{})

			tt.stop(cancel1, nc1)

			answer := b.Await(t, id)
			if got := communicateValue(t, answer); got != "survive" {
				t.Fatalf("value %q", got)
			}
			if res, _ := answer.Result(); res.Replayed != tt.committed {
				t.Fatalf("replayed = %v; want %v (answered from history only when committed before)", res.Replayed, tt.committed)
			}
			if h2.ran(id) != 1 || h1.ran(id) != 1 {
				t.Fatalf("runs: worker 1 %d, worker 2 %d; want 1 and 1", h1.ran(id), h2.ran(id))
			}
			// Worker 2 calls the model only when worker 1 did not commit:
			// a committed request is answered from history.
			want2 := 1
			if tt.committed {
				want2 = 0
			}
			if model1.of(id) != 1 || model2.of(id) != want2 {
				t.Fatalf("model calls: worker 1 %d, worker 2 %d; want 1 and %d", model1.of(id), model2.of(id), want2)
			}
			// Nothing is left to deliver, so no other answer can come.
			bustest.WaitFor(t, 10*time.Second, "the request acknowledged", func() bool {
				info, err := b.Res.Workers.Info(bustest.Ctx(t))
				return err == nil && info.NumAckPending == 0 && info.NumPending == 0
			})
			watch.Sync(t)
			if n := watch.Count(id); n != 1 {
				t.Fatalf("%d answers, want exactly 1", n)
			}
			evs := b.History(t, "redeliver")
			if c := bustest.Commits(evs); len(c) != 1 || c[id] != 1 {
				t.Fatalf("commits %v, want one for %s", c, id)
			}
			var texts []string
			for _, ev := range evs {
				for _, m := range ev.Messages {
					texts = append(texts, string(m.Kind))
				}
			}
			if strings.Join(texts, ",") != "system,instruction,assistant_response" {
				t.Fatalf("history messages %v, want the system message, one instruction and one response", texts)
			}
		})
	}
}

func TestAcceptance_same_event_published_twice_runs_once(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	h := countRuns(nil)
	model := countCalls(echo{})
	_, js, res := b.Conn(t)
	h.h = bustest.NewEngine(t, js, res, map[string]ops.Provider{"count": model})
	b.StartWorker(t, nil, h, nil, worker.Config{})
	b.CreateBranch(t, "twice")

	ev, err := protocol.EventBuilder{Source: "/test"}.Request("communicate", "twice", "", "", map[string]any{"instruction": "once", "chat_model": "count:x"})
	if err != nil {
		t.Fatal(err)
	}
	id := ev.ID()
	msg, err := protocol.Encode(b.Res.Subjects.Op("communicate"), ev, protocol.Structured)
	if err != nil {
		t.Fatal(err)
	}
	ack1, err := b.JS.PublishMsg(bustest.Ctx(t), msg)
	if err != nil {
		t.Fatal(err)
	}
	msg2, _ := protocol.Encode(b.Res.Subjects.Op("communicate"), ev, protocol.Structured)
	ack2, err := b.JS.PublishMsg(bustest.Ctx(t), msg2)
	if err != nil {
		t.Fatal(err)
	}
	if ack1.Duplicate || !ack2.Duplicate || ack1.Sequence != ack2.Sequence {
		t.Fatalf("acks %+v and %+v: want the second to be a duplicate of the first", ack1, ack2)
	}
	first := b.Await(t, id)
	if communicateValue(t, first) != "once" {
		t.Fatal("wrong answer")
	}

	// The same event again after the duplicate window (simulated by a
	// different message id): the worker does not look up stored answers
	// on a first delivery; the branch's commits, read with the branch,
	// recognise the request and it is answered with the stored answer,
	// without a model call.
	msg3, _ := protocol.Encode(b.Res.Subjects.Op("communicate"), ev, protocol.Structured)
	msg3.Header.Set(jetstream.MsgIDHeader, id+"-later")
	if _, err := b.JS.PublishMsg(bustest.Ctx(t), msg3); err != nil {
		t.Fatal(err)
	}
	bustest.WaitFor(t, 10*time.Second, "the resent request acknowledged", func() bool {
		info, err := b.Res.Workers.Info(bustest.Ctx(t))
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0 && info.AckFloor.Stream >= ack1.Sequence+1
	})
	// The copy reached the handler (answered from history) or, when it
	// arrived while the first delivery was still finishing, was postponed
	// and answered from the stored answer: either way no model call.
	if n := h.ran(id); n != 1 && n != 2 {
		t.Fatalf("request handled %d times, want 1 or 2", n)
	}
	if n := model.total(); n != 1 {
		t.Fatalf("%d model calls, want 1", n)
	}
	again, err := b.Client.Result(bustest.Ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if again.Event.ID() != first.Event.ID() {
		t.Fatalf("stored answer changed: %s, was %s", again.Event.ID(), first.Event.ID())
	}
	if c := bustest.Commits(b.History(t, "twice")); c[id] != 1 || len(c) != 1 {
		t.Fatalf("commits %v", c)
	}
}

func TestAcceptance_bad_input_gets_specific_error(t *testing.T) {
	t.Parallel()
	const limit = 8 << 10
	b := bustest.New(t, provision.Config{MaxPayload: limit})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	b.CreateBranch(t, "good")
	subject := b.Res.Subjects.Op("communicate")

	structured := func(attrs map[string]any) []byte {
		body, err := json.Marshal(attrs)
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	valid := func(id string) map[string]any {
		return map[string]any{
			"specversion": "1.0", "id": id, "source": "/test", "type": "lionbus.communicate.request",
			"branchid": "good", "data": map[string]any{"instruction": "hi"},
		}
	}
	without := func(id, attr string) []byte {
		a := valid(id)
		delete(a, attr)
		return structured(a)
	}
	with := func(id, attr string, v any) []byte {
		a := valid(id)
		a[attr] = v
		return structured(a)
	}
	tests := []struct {
		name    string
		subject string
		header  nats.Header
		body    func(id string) []byte
		code    ops.Code
	}{
		{"non-JSON body", subject, nil, func(string) []byte { return []byte("hello, worker") }, protocol.CodeMalformedEvent},
		{"missing id", subject, nil, func(id string) []byte { return without(id, "id") }, protocol.CodeMissingAttribute},
		{"missing type", subject, nil, func(id string) []byte { return without(id, "type") }, protocol.CodeMissingAttribute},
		{"missing specversion", subject, nil, func(id string) []byte { return without(id, "specversion") }, protocol.CodeMissingAttribute},
		{"missing source", subject, nil, func(id string) []byte { return without(id, "source") }, protocol.CodeMissingAttribute},
		{"wrong specversion", subject, nil, func(id string) []byte { return with(id, "specversion", "0.3") }, protocol.CodeUnsupportedSpecVersion},
		{"unknown type", b.Res.Subjects.Op("dance"), nil, func(id string) []byte { return with(id, "type", "lionbus.dance.request") }, protocol.CodeUnknownType},
		{"schema-invalid data", subject, nil, func(id string) []byte { return with(id, "data", map[string]any{"instruction": 42}) }, protocol.CodeInvalidData},
		{"invalid branch id", subject, nil, func(id string) []byte { return with(id, "branchid", "no.dots") }, protocol.CodeInvalidBranchID},
		{"payload over the limit", subject, nil, func(id string) []byte {
			return with(id, "data", map[string]any{"instruction": strings.Repeat("x", limit)})
		}, protocol.CodePayloadTooLarge},
		{"unknown branch", subject, nil, func(id string) []byte { return with(id, "branchid", "nobody") }, ops.CodeBranchNotFound},
		{"binary non-JSON data", subject, nats.Header{
			"ce-specversion": {"1.0"}, "ce-type": {"lionbus.communicate.request"}, "ce-source": {"/test"},
			"ce-branchid": {"good"}, "Content-Type": {"application/json"},
		}, func(string) []byte { return []byte("{not json") }, protocol.CodeInvalidData},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := fmt.Sprintf("bad-%d", i)
			m := nats.NewMsg(tt.subject)
			for k, v := range tt.header {
				m.Header[k] = v
			}
			if tt.header != nil {
				m.Header.Set("ce-id", id)
			}
			m.Data = tt.body(id)
			// Published the way the Client publishes: the event id is the
			// JetStream message id.
			if _, err := b.JS.PublishMsg(bustest.Ctx(t), m, jetstream.WithMsgID(id)); err != nil {
				t.Fatal(err)
			}
			r := b.Await(t, id)
			if r.Type != protocol.EventTypeError {
				t.Fatalf("answer %s, want %s: %s", r.Type, protocol.EventTypeError, r.Data)
			}
			bustest.CheckSchema(t, r)
			var re *client.RemoteError
			if !errors.As(r.Err(), &re) || re.Code != tt.code {
				t.Fatalf("error %v, want code %s", r.Err(), tt.code)
			}
			if re.Message == "" || re.RequestID != id {
				t.Fatalf("error %+v: want a message and request id %s", re, id)
			}
		})
	}
	// Every bad request was terminated, none is left to redeliver.
	bustest.WaitFor(t, 10*time.Second, "bad requests terminated", func() bool {
		info, err := b.Res.Workers.Info(bustest.Ctx(t))
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
	// And the worker still serves.
	if got := communicateValue(t, b.Do(t, "communicate", "good", map[string]any{"instruction": "still here"})); got != "still here" {
		t.Fatalf("value %q", got)
	}
}

// barrier lets n model calls through only when all n have arrived, so that
// n operations are in flight on one branch at the same time.
type barrier struct {
	n       int
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, all: make(chan struct{})} }

func (b *barrier) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return echo{}.Complete(ctx, call)
}

func TestAcceptance_concurrent_commits_and_snapshot_rebuild(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	bar := newBarrier(2)
	for range 2 {
		b.StartWorker(t, nil, nil, map[string]ops.Provider{"barrier": bar}, worker.Config{MaxInFlight: 1, BranchOrder: worker.Parallel})
	}
	b.CreateBranch(t, "shared")
	before := b.History(t, "shared")

	// Both operations load the branch at the same sequence and only then
	// call the model, so both commit against the same last sequence: one
	// of them has to re-read and append after the other.
	var ids []string
	for _, text := range []string{"first", "second"} {
		id, err := b.Client.Submit(bustest.Ctx(t), "communicate", "shared", map[string]any{"instruction": text, "chat_model": "barrier:x"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		communicateValue(t, b.Await(t, id))
	}
	evs := b.History(t, "shared")
	if len(evs) != len(before)+2 {
		t.Fatalf("history has %d events, want %d", len(evs), len(before)+2)
	}
	commits := bustest.Commits(evs)
	for _, id := range ids {
		if commits[id] != 1 {
			t.Fatalf("commits %v: want one for each of %v", commits, ids)
		}
	}
	get := func() string {
		r := b.Do(t, "branch.get", "shared", nil)
		bustest.CheckSchema(t, r)
		var v struct {
			Messages []history.Message `json:"messages"`
		}
		bustest.MustResult(t, r, &v)
		var got []string
		for _, m := range v.Messages {
			if m.Kind == history.KindInstruction {
				got = append(got, fmt.Sprint(m.Content["instruction"]))
			}
		}
		if len(v.Messages) != 5 || len(got) != 2 || got[0] == got[1] {
			t.Fatalf("branch messages %d, instructions %v: want system + two exchanges", len(v.Messages), got)
		}
		res, _ := r.Result()
		return string(res.Value)
	}
	served := get()

	// Losing the snapshot loses nothing: a worker that has not cached the
	// branch (a new store) rebuilds it from history. (When snapshots are
	// written is the store's cadence, tested in pkg/bus/store.)
	if err := b.Res.Branches.Delete(bustest.Ctx(t), "shared"); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatal(err)
	}
	if _, err := b.Res.Branches.Get(bustest.Ctx(t), "shared"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("snapshot still there: %v", err)
	}
	fresh, err := store.New(b.JS, b.Res, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rebuilt, err := fresh.Load(bustest.Ctx(t), "shared")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Messages []history.Message `json:"messages"`
	}
	if err := json.Unmarshal([]byte(served), &v); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(v.Messages)
	got, _ := json.Marshal(rebuilt.Messages)
	if string(got) != string(want) {
		t.Fatalf("rebuilt branch differs:\n got %s\nwant %s", got, want)
	}
	if served != get() {
		t.Fatal("the branch served changed after the snapshot was lost")
	}
}
