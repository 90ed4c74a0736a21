package ops

import (
	"container/list"
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

// DefaultForkCache is how many folded forks, and how many parents'
// prefixes, an engine keeps in memory (each; least recently used first
// out), so that reading a fork again costs what changed since.
const DefaultForkCache = 64

// forkStore is the engine's view of its [history.Store]: a fork (a
// branch whose branch.created names a parent and a sequence) is answered
// as its parent was at that sequence followed by the fork's own events,
// while the store holds and folds only the fork's own events. The
// parent's prefix is read, never copied: a fork writes what it adds.
//
// A parent's state at a sequence never changes (history is append-only),
// so the prefixes are kept in memory; a fork's fold is kept too and
// brought up to date with its newer events only.
type forkStore struct {
	history.Store
	bases *branchLRU // "<parent>@<seq>": the parent at seq
	forks *branchLRU // fork id: the fork at its last folded seq
}

func newForkStore(s history.Store) *forkStore {
	return &forkStore{Store: s, bases: newBranchLRU(DefaultForkCache), forks: newBranchLRU(DefaultForkCache)}
}

// Load returns the branch at its head, a fork with its parent's prefix.
func (s *forkStore) Load(ctx context.Context, id string) (*history.Branch, error) {
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
func (s *forkStore) Create(ctx context.Context, id string, ev history.Event) (*history.Branch, error) {
	b, err := s.Store.Create(ctx, id, ev)
	return s.composeAfter(ctx, b, err)
}

// Append appends to the branch; see [history.Store.Append].
func (s *forkStore) Append(ctx context.Context, id string, ev history.Event) (*history.Branch, error) {
	b, err := s.Store.Append(ctx, id, ev)
	return s.composeAfter(ctx, b, err)
}

// Delete deletes the branch and forgets what was kept of it.
func (s *forkStore) Delete(ctx context.Context, id string) error {
	s.forks.drop(id)
	s.bases.dropPrefix(id + "@")
	return s.Store.Delete(ctx, id)
}

func (s *forkStore) composeAfter(ctx context.Context, b *history.Branch, err error) (*history.Branch, error) {
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
func (s *forkStore) compose(ctx context.Context, own *history.Branch, depth int) (*history.Branch, error) {
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
	b, err := s.foldAt(ctx, own.ID, pastPoint{AtSeq: own.Seq}, depth)
	if err != nil {
		return nil, err
	}
	if b.Seq != own.Seq {
		return nil, Errorf(CodeInternal, "fork %q: its history folds to seq %d, its store to %d", own.ID, b.Seq, own.Seq)
	}
	s.forks.put(own.ID, b)
	return b, nil
}

// extend returns a copy of the folded fork c brought up to seq upto with
// the fork's events after c.Seq.
func (s *forkStore) extend(ctx context.Context, c *history.Branch, upto uint64) (*history.Branch, error) {
	b := *c
	b.Messages = slices.Clone(c.Messages) // Apply may replace one in place
	for after := c.Seq; after < upto; {
		evs, err := s.Store.History(ctx, c.ID, after, history.MaxHistoryPage)
		if err != nil {
			return nil, historyErr(c.ID, err)
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			if ev.Seq > upto {
				return &b, nil
			}
			if err := b.Apply(ev); err != nil {
				return nil, Errorf(CodeInternal, "fold history of fork %q: %v", c.ID, err)
			}
		}
		after = evs[len(evs)-1].Seq
	}
	return &b, nil
}

// foldAt returns the branch id as it was at p: the fold of its history
// events from the first to the last that p includes, a fork's starting
// from its parent at the fork point. The history is read in pages of 64
// events doubling up to [history.MaxHistoryPage]. A branch with no event
// at p has Seq 0.
func (s *forkStore) foldAt(ctx context.Context, id string, p pastPoint, depth int) (*history.Branch, error) {
	b := &history.Branch{}
	var after uint64
	limit := pastFirstPage
	for ; ; limit = min(2*limit, history.MaxHistoryPage) {
		evs, err := s.Store.History(ctx, id, after, limit)
		if err != nil {
			return nil, historyErr(id, err)
		}
		for _, ev := range evs {
			if !p.includes(ev) {
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
				return nil, Errorf(CodeInternal, "fold history of branch %q: %v", id, err)
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
func (s *forkStore) startFork(ctx context.Context, created history.Event, depth int) (*history.Branch, error) {
	base, err := s.base(ctx, *created.Fork, depth+1)
	if err != nil {
		return nil, err
	}
	b := &history.Branch{}
	if err := b.Apply(created); err != nil {
		return nil, Errorf(CodeInternal, "fold history of fork %q: %v", created.BranchID, err)
	}
	b.Messages = append(slices.Clone(base.Messages), b.Messages...)
	return b, nil
}

// base returns the parent of a fork as it was at the fork point.
func (s *forkStore) base(ctx context.Context, at history.ForkPoint, depth int) (*history.Branch, error) {
	if depth > history.MaxForkDepth {
		return nil, Errorf(CodeInvalidRequest, "branch %q is a fork more than %d forks deep", at.BranchID, history.MaxForkDepth)
	}
	key := at.BranchID + "@" + strconv.FormatUint(at.Seq, 10)
	if b := s.bases.get(key); b != nil {
		return b, nil
	}
	head, err := s.Store.Load(ctx, at.BranchID)
	if errors.Is(err, history.ErrBranchNotFound) {
		return nil, Errorf(CodeBranchNotFound, "branch %q, the parent of a fork, not found", at.BranchID)
	}
	if err != nil {
		return nil, storeErr("load", err)
	}
	var b *history.Branch
	switch {
	case head.Seq == at.Seq:
		b, err = s.compose(ctx, head, depth)
	case head.Seq > at.Seq:
		b, err = s.foldAt(ctx, at.BranchID, pastPoint{AtSeq: at.Seq}, depth)
	}
	if err != nil {
		return nil, err
	}
	if b == nil || b.Seq != at.Seq {
		return nil, Errorf(CodeBranchNotFound, "branch %q no longer holds seq %d, the start of a fork of it", at.BranchID, at.Seq)
	}
	s.bases.put(key, b)
	return b, nil
}

// compactedErr refuses a read of branch id at a point before first, its
// first kept event, a compaction point: the events before it, which
// that read folds, were dropped by retention.
func compactedErr(id string, first history.Event) error {
	return &Error{
		Code:    CodeInvalidRequest,
		Message: "branch " + strconv.Quote(id) + ": its history before seq " + strconv.FormatUint(first.Seq, 10) + " (a compaction point) was dropped by retention; read at seq " + strconv.FormatUint(first.Seq, 10) + " or later",
		Err:     history.ErrCompacted,
	}
}

func historyErr(id string, err error) error {
	if errors.Is(err, history.ErrBranchNotFound) {
		return Errorf(CodeBranchNotFound, "branch %q not found", id)
	}
	return storeErr("history", err)
}

// branchLRU keeps up to n read-only branches by key, least recently
// used first out.
type branchLRU struct {
	mu    sync.Mutex
	n     int
	order *list.List // of *lruEntry, most recent first
	byKey map[string]*list.Element
}

type lruEntry struct {
	key string
	b   *history.Branch
}

func newBranchLRU(n int) *branchLRU {
	return &branchLRU{n: n, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *branchLRU) get(key string) *history.Branch {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruEntry).b
}

func (c *branchLRU) put(key string, b *history.Branch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		el.Value.(*lruEntry).b = b
		c.order.MoveToFront(el)
		return
	}
	c.byKey[key] = c.order.PushFront(&lruEntry{key, b})
	for c.order.Len() > c.n {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*lruEntry).key)
	}
}

func (c *branchLRU) drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.order.Remove(el)
		delete(c.byKey, key)
	}
}

func (c *branchLRU) dropPrefix(prefix string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, el := range c.byKey {
		if len(key) >= len(prefix) && key[:len(prefix)] == prefix {
			c.order.Remove(el)
			delete(c.byKey, key)
		}
	}
}
