package events_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// TestEventSink_one_run_of_events_per_request: a request whose operation
// was committed by a worker that died before publishing its events gets
// them from the redelivery, which answers from history: run.start, a
// message.added per recorded message, run.end. A copy of a request that
// already ran and published its events stores nothing new (same event
// ids, inside the stream's duplicate window).
func TestEventSink_one_run_of_events_per_request(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	startSignallingWorker(t, b)
	bustest.MustResult(t, b.Do(t, "branch.create", "", map[string]any{"branch_id": "crash", "chat_model": "scripted:echo"}), nil)
	want := []string{protocol.EventTypeRunStart, protocol.EventTypeMessageAdded, protocol.EventTypeMessageAdded, protocol.EventTypeRunEnd}

	// The dead worker's commit: the exchange and its result, in history,
	// with no event published.
	const id = "committed-then-died"
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ev := history.Event{
		Type: history.EventMessages, RequestID: id, Time: at, BranchID: "crash", ModelCalls: 1,
		Messages: []history.Message{
			{ID: "ins-1", Kind: history.KindInstruction, Role: history.RoleUser, CreatedAt: at, Content: map[string]any{"instruction": "hello"}},
			{ID: "res-1", Kind: history.KindAssistantResponse, Role: history.RoleAssistant, CreatedAt: at, Content: map[string]any{"assistant_response": "hello"}},
		},
		Result: json.RawMessage(`{"value":"hello","branch_id":"crash"}`),
	}
	dead, err := store.New(b.JS, b.Res, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dead.Append(bustest.Ctx(t), "crash", ev); err != nil {
		t.Fatal(err)
	}
	// The redelivered request.
	r := b.Do(t, "communicate", "crash", map[string]any{"instruction": "hello"}, client.WithID(id))
	var res ops.Result
	if err := json.Unmarshal(r.Data, &res); err != nil || !res.Replayed {
		t.Fatalf("answer %s: want the replayed result", r.Data)
	}
	evs := storedEvents(t, b, "crash", len(want))
	var types []string
	added := map[string]bool{}
	for _, e := range evs {
		types = append(types, e.Type())
		if e.Extensions()[protocol.ExtRequestID] != id {
			t.Errorf("%s event of request %v", e.Type(), e.Extensions()[protocol.ExtRequestID])
		}
		var sd protocol.SignalData
		if err := json.Unmarshal(e.Data(), &sd); err != nil {
			t.Fatal(err)
		}
		if sd.Message != nil {
			added[sd.Message.ID] = true
		}
	}
	if strings.Join(types, " ") != strings.Join(want, " ") || !added["ins-1"] || !added["res-1"] {
		t.Fatalf("events %v (messages %v), want %v for both recorded messages", types, added, want)
	}

	// A copy of the request, published again without a message id: it is
	// answered again, and no event is stored twice.
	ev2, err := protocol.EventBuilder{Source: "/test"}.Request("communicate", "crash", "", "", map[string]any{"instruction": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	ev2.SetID(id)
	copyMsg, err := protocol.Encode(b.Res.Subjects.Op("communicate"), ev2, protocol.Structured)
	if err != nil {
		t.Fatal(err)
	}
	copyMsg.Header.Del(jetstream.MsgIDHeader)
	if _, err := b.JS.PublishMsg(bustest.Ctx(t), copyMsg); err != nil {
		t.Fatal(err)
	}
	bustest.WaitFor(t, 10*time.Second, "the copy acknowledged", func() bool {
		info, err := b.Res.Workers.Info(bustest.Ctx(t))
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
	if again := storedEvents(t, b, "crash", len(want)); len(again) != len(want) {
		t.Fatalf("%d events stored after the copy, want still %d", len(again), len(want))
	}
}
