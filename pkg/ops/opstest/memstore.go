package opstest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

// MemoryStore is an in-memory [Store]: the reference implementation of the
// Store contract, for tests and single-process use. Sequences are assigned
// from one counter shared by all branches, as a stream would, so they are
// increasing per branch but not contiguous.
type MemoryStore struct {
	mu       sync.Mutex
	seq      uint64
	branches map[string]*memBranch
}

type memBranch struct {
	events []history.Event
	keys   map[string]uint64 // by history.Event.CommitKey
	folded *history.Branch
}

var _ history.Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty in-memory store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{branches: make(map[string]*memBranch)}
}

// Load returns a copy of the folded branch, or ErrBranchNotFound.
func (s *MemoryStore) Load(ctx context.Context, branchID string) (*history.Branch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	mb, ok := s.branches[branchID]
	if !ok {
		return nil, fmt.Errorf("%w: %q", history.ErrBranchNotFound, branchID)
	}
	return mb.folded.Clone(), nil
}

// Create starts a branch with ev, or returns ErrBranchExists.
func (s *MemoryStore) Create(ctx context.Context, branchID string, ev history.Event) (*history.Branch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ev.Type != history.EventCreated {
		return nil, fmt.Errorf("ops: Create needs a %s event, got %q", history.EventCreated, ev.Type)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.branches[branchID]; ok {
		return nil, fmt.Errorf("%w: %q", history.ErrBranchExists, branchID)
	}
	mb := &memBranch{keys: make(map[string]uint64), folded: &history.Branch{}}
	if err := s.appendLocked(mb, branchID, ev); err != nil {
		return nil, err
	}
	s.branches[branchID] = mb
	return mb.folded.Clone(), nil
}

// Append adds ev after the branch's last event. See [Store.Append].
func (s *MemoryStore) Append(ctx context.Context, branchID string, ev history.Event) (*history.Branch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ev.Type == history.EventCreated {
		return nil, fmt.Errorf("ops: Append cannot add a %s event; use Create", history.EventCreated)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	mb, ok := s.branches[branchID]
	if !ok {
		return nil, fmt.Errorf("%w: %q", history.ErrBranchNotFound, branchID)
	}
	if k := ev.CommitKey(); k != "" {
		if seq, dup := mb.keys[k]; dup {
			return mb.folded.Clone(), fmt.Errorf("%w: request %q is event %d of branch %q", history.ErrAlreadyCommitted, ev.RequestID, seq, branchID)
		}
	}
	if err := s.appendLocked(mb, branchID, ev); err != nil {
		return nil, err
	}
	return mb.folded.Clone(), nil
}

func (s *MemoryStore) appendLocked(mb *memBranch, branchID string, ev history.Event) error {
	ev = ev.Clone()
	ev.Seq = s.seq + 1
	ev.BranchID = branchID
	next := mb.folded.Clone()
	if err := next.Apply(ev); err != nil {
		return err
	}
	s.seq++
	mb.events = append(mb.events, ev)
	if k := ev.CommitKey(); k != "" {
		mb.keys[k] = ev.Seq
	}
	mb.folded = next
	return nil
}

// History returns copies of the events with Seq > after, at most limit
// (limit <= 0 or above MaxHistoryPage means MaxHistoryPage).
func (s *MemoryStore) History(ctx context.Context, branchID string, after uint64, limit int) ([]history.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > history.MaxHistoryPage {
		limit = history.MaxHistoryPage
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	mb, ok := s.branches[branchID]
	if !ok {
		return nil, fmt.Errorf("%w: %q", history.ErrBranchNotFound, branchID)
	}
	out := []history.Event{}
	for _, ev := range mb.events {
		if ev.Seq <= after {
			continue
		}
		out = append(out, ev.Clone())
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// Delete removes a branch, or returns ErrBranchNotFound.
func (s *MemoryStore) Delete(ctx context.Context, branchID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.branches[branchID]; !ok {
		return fmt.Errorf("%w: %q", history.ErrBranchNotFound, branchID)
	}
	delete(s.branches, branchID)
	return nil
}

var _ history.Lister = (*MemoryStore)(nil)

// Branches lists the branches not deleted whose id sorts after after, by
// id, at most limit (limit <= 0 or above MaxBranchPage means
// MaxBranchPage). See [history.Lister].
func (s *MemoryStore) Branches(ctx context.Context, after string, limit int) ([]history.Summary, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if limit <= 0 || limit > history.MaxBranchPage {
		limit = history.MaxBranchPage
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.branches))
	for id, mb := range s.branches {
		if id > after && !mb.folded.Deleted {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	more := len(ids) > limit
	if more {
		ids = ids[:limit]
	}
	out := make([]history.Summary, 0, len(ids))
	for _, id := range ids {
		mb := s.branches[id]
		out = append(out, history.Summary{ID: id, Events: uint64(len(mb.events)), Updated: mb.folded.UpdatedAt})
	}
	return out, more, nil
}
