package forks

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/storeerr"
	"github.com/lionbus/lionbus/pkg/wire"
)

// DefaultCache is how many folded forks, and how many parents'
// prefixes, a [Store] keeps in memory (each; least recently used first
// out), so that reading a fork again costs what changed since.
const DefaultCache = 64

// Store is a [history.Store] that answers a fork as its parent was at
// the fork point followed by the fork's own events (see the package
// doc). It is the engine's view of its store and is safe for concurrent
// use as the store it wraps is.
//
// A parent's state at a sequence never changes (history is append-only),
// so the prefixes are kept in memory; a fork's fold is kept too and
// brought up to date with its newer events only.
type Store struct {
	history.Store
	bases *branchLRU // "<parent>@<seq>": the parent at seq
	forks *branchLRU // fork id: the fork at its last folded seq
}

// New returns a Store over s keeping [DefaultCache] forks and prefixes.
func New(s history.Store) *Store {
	return &Store{Store: s, bases: newBranchLRU(DefaultCache), forks: newBranchLRU(DefaultCache)}
}

// Load returns the branch at its head, a fork with its parent's prefix.
func (s *Store) Load(ctx context.Context, id string) (*history.Branch, error) {
	own, err := s.Store.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	if own.Deleted {
		// A store that folds a tombstone rather than refusing it.
		return nil, history.ErrBranchDeleted
	}
	return s.compose(ctx, own, 0)
}

// Create creates the branch; see [history.Store.Create].
func (s *Store) Create(ctx context.Context, id string, ev history.Event) (*history.Branch, error) {
	b, err := s.Store.Create(ctx, id, ev)
	return s.composeAfter(ctx, b, err)
}

// Append appends to the branch; see [history.Store.Append].
func (s *Store) Append(ctx context.Context, id string, ev history.Event) (*history.Branch, error) {
	b, err := s.Store.Append(ctx, id, ev)
	return s.composeAfter(ctx, b, err)
}

// Delete deletes the branch and forgets what was kept of it.
func (s *Store) Delete(ctx context.Context, id string) error {
	s.forks.drop(id)
	s.bases.dropPrefix(id + "@")
	return s.Store.Delete(ctx, id)
}

func (s *Store) composeAfter(ctx context.Context, b *history.Branch, err error) (*history.Branch, error) {
	if b == nil || b.Fork == nil {
		return b, err
	}
	c, cerr := s.compose(ctx, b, 0)
	if cerr != nil {
		return nil, cerr
	}
	return c, err
}

// compose returns own, a store's fold of a branch, with its parent's
// prefix in front when it is a fork.
func (s *Store) compose(ctx context.Context, own *history.Branch, depth int) (*history.Branch, error) {
	if own.Fork == nil {
		return own, nil
	}
	if c := s.forks.get(own.ID); c != nil && c.CreatedAt.Equal(own.CreatedAt) && *c.Fork == *own.Fork && c.Seq <= own.Seq {
		if c.Seq == own.Seq {
			return c, nil
		}
		b, err := s.extend(ctx, c, own.Seq)
		if err != nil {
			return nil, err
		}
		s.forks.put(own.ID, b)
		return b, nil
	}
	b, err := s.foldAt(ctx, own.ID, Point{AtSeq: own.Seq}, depth)
	if err != nil {
		return nil, err
	}
	if b.Seq != own.Seq {
		return nil, wire.Errorf(wire.CodeInternal, "fork %q: its history folds to seq %d, its store to %d", own.ID, b.Seq, own.Seq)
	}
	s.forks.put(own.ID, b)
	return b, nil
}

// extend returns a copy of the folded fork c brought up to seq upto with
// the fork's events after c.Seq.
func (s *Store) extend(ctx context.Context, c *history.Branch, upto uint64) (*history.Branch, error) {
	b := *c
	b.Messages = slices.Clone(c.Messages) // Apply may replace one in place
	for after := c.Seq; after < upto; {
		evs, err := s.Store.History(ctx, c.ID, after, history.MaxHistoryPage)
		if err != nil {
			return nil, storeerr.History(c.ID, err)
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			if ev.Seq > upto {
				return &b, nil
			}
			if err := b.Apply(ev); err != nil {
				return nil, wire.Errorf(wire.CodeInternal, "fold history of fork %q: %v", c.ID, err)
			}
		}
		after = evs[len(evs)-1].Seq
	}
	return &b, nil
}

