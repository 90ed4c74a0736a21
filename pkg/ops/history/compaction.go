package history

import (
	"errors"
	"fmt"
)

// ErrCompacted is returned (wrapped) for a read of a branch at a point
// before its first kept compaction point: retention dropped the events
// that fold it.
var ErrCompacted = errors.New("ops: the branch's history before this point was dropped by retention")

// NewCompaction returns the compaction of b, a branch folded up to its
// head (not a fork's own fold: a compaction point holds a whole state):
// the state an EventCompacted after b.Seq carries.
func NewCompaction(b *Branch) Compaction {
	c := Compaction{
		Head: b.Seq, Settings: cloneSettings(b.Settings), Messages: cloneMessages(b.Messages),
		ModelCalls: b.ModelCalls, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt,
	}
	if c.Messages == nil {
		c.Messages = []Message{}
	}
	if b.Commits.Len() > 0 {
		c.Commits = make(map[string]uint64, b.Commits.Len())
		for id, seq := range b.Commits.All() {
			c.Commits[id] = seq
		}
	}
	return c
}

// applyCompaction folds an EventCompacted: the branch becomes the state it
// carries, whatever the branch held before (nothing, when the events
// before it were dropped). Its UpdatedAt stays the state's: a compaction
// point changes nothing of the conversation.
func (b *Branch) applyCompaction(ev Event) error {
	c := ev.Compaction
	if c == nil {
		return fmt.Errorf("%w: %s at seq %d carries no state", ErrEventOrder, ev.Type, ev.Seq)
	}
	if c.Head >= ev.Seq {
		return fmt.Errorf("%w: %s at seq %d names head %d", ErrEventOrder, ev.Type, ev.Seq, c.Head)
	}
	id := b.ID
	if ev.BranchID != "" {
		id = ev.BranchID
	}
	*b = Branch{
		ID: id, Settings: cloneSettings(c.Settings), Messages: cloneMessages(c.Messages),
		ModelCalls: c.ModelCalls, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
		Commits: CommitsFromMap(c.Commits),
	}
	if b.Messages == nil {
		b.Messages = []Message{}
	}
	return nil
}
