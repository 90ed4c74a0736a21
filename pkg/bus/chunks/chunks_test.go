package chunks_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/chunks"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
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

// 0021-D5-06: the run log keeps each run in its directory,
// <prefix>.runlog.<dir>.<id>.chunks and .snapshot, which Location names;
// a directory that is not one subject token stores nothing.
func TestRunLog_directories(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	l, err := chunks.NewRunLog(b.JS, b.Res, protocol.EventBuilder{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := ops.Request{ID: "r1", BranchID: "b1"}
	br := &history.Branch{ID: "b1"}
	for _, dir := range []string{"audit", "team-a"} {
		if err := l.Snapshot(ctx, dir, req, br, false); err != nil {
			t.Fatal(err)
		}
		cs, err := l.Open(ctx, dir, req)
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.Emit(ctx, ops.Chunk{Seq: 1, Kind: ops.ChunkText, Content: dir}); err != nil {
			t.Fatal(err)
		}
		if err := cs.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Remove(ctx, "team-a", req); err != nil {
		t.Fatal(err)
	}
	st, err := b.JS.Stream(ctx, b.Res.Subjects.RunLogStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(b.Res.Subjects.RunLogWildcard()))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"lion.runlog.audit.r1.snapshot": 1, "lion.runlog.audit.r1.chunks": 1, "lion.runlog.team-a.r1.snapshot": 1}
	if len(info.State.Subjects) != len(want) {
		t.Errorf("subjects %v, want %v", info.State.Subjects, want)
	}
	for subj, n := range want {
		if info.State.Subjects[subj] != n {
			t.Errorf("%s holds %d messages, want %d (all: %v)", subj, info.State.Subjects[subj], n, info.State.Subjects)
		}
	}
	m, err := st.GetLastMsgForSubject(ctx, "lion.runlog.audit.r1.snapshot")
	if err != nil {
		t.Fatal(err)
	}
	var snap chunks.Snapshot
	if err := json.Unmarshal(m.Data, &snap); err != nil || snap.Dir != "audit" || snap.RequestID != "r1" || snap.Final {
		t.Errorf("snapshot %s (%v)", m.Data, err)
	}
	loc := l.Location("audit", req)
	if loc != (ops.RunLogLocation{Dir: "audit", Chunks: "lion.runlog.audit.r1.chunks", Snapshot: "lion.runlog.audit.r1.snapshot"}) {
		t.Errorf("location %+v", loc)
	}
	before := info.State.Msgs
	for _, dir := range []string{"", "a.b", ">", "*", strings.Repeat("d", ops.MaxRunLogDirLength+1)} {
		if err := l.Snapshot(ctx, dir, req, br, false); !errors.Is(err, ops.ErrInvalidRunLogDir) {
			t.Errorf("Snapshot in %q: %v", dir, err)
		}
		if _, err := l.Open(ctx, dir, req); !errors.Is(err, chunks.ErrInvalidDir) {
			t.Errorf("Open in %q: %v", dir, err)
		}
		if err := l.Remove(ctx, dir, req); !errors.Is(err, chunks.ErrInvalidDir) {
			t.Errorf("Remove in %q: %v", dir, err)
		}
	}
	info, err = st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != before {
		t.Errorf("the refused directories stored %d messages", info.State.Msgs-before)
	}
}
