package ops

import (
	"context"
	"time"

	"github.com/lionbus/lionbus/pkg/ops/forks"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// pastPoint names a point of a branch's history that branch.get and
// branch.history read at ([forks.Point]); the zero value is the head.
type pastPoint = forks.Point

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

// loadAt returns the branch as it was at p: the fold, by [history.Branch.Apply],
// of its history events from the first up to the last that p includes
// (a fork's from its parent at the fork point, see [forks.Store.FoldAt]);
// nothing but the branch being folded is kept. It answers CodeBranchNotFound when
// the branch did not exist yet at p.
func (e *Engine) loadAt(ctx context.Context, id string, p pastPoint) (*history.Branch, error) {
	head, err := e.checkHead(ctx, id, p)
	if err != nil {
		return nil, err
	}
	if p.AtSeq == head.Seq {
		return head, nil
	}
	b, err := e.forks.FoldAt(ctx, id, p)
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
