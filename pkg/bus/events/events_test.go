package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/events"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
	"github.com/lionbus/lionbus/schemas"
)

// startSignallingWorker starts a worker running the real engine with the
// scripted provider and an EventSink as its signal observer.
func startSignallingWorker(t *testing.T, b *bustest.Bus) {
	t.Helper()
	_, js, res := b.Conn(t)
	st, err := store.New(js, res, store.Config{Logger: bustest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	sink, err := events.NewSink(js, res, protocol.EventBuilder{Source: "/test/events"}, bustest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	provs := ops.NewProviders(nil)
	if err := scripted.Register(provs); err != nil {
		t.Fatal(err)
	}
	eng, err := ops.NewEngine(ops.Config{Store: st, Providers: provs, Signals: sink})
	if err != nil {
		t.Fatal(err)
	}
	b.StartWorker(t, nil, eng, nil, worker.Config{})
}

// storedEvents reads every event stored for branch in the events stream,
// in order, decoding each and validating its data against its schema.
func storedEvents(t *testing.T, b *bustest.Bus, branch string, want int) []*event.Event {
	t.Helper()
	ctx := bustest.Ctx(t)
	cons, err := b.JS.OrderedConsumer(ctx, b.Res.Subjects.EventsStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{b.Res.Subjects.Events(branch, ">")},
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []*event.Event
	deadline := time.Now().Add(10 * time.Second)
	for len(out) < want && time.Now().Before(deadline) {
		batch, err := cons.Fetch(want-len(out), jetstream.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			ev, err := b.Codec.Decode(natsMsg(m))
			if err != nil {
				t.Fatalf("stored event on %s: %v", m.Subject(), err)
			}
			if token := strings.TrimPrefix(ev.Type(), "lionbus."); m.Subject() != b.Res.Subjects.Events(branch, strings.ReplaceAll(token, ".", "_")) {
				t.Errorf("%s event on subject %s", ev.Type(), m.Subject())
			}
			if err := schemas.Validate(ev.Type(), ev.Data()); err != nil {
				t.Errorf("%s data %s: %v", ev.Type(), ev.Data(), err)
			}
			out = append(out, ev)
		}
	}
	// Nothing more than wanted.
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		t.Errorf("unexpected extra event on %s: %s", m.Subject(), m.Data())
	}
	return out
}

func TestEventSink_signals_of_communicate(t *testing.T) {
	t.Parallel()
	const trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name      string
		model     any
		wantTypes []string
		wantCode  ops.Code // of the answer and of run.failed; "" for success
	}{
		{"result", "scripted:echo",
			[]string{protocol.EventTypeRunStart, protocol.EventTypeMessageAdded, protocol.EventTypeMessageAdded, protocol.EventTypeRunEnd}, ""},
		{"provider failure", map[string]any{"provider": "scripted", "replies": []any{map[string]any{"error": "model unavailable"}}},
			[]string{protocol.EventTypeRunStart, protocol.EventTypeRunFailed}, ops.CodeProvider},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := bustest.New(t, provision.Config{})
			startSignallingWorker(t, b)
			bustest.MustResult(t, b.Do(t, "branch.create", "", map[string]any{"branch_id": "sig", "chat_model": tt.model}), nil)

			r := b.Do(t, "communicate", "sig", map[string]any{"instruction": "hello there"}, client.WithTraceParent(trace))
			reqID, _ := r.Event.Extensions()[protocol.ExtRequestID].(string)
			if tt.wantCode == "" {
				bustest.MustResult(t, r, nil)
			} else if code := bustest.RemoteCode(t, r); code != tt.wantCode {
				t.Fatalf("answer code %s, want %s", code, tt.wantCode)
			}

			evs := storedEvents(t, b, "sig", len(tt.wantTypes))
			var types []string
			for _, ev := range evs {
				types = append(types, ev.Type())
			}
			if strings.Join(types, " ") != strings.Join(tt.wantTypes, " ") {
				t.Fatalf("events %v, want %v", types, tt.wantTypes)
			}
			var kinds []string
			for i, ev := range evs {
				ext := ev.Extensions()
				if ext[protocol.ExtBranchID] != "sig" || ext[protocol.ExtRequestID] != reqID || ext[protocol.ExtTraceParent] != trace {
					t.Errorf("event %d %s extensions %v, want branch sig, request %s, trace %s", i, ev.Type(), ext, reqID, trace)
				}
				if ev.Source() != "/test/events" {
					t.Errorf("event %d source %q", i, ev.Source())
				}
				var d protocol.SignalData
				if err := json.Unmarshal(ev.Data(), &d); err != nil {
					t.Fatal(err)
				}
				if d.Verb != "communicate" || d.BranchID != "sig" || d.RequestID != reqID || d.Time.IsZero() {
					t.Errorf("event %d data %s", i, ev.Data())
				}
				switch ev.Type() {
				case protocol.EventTypeMessageAdded:
					kinds = append(kinds, string(d.Message.Kind))
				case protocol.EventTypeRunEnd:
					var v string
					if err := json.Unmarshal(d.Result.Value, &v); err != nil || v != "hello there" {
						t.Errorf("run.end result value %s, want the echo", d.Result.Value)
					}
				case protocol.EventTypeRunFailed:
					if d.Error == nil || d.Error.Code != tt.wantCode || !strings.Contains(d.Error.Message, "model unavailable") {
						t.Errorf("run.failed error %+v", d.Error)
					}
				}
			}
			if tt.wantCode == "" && strings.Join(kinds, " ") != "instruction assistant_response" {
				t.Errorf("messages added %v, want the instruction then the response", kinds)
			}

			// The messages announced are the ones recorded.
			if tt.wantCode == "" {
				var hist struct {
					Events []history.Event `json:"events"`
				}
				bustest.MustResult(t, b.Do(t, "branch.history", "sig", nil), &hist)
				last := hist.Events[len(hist.Events)-1]
				for i, ev := range evs[1:3] {
					var d protocol.SignalData
					_ = json.Unmarshal(ev.Data(), &d)
					if d.Message.ID != last.Messages[i].ID {
						t.Errorf("message.added %d is %s, history recorded %s", i, d.Message.ID, last.Messages[i].ID)
					}
				}
			}
		})
	}
}

