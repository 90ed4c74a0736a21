package bus_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

// TestDuplicates_copies_without_message_id_run_once: five copies of one
// request event, published without a Nats-Msg-Id (as plain `nats pub`
// does) to two workers at once, make one model call and one commit, and
// every answer event a client sees is the stored one (same CloudEvent id).
func TestDuplicates_copies_without_message_id_run_once(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	model := countCalls(echo{})
	for range 2 {
		b.StartWorker(t, nil, nil, map[string]ops.Provider{"count": model}, worker.Config{})
	}
	b.CreateBranch(t, "copies")
	watch := b.WatchAnswers(t)
	ev, err := protocol.EventBuilder{Source: "/test"}.Request("communicate", "copies", "", "", map[string]any{"instruction": "once", "chat_model": "count:x"})
	if err != nil {
		t.Fatal(err)
	}
	id := ev.ID()
	for range 5 {
		m, err := protocol.Encode(b.Res.Subjects.Op("communicate"), ev, protocol.Binary)
		if err != nil {
			t.Fatal(err)
		}
		m.Header.Del(jetstream.MsgIDHeader) // as `nats pub` sends it
		ack, err := b.JS.PublishMsg(bustest.Ctx(t), m)
		if err != nil {
			t.Fatal(err)
		}
		if ack.Duplicate {
			t.Fatal("a copy was dropped as a duplicate: the test needs five stored copies")
		}
	}
	stored := b.Await(t, id)
	bustest.WaitFor(t, 20*time.Second, "every copy acknowledged", func() bool {
		info, err := b.Res.Workers.Info(bustest.Ctx(t))
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
	if n := model.total(); n != 1 {
		t.Fatalf("%d model calls for five copies, want 1", n)
	}
	if c := bustest.Commits(b.History(t, "copies")); c[id] != 1 {
		t.Fatalf("commits %v", c)
	}
	msgs := watch.Msgs(id)
	if len(msgs) == 0 {
		t.Fatal("no answer seen")
	}
	for _, m := range msgs {
		got, err := b.Codec.Decode(m)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID() != stored.Event.ID() {
			t.Errorf("an answer event %s differs from the stored %s", got.ID(), stored.Event.ID())
		}
	}
	if stored.Event.ID() != protocol.AnswerID(id) {
		t.Errorf("stored answer id %s, want the request's answer id %s", stored.Event.ID(), protocol.AnswerID(id))
	}
	t.Logf("%d answer messages seen for 5 copies, all event %s", len(msgs), stored.Event.ID())
}
