package ops

import (
	"context"
	"time"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

// pastPoint names a point of a branch's history that branch.get and
// branch.history read at: a history sequence, or a time. The zero value
// is the head.
type pastPoint struct {
	// AtSeq is a history sequence: the branch as the events with
	// seq <= AtSeq fold it. 0 means the head.
	AtSeq uint64
	// AtTime is a time: the branch as the events up to the first one
	// stamped after it fold it. nil means the head.
	AtTime *time.Time
}

// isHead reports whether p names the branch's head.
func (p pastPoint) isHead() bool { return p.AtSeq == 0 && p.AtTime == nil }

// check rejects a point that names both a sequence and a time.
func (p pastPoint) check() error {
	if p.AtSeq != 0 && p.AtTime != nil {
		return Errorf(CodeInvalidRequest, "data.at_seq and data.at_time exclude each other")
	}
	return nil
}

// includes reports whether ev is at or before p: the events a read at p
// folds are the longest run of events from the start that p includes.
func (p pastPoint) includes(ev history.Event) bool {
	switch {
	case p.AtSeq != 0:
		return ev.Seq <= p.AtSeq
	case p.AtTime != nil:
		return !ev.Time.After(*p.AtTime)
	}
	return true
}

// checkHead loads the branch's head and rejects a sequence beyond it: a
// read of the past answers what an operation saw, and nothing has seen a
// sequence the branch has not reached (a later event would change the
// answer). It returns the head.
func (e *Engine) checkHead(ctx context.Context, id string, p pastPoint) (*history.Branch, error) {
	head, err := e.load(ctx, id)
	if err != nil {
		return nil, err
	}
	if p.AtSeq > head.Seq {
		return nil, Errorf(CodeInvalidRequest, "data.at_seq %d is beyond the head of branch %q (seq %d)", p.AtSeq, id, head.Seq)
	}
	return head, nil
}

// pastFirstPage is the first page loadAt reads.
const pastFirstPage = 64

// loadAt returns the branch as it was at p: the fold, by [history.Branch.Apply],
// of its history events from the first up to the last that p includes
// (a fork's from its parent at the fork point, see forkStore.foldAt).
// The history is read in pages of 64 events doubling up to
// [history.MaxHistoryPage]; nothing but the branch being folded is kept. It answers CodeBranchNotFound when
// the branch did not exist yet at p.
func (e *Engine) loadAt(ctx context.Context, id string, p pastPoint) (*history.Branch, error) {
	head, err := e.checkHead(ctx, id, p)
	if err != nil {
		return nil, err
	}
	if p.AtSeq == head.Seq {
		return head, nil
	}
	b, err := e.forks.foldAt(ctx, id, p, 0)
	if err != nil {
		return nil, err
	}
	return pastResult(id, b, p)
}

// pastResult is the branch b folded at p, or CodeBranchNotFound when no
// event was folded.
func pastResult(id string, b *history.Branch, p pastPoint) (*history.Branch, error) {
	if b.Seq != 0 {
		return b, nil
	}
	if p.AtTime != nil {
		return nil, Errorf(CodeBranchNotFound, "branch %q did not exist at %s", id, p.AtTime.Format(time.RFC3339Nano))
	}
	return nil, Errorf(CodeBranchNotFound, "branch %q did not exist at seq %d", id, p.AtSeq)
}