func TestEventSink_rejects_unpublishable_signals(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	sink, err := events.NewSink(b.JS, b.Res, protocol.EventBuilder{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		s    ops.Signal
	}{
		{"no branch", ops.Signal{Type: ops.SignalRunStart, RequestID: "r"}},
		{"branch with a dot", ops.Signal{Type: ops.SignalRunStart, BranchID: "a.b", RequestID: "r"}},
		{"type with a wildcard", ops.Signal{Type: "run.*", BranchID: "a", RequestID: "r"}},
		{"upper-case type", ops.Signal{Type: "Run.Start", BranchID: "a", RequestID: "r"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := sink.Emit(context.Background(), tt.s); !errors.Is(err, protocol.ErrInvalidSignal) {
				t.Fatalf("Emit = %v, want ErrInvalidSignal", err)
			}
		})
	}
	if _, err := events.NewSink(b.JS, nil, protocol.EventBuilder{}, zerolog.Nop()); err == nil {
		t.Error("NewEventSink without resources succeeded")
	}
}

func TestEventToken(t *testing.T) {
	t.Parallel()
	for in, want := range map[ops.SignalType]string{
		ops.SignalRunStart:     "run_start",
		ops.SignalRunEnd:       "run_end",
		ops.SignalRunFailed:    "run_failed",
		ops.SignalMessageAdded: "message_added",
		ops.SignalToolPre:      "tool_pre",
		ops.SignalToolPost:     "tool_post",
		ops.SignalToolError:    "tool_error",
		ops.SignalLNDLRound:    "lndl_round",
	} {
		if got := protocol.EventToken(in); got != want {
			t.Errorf("EventToken(%q) = %q, want %q", in, got, want)
		}
	}
}

func natsMsg(m jetstream.Msg) *nats.Msg {
	return &nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()}
}

// TestEventSink_batch_defers_each_acknowledgement_to_its_wait shows what a
// batch changes: the signals of its request, and of the request's stages
// ("<id>/<stage>"), are published without waiting, so a publish that fails
// is reported by the batch's wait, not by Emit; other requests' signals,
// and the request's own once the batch is closed, still wait for the
// stream and fail in Emit.
func TestEventSink_batch_defers_each_acknowledgement_to_its_wait(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	sink, err := events.NewSink(b.JS, b.Res, protocol.EventBuilder{Source: "/test/events"}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx := bustest.Ctx(t)
	signal := func(id string) ops.Signal {
		return ops.Signal{Type: ops.SignalRunStart, Verb: "communicate", BranchID: "b1", RequestID: id, Time: time.Now()}
	}

	// Stored: the wait returns once both are in the stream.
	wait := sink.Open("r1")
	for _, id := range []string{"r1", "r1/round1"} {
		if err := sink.Emit(ctx, signal(id)); err != nil {
			t.Fatalf("Emit %s in a batch: %v", id, err)
		}
	}
	if err := wait(ctx); err != nil {
		t.Fatalf("wait = %v", err)
	}
	if got := storedEvents(t, b, "b1", 2); len(got) != 2 {
		t.Fatalf("%d events stored, want 2", len(got))
	}

	// Not stored: the events stream is gone.
	if err := b.JS.DeleteStream(ctx, b.Res.Subjects.EventsStream()); err != nil {
		t.Fatal(err)
	}
	wait = sink.Open("r2")
	for _, id := range []string{"r2", "r2/round1"} {
		if err := sink.Emit(ctx, signal(id)); err != nil {
			t.Fatalf("Emit %s in a batch = %v, want nil (its failure is the wait's)", id, err)
		}
	}
	if err := sink.Emit(ctx, signal("r3")); err == nil {
		t.Error("Emit of a request without a batch succeeded with no events stream")
	}
	werr := wait(ctx)
	if werr == nil || strings.Count(werr.Error(), "run.start event") != 2 {
		t.Fatalf("wait = %v, want the failures of both publishes", werr)
	}
	if err := sink.Emit(ctx, signal("r2")); err == nil {
		t.Error("Emit after the batch was closed succeeded with no events stream")
	}
}
