package retention_test

import (
	"context"
	"reflect"
	"strconv"
	"sync"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/retention"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// TestCompactor_forks_made_during_passes_keep_their_prefix: forks of a
// parent made at its oldest stored point while a compaction pass runs at
// the same moment, round after round. A fork is either refused (the
// history at its point is being dropped: invalid_request) or keeps its
// prefix: after more passes it answers branch.get with the parent's
// messages at its fork point followed by its own exchange. Each fork is
// then deleted, so that the next rounds cut the parent again.
func TestCompactor_forks_made_during_passes_keep_their_prefix(t *testing.T) {
	b := newLiveBus(t)
	const parent = "racing"
	b.CreateBranch(t, parent)
	c := b.compactor(t, retention.LiveConfig{KeepEvents: 2})

	// The parent's messages at the sequence of each of its states, as
	// branch.get answered them at the head.
	states := map[uint64][]history.Message{}
	var seqs []uint64
	grow := func(n int) {
		for range n {
			b.exchanges(t, parent, 1)
			head := b.get(t, parent, 0)
			states[head.Seq] = head.Messages
			seqs = append(seqs, head.Seq)
		}
	}
	grow(3)
	made, refused, cut := 0, 0, 0
	for round := range 20 {
		grow(3)
		// The oldest state still stored: one the next cut may drop.
		first := b.stored(t, parent)[0].Seq
		var at uint64
		for _, s := range seqs {
			if s >= first {
				at = s
				break
			}
		}
		if at == 0 {
			t.Fatalf("round %d: no state of the parent is stored any more (first stored seq %d)", round, first)
		}
		id := "fork-" + strconv.Itoa(round)
		var wg sync.WaitGroup
		start := make(chan struct{})
		var fork *client.Reply
		var trims []retention.Trimmed
		var passErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			trims, passErr = c.Pass(bustest.Ctx(t))
		}()
		go func() {
			defer wg.Done()
			<-start
			fork = b.Do(t, "branch.fork", parent, map[string]any{"branch_id": id, "at_seq": at})
		}()
		close(start)
		wg.Wait()
		if passErr != nil {
			t.Fatalf("round %d: pass: %v", round, passErr)
		}
		for _, tr := range trims {
			if tr.Branch == parent && tr.DroppedEvents > 0 {
				cut++
			}
		}
		if err := fork.Err(); err != nil {
			if code := bustest.RemoteCode(t, fork); code != ops.CodeInvalidRequest {
				t.Fatalf("round %d: fork at seq %d: %v, want it made or refused as invalid_request", round, at, err)
			}
			refused++
			continue
		}
		made++
		b.exchanges(t, id, 1)
		for range 2 {
			grow(3)
			passAll(t, c)
		}
		r := b.Do(t, "branch.get", id, nil)
		if r.Err() != nil {
			t.Fatalf("round %d: fork %s (at seq %d) cannot be read: %v", round, id, at, r.Err())
		}
		var got history.Branch
		bustest.MustResult(t, r, &got)
		want := states[at]
		if len(got.Messages) != len(want)+2 {
			t.Fatalf("round %d: fork %s at seq %d holds %d messages, want the parent's %d there and its own 2", round, id, at, len(got.Messages), len(want))
		}
		if g, w := stateOf(t, history.Branch{Messages: got.Messages[:len(want)]}), stateOf(t, history.Branch{Messages: want}); !reflect.DeepEqual(g.Messages, w.Messages) {
			t.Fatalf("round %d: fork %s at seq %d: its prefix is not the parent's messages there\n got %v\nwant %v", round, id, at, g.Messages, w.Messages)
		}
		b.do(t, "branch.delete", id, nil)
	}
	if made == 0 || cut == 0 {
		t.Fatalf("%d forks made, %d passes cut the parent: the test shows nothing", made, cut)
	}
	t.Logf("%d forks made and kept, %d refused; %d of the racing passes cut the parent", made, refused, cut)
}

// hooked is the store with a hook run once, at a step of a cut: before
// the compaction point is written, or before the events are dropped.
type hooked struct {
	*store.Store
	beforeCompact, beforeDrop func()
}

