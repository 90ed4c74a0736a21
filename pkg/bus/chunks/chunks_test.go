package chunks_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/chunks"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
)

// A redelivered run numbers its chunks after those of the attempt before.
func TestOutlet_redelivery_continues_the_seqs(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	o, err := chunks.NewOutlet(b.JS, b.Res, protocol.EventBuilder{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for attempt, n := range []int{3, 2} {
		cs, err := o.OpenChunks(ctx, ops.Request{ID: "r1", Attempt: attempt + 1})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := cs.Emit(ctx, ops.Chunk{Seq: uint64(i + 1), Kind: ops.ChunkText, Content: "x"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := cs.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := b.JS.OrderedConsumer(ctx, b.Res.Subjects.ChunksStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{b.Res.Subjects.Chunk("r1")}})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.FetchNoWait(10)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for m := range batch.Messages() {
		var ev struct {
			Data ops.Chunk `json:"data"`
		}
		if err := json.Unmarshal(m.Data(), &ev); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ev.Data.Seq)
	}
	if !slices.Equal(seqs, []uint64{1, 2, 3, 4, 5}) {
		t.Errorf("stored seqs %v", seqs)
	}
}

func TestNew_needs_the_streams(t *testing.T) {
	t.Parallel()
	if _, err := chunks.NewOutlet(nil, nil, protocol.EventBuilder{}); !errors.Is(err, chunks.ErrNotProvisioned) {
		t.Errorf("NewOutlet: %v", err)
	}
	if _, err := chunks.NewRunLog(nil, nil, protocol.EventBuilder{}); !errors.Is(err, chunks.ErrNotProvisioned) {
		t.Errorf("NewRunLog: %v", err)
	}
}