// FoldAt returns the branch id as it was at p: the fold of its history
// events from the first to the last that p includes, a fork's starting
// from its parent at the fork point. The history is read in pages of
// [FirstPage] events doubling up to [history.MaxHistoryPage]. A branch
// with no event at p has Seq 0.
func (s *Store) FoldAt(ctx context.Context, id string, p Point) (*history.Branch, error) {
	return s.foldAt(ctx, id, p, 0)
}

// foldAt is FoldAt for a branch depth forks below the one read.
func (s *Store) foldAt(ctx context.Context, id string, p Point, depth int) (*history.Branch, error) {
	b := &history.Branch{}
	var after uint64
	limit := FirstPage
	for ; ; limit = min(2*limit, history.MaxHistoryPage) {
		evs, err := s.Store.History(ctx, id, after, limit)
		if err != nil {
			return nil, storeerr.History(id, err)
		}
		for _, ev := range evs {
			if !p.Includes(ev) {
				if b.Seq == 0 && ev.Type == history.EventCompacted {
					return nil, compactedErr(id, ev)
				}
				return b, nil
			}
			if b.Seq == 0 && ev.Type == history.EventCreated && ev.Fork != nil {
				if b, err = s.startFork(ctx, ev, depth); err != nil {
					return nil, err
				}
				continue
			}
			if err := b.Apply(ev); err != nil {
				return nil, wire.Errorf(wire.CodeInternal, "fold history of branch %q: %v", id, err)
			}
		}
		if len(evs) < limit || (p.AtSeq != 0 && b.Seq >= p.AtSeq) {
			return b, nil
		}
		after = evs[len(evs)-1].Seq
	}
}

// startFork folds created, the branch.created of a fork: the fork's
// settings and counts, its parent's messages at the fork point.
func (s *Store) startFork(ctx context.Context, created history.Event, depth int) (*history.Branch, error) {
	base, err := s.base(ctx, *created.Fork, depth+1)
	if err != nil {
		return nil, err
	}
	b := &history.Branch{}
	if err := b.Apply(created); err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "fold history of fork %q: %v", created.BranchID, err)
	}
	b.Messages = append(slices.Clone(base.Messages), b.Messages...)
	return b, nil
}

// base returns the parent of a fork as it was at the fork point.
func (s *Store) base(ctx context.Context, at history.ForkPoint, depth int) (*history.Branch, error) {
	if depth > history.MaxForkDepth {
		return nil, wire.Errorf(wire.CodeInvalidRequest, "branch %q is a fork more than %d forks deep", at.BranchID, history.MaxForkDepth)
	}
	key := at.BranchID + "@" + strconv.FormatUint(at.Seq, 10)
	if b := s.bases.get(key); b != nil {
		return b, nil
	}
	head, err := s.Store.Load(ctx, at.BranchID)
	if errors.Is(err, history.ErrBranchNotFound) {
		return nil, wire.Errorf(wire.CodeBranchNotFound, "branch %q, the parent of a fork, not found", at.BranchID)
	}
	if err != nil {
		return nil, storeerr.Classify("load", err)
	}
	var b *history.Branch
	switch {
	case head.Seq == at.Seq:
		b, err = s.compose(ctx, head, depth)
	case head.Seq > at.Seq:
		b, err = s.foldAt(ctx, at.BranchID, Point{AtSeq: at.Seq}, depth)
	}
	if err != nil {
		return nil, err
	}
	if b == nil || b.Seq != at.Seq {
		return nil, wire.Errorf(wire.CodeBranchNotFound, "branch %q no longer holds seq %d, the start of a fork of it", at.BranchID, at.Seq)
	}
	s.bases.put(key, b)
	return b, nil
}

// compactedErr refuses a read of branch id at a point before first, its
// first kept event, a compaction point: the events before it, which
// that read folds, were dropped by retention.
func compactedErr(id string, first history.Event) error {
	return &wire.Error{
		Code:    wire.CodeInvalidRequest,
		Message: "branch " + strconv.Quote(id) + ": its history before seq " + strconv.FormatUint(first.Seq, 10) + " (a compaction point) was dropped by retention; read at seq " + strconv.FormatUint(first.Seq, 10) + " or later",
		Err:     history.ErrCompacted,
	}
}