func (h *hooked) Compact(ctx context.Context, branchID, requestID, reason string, droppedBefore, droppedEvents uint64) (history.Event, error) {
	if f := h.beforeCompact; f != nil && droppedBefore != 0 {
		h.beforeCompact = nil
		f()
	}
	return h.Store.Compact(ctx, branchID, requestID, reason, droppedBefore, droppedEvents)
}

func (h *hooked) DropBefore(ctx context.Context, branchID string, seq uint64) error {
	if f := h.beforeDrop; f != nil {
		h.beforeDrop = nil
		f()
	}
	return h.Store.DropBefore(ctx, branchID, seq)
}

// TestCompactor_a_fork_made_during_a_cut: a fork of a point the cut
// drops, made after the pass read the history, at each step of the cut.
// Made before the compaction point is written, the fork is recorded
// before it: the cut is cancelled, and the fork keeps its prefix. Made
// once it is written, the fork sees the cut it announces and is refused
// (invalid_request, its id then not found); the cut goes ahead. Either
// way, no fork is left without its prefix.
func TestCompactor_a_fork_made_during_a_cut(t *testing.T) {
	for _, step := range []string{"before the compaction point", "before the drop"} {
		t.Run(step, func(t *testing.T) {
			b := newLiveBus(t)
			const parent = "cut"
			b.CreateBranch(t, parent)
			b.exchanges(t, parent, 2)
			at := b.get(t, parent, 0).Seq
			want := b.get(t, parent, at)
			b.exchanges(t, parent, 4)
			h := &hooked{Store: b.st}
			cfg := retention.LiveConfig{KeepEvents: 4, Logger: bustest.Logger(t)}
			c, err := retention.NewCompactor(b.js, b.res, h, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tr := pass(t, c, parent); tr.DroppedEvents != 0 || tr.Compaction == 0 {
				t.Fatalf("the first pass should write a compaction point and drop nothing: %+v", tr)
			}
			b.exchanges(t, parent, 5)
			var fork *client.Reply
			forkNow := func() {
				fork = b.Do(t, "branch.fork", parent, map[string]any{"branch_id": "late", "at_seq": at})
			}
			if step == "before the drop" {
				h.beforeDrop = forkNow
			} else {
				h.beforeCompact = forkNow
			}
			tr := pass(t, c, parent)
			if fork == nil {
				t.Fatalf("the pass made no cut (%+v): the hook never ran", tr)
			}
			first := b.stored(t, parent)[0].Seq
			switch step {
			case "before the compaction point":
				if fork.Err() != nil {
					t.Fatalf("the fork recorded before the compaction point was refused: %v", fork.Err())
				}
				if tr.DroppedEvents != 0 || first > at {
					t.Fatalf("the cut went ahead (%+v, history from seq %d) though a fork at seq %d was recorded before it", tr, first, at)
				}
				got := b.get(t, "late", 0)
				if g, w := stateOf(t, history.Branch{Messages: got.Messages}), stateOf(t, history.Branch{Messages: want.Messages}); !reflect.DeepEqual(g.Messages, w.Messages) {
					t.Fatalf("the fork's messages are not the parent's at seq %d\n got %v\nwant %v", at, g.Messages, w.Messages)
				}
				// Later passes keep it too.
				for range 2 {
					b.exchanges(t, parent, 5)
					passAll(t, c)
				}
				sameState(t, "the fork after more passes", b.get(t, "late", 0), got)
			case "before the drop":
				if code := bustest.RemoteCode(t, fork); code != ops.CodeInvalidRequest {
					t.Fatalf("the fork made once the cut was announced answered %s, want %s", code, ops.CodeInvalidRequest)
				}
				if tr.DroppedEvents == 0 || first <= at {
					t.Fatalf("the cut did not go ahead (%+v, history from seq %d)", tr, first)
				}
				if r := b.Do(t, "branch.get", "late", nil); bustest.RemoteCode(t, r) != ops.CodeBranchNotFound {
					t.Fatalf("the refused fork answers branch.get: %s", r.Data)
				}
			}
		})
	}
}
