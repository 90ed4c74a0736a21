package store_test

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// An append whose publish timed out may still have been stored. Its retry
// (the redelivered request) must then report ErrAlreadyCommitted and store
// nothing, even when other operations committed after the lost one: the
// message id (inside the duplicate window) and the branch's commits make the
// retry safe.
func TestStore_retry_of_an_append_that_was_stored_is_not_doubled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ev   history.Event
	}{
		{"messages", messagesEvent("lost-ack", "hello")},
		{"cleared", history.Event{Type: history.EventCleared, RequestID: "lost-ack"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupStore(t)
			ctx := bustest.Ctx(t)
			const id = "ambiguous"
			if _, err := b.store.Create(ctx, id, createdEvent("create", "sys")); err != nil {
				t.Fatal(err)
			}
			br, err := b.store.Append(ctx, id, messagesEvent("before", "one"))
			if err != nil {
				t.Fatal(err)
			}
			// The lost append, published as Store.Append publishes it.
			ev := tt.ev
			ev.BranchID = id
			data, err := store.EncodeEventForTest(ev)
			if err != nil {
				t.Fatal(err)
			}
			m := nats.NewMsg(b.res.Subjects.History(id))
			m.Data = data
			m.Header.Set(store.HeaderEventType, string(ev.Type))
			if _, err := b.js.PublishMsg(ctx, m,
				jetstream.WithExpectLastSequencePerSubject(br.Seq),
				jetstream.WithMsgID(id+"/"+ev.RequestID+"/"+string(ev.Type))); err != nil {
				t.Fatal(err)
			}
			// Another operation commits after it.
			if _, err := b.newStoreOnOwnConn(t).Append(ctx, id, messagesEvent("after", "two")); err != nil {
				t.Fatal(err)
			}
			// The retry.
			if _, err := b.store.Append(ctx, id, tt.ev); !errors.Is(err, history.ErrAlreadyCommitted) {
				t.Fatalf("retried append: err = %v, want ErrAlreadyCommitted", err)
			}
			evs, err := b.store.History(ctx, id, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, e := range evs {
				if e.RequestID == tt.ev.RequestID {
					n++
				}
			}
			if n != 1 || len(evs) != 4 {
				t.Fatalf("history holds %d events of the retried request (want 1) and %d events (want 4)", n, len(evs))
			}
		})
	}
}
