package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/internal/connloss"
	"github.com/lionbus/lionbus/pkg/bus/internal/jserr"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// ErrCompactionTooLarge is returned (wrapped) by [Store.Compact] when the
// branch's state does not fit in one history event (the server's max
// payload): the branch is not compacted.
var ErrCompactionTooLarge = errors.New("store: the branch's state exceeds the max payload of one history event")

// ErrHeadMoved is returned (wrapped) by [Store.Compact] when another
// writer appended to the branch while the compaction was written: the
// compaction point is not written (the next try folds the new events).
var ErrHeadMoved = errors.New("store: the branch's head moved during its compaction")

// compactionSlack is what a compaction event leaves of the max payload
// for the message's subject and headers.
const compactionSlack = 1024

// Compact appends a compaction point (a history.EventCompacted carrying
// the branch's state at its head, see history.NewCompaction) with the
// given report of what retention drops before it (dropped* may be 0) and
// reason, and returns it as stored. It appends only if the head it folded
// is still the branch's last event (else ErrHeadMoved) and only if the
// event fits the max payload (else ErrCompactionTooLarge); it refuses a
// fork (its state is its parent's prefix and its own events), a deleted
// branch and one that does not exist. requestID names the event (its
// Nats-Msg-Id), so that a compaction sent twice is stored once.
func (s *Store) Compact(ctx context.Context, branchID, requestID, reason string, droppedBefore, droppedEvents uint64) (history.Event, error) {
	if err := checkBranchID(branchID); err != nil {
		return history.Event{}, err
	}
	e := s.cache.get(branchID)
	e.mu.Lock()
	defer e.mu.Unlock()
	defer s.cache.resize(e)
	if err := s.refresh(ctx, e); err != nil {
		return history.Event{}, err
	}
	if e.b.Fork != nil {
		return history.Event{}, fmt.Errorf("store: compact branch %s: it is a fork", branchID)
	}
	c := history.NewCompaction(e.b)
	c.DroppedBefore, c.DroppedEvents, c.Reason = droppedBefore, droppedEvents, reason
	// The event's time is when it was written; the branch's UpdatedAt
	// stays its last change's (history.Branch.Apply).
	ev := history.Event{Type: history.EventCompacted, RequestID: requestID, Time: time.Now().UTC(), BranchID: branchID, Compaction: &c}
	if ev.Time.Before(e.b.UpdatedAt) {
		ev.Time = e.b.UpdatedAt // times never go backwards along a branch
	}
	data, err := encodeEvent(ev)
	if err != nil {
		return history.Event{}, fmt.Errorf("store: encode compaction of branch %s: %w", branchID, err)
	}
	if len(data) > s.maxValue-compactionSlack {
		return history.Event{}, fmt.Errorf("%w: branch %s, %d bytes, max %d", ErrCompactionTooLarge, branchID, len(data), s.maxValue-compactionSlack)
	}
	msgID := ""
	if requestID != "" {
		msgID = branchID + "/" + requestID + "/" + string(ev.Type)
	}
	ack, size, err := s.publish(ctx, branchID, ev, e.b.Seq, msgID)
	if jserr.WrongLastSequence(err) {
		return history.Event{}, fmt.Errorf("%w: branch %s", ErrHeadMoved, branchID)
	}
	if err != nil {
		return history.Event{}, err
	}
	if ack.Duplicate {
		return history.Event{}, fmt.Errorf("%w: branch %s: compaction %s was stored before", ErrHeadMoved, branchID, requestID)
	}
	ev.Seq = ack.Sequence
	if err := e.apply(ev, size); err != nil {
		return history.Event{}, fmt.Errorf("store: compact branch %s: %w", branchID, err)
	}
	e.size = size
	e.snap.events++
	e.snap.bytes += size
	return ev, nil
}

// DropBefore removes the branch's history events with a sequence below
// seq (JetStream purge of its subject up to seq), keeping seq and every
// later one: retention's cut at a compaction point. The caller makes
// sure the event at seq is one a fold can start from (a compaction point
// or the branch's creation) and that no live fork's prefix is cut.
func (s *Store) DropBefore(ctx context.Context, branchID string, seq uint64) error {
	if err := checkBranchID(branchID); err != nil {
		return err
	}
	pctx, cancel := s.bounded(ctx)
	defer cancel()
	err := s.stream.Purge(pctx, jetstream.WithPurgeSubject(s.subj.History(branchID)), jetstream.WithPurgeSequence(seq))
	if err := connloss.Err(pctx, err); err != nil {
		return fmt.Errorf("store: drop the history of branch %s before seq %d: %w", branchID, seq, err)
	}
	return nil
}
