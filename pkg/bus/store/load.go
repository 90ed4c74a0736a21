package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/internal/connloss"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// refresh brings e up to the last event of its branch's history: nothing
// more than one read when e is current, the missed events when it is
// behind, the snapshot and the events after it when e is empty. It returns
// ops.ErrBranchNotFound (and resets e) when the branch has no history.
func (s *Store) refresh(ctx context.Context, e *entry) error {
	last, err := s.lastSeq(ctx, e.id)
	if err != nil {
		if errors.Is(err, history.ErrBranchNotFound) {
			e.reset()
		}
		return err
	}
	if e.b != nil && e.b.Seq > last {
		// The cached branch is ahead of history: it was deleted (and
		// perhaps created again) since.
		e.reset()
	}
	if e.b != nil && e.b.Seq == last {
		return nil
	}
	if e.b == nil {
		s.obs.CacheMiss(e.id)
		s.readSnapshot(ctx, e, last)
	}
	return s.catchUp(ctx, e, last, nil)
}

// lastSeq returns the sequence of the last event of the branch's history,
// or ops.ErrBranchNotFound when it has none, history.ErrBranchDeleted
// when that event is its tombstone.
func (s *Store) lastSeq(ctx context.Context, branchID string) (uint64, error) {
	last, deleted, err := s.lastMsg(ctx, branchID)
	if err == nil && deleted {
		return 0, history.ErrBranchDeleted
	}
	return last, err
}

// lastMsg returns the sequence of the last message of the branch's
// history subject and whether it is a tombstone (by its event type
// header), or ops.ErrBranchNotFound when the subject has none.
func (s *Store) lastMsg(ctx context.Context, branchID string) (uint64, bool, error) {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	last, err := s.stream.GetLastMsgForSubject(ctx, s.subj.History(branchID))
	err = connloss.Err(ctx, err)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, false, history.ErrBranchNotFound
	}
	if err != nil {
		return 0, false, fmt.Errorf("store: read history of branch %s: %w", branchID, err)
	}
	return last.Sequence, last.Header.Get(HeaderEventType) == string(history.EventDeleted), nil
}

// readSnapshot fills the empty e from the branch's snapshot, if there is a
// usable one not ahead of last. Whatever goes wrong leaves e empty, to be
// rebuilt from history; the snapshot's revision is kept for the next
// write either way.
func (s *Store) readSnapshot(ctx context.Context, e *entry, last uint64) {
	gctx, cancel := s.bounded(ctx)
	kve, err := s.kv.Get(gctx, e.id)
	err = connloss.Err(gctx, err)
	cancel()
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return
	}
	if err != nil {
		if ctx.Err() == nil {
			s.unreadable(err).Err(err).Str("branch", e.id).Msg("read branch snapshot; rebuilding from history")
		}
		return
	}
	e.snap.rev = kve.Revision()
	size := len(kve.Value())
	snap, err := decodeSnapshot(kve.Value())
	if err == nil && snap.Branch.ID != e.id {
		err = fmt.Errorf("snapshot of branch %q stored under %q", snap.Branch.ID, e.id)
	}
	if err != nil {
		s.log.Warn().Err(err).Str("branch", e.id).Uint64("revision", e.snap.rev).Msg("corrupt branch snapshot; rebuilding from history")
		return
	}
	if snap.Seq > last {
		// The snapshot is ahead of history: it belongs to an earlier
		// branch of the same id that was deleted.
		return
	}
	b := snap.Branch
	covered := 0
	if len(snap.Segments) > 0 {
		msgs := make([]history.Message, 0, snap.Total)
		for _, seg := range snap.Segments {
			gctx, cancel := s.bounded(ctx)
			kve, err := s.kv.Get(gctx, seg.Key)
			err = connloss.Err(gctx, err)
			cancel()
			if err == nil {
				var part []history.Message
				if part, err = decodeSegment(kve.Value(), seg.Count); err == nil {
					msgs = append(msgs, part...)
					size += len(kve.Value())
					continue
				}
			}
			if ctx.Err() == nil {
				s.unreadable(err).Err(err).Str("branch", e.id).Str("segment", seg.Key).Msg("read branch snapshot segment; rebuilding from history")
			}
			return
		}
		covered = len(msgs)
		b.Messages = append(msgs, b.Messages...)
	}
	e.b, e.size = b, size
	e.snap = snapState{rev: e.snap.rev, seq: snap.Seq, segs: snap.Segments, covered: covered}
}

// unreadable returns the log event for a snapshot that could not be
// read: a warning, unless JetStream gave no answer at all (timed out, the
// connection lost, no responders), which the worker's health check
// reports once for every request it touches: then a debug line.
func (s *Store) unreadable(err error) *zerolog.Event {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, connloss.ErrLost) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) {
		return s.log.Debug()
	}
	return s.log.Warn()
}

// catchUp folds the history events after e.b.Seq up to and including
// last into e (an empty e is rebuilt from the first event), then writes a
// snapshot if the cadence says so. seen, when not nil, is called for
// every event folded.
func (s *Store) catchUp(ctx context.Context, e *entry, last uint64, seen func(history.Event)) error {
	branchID := e.id
	from := uint64(1)
	if e.b != nil {
		from = e.b.Seq + 1
	}
	budget := directReadBudget
	if e.b == nil {
		budget = 0
		s.obs.Rebuilt(branchID)
	}
	rebuilt := false
	err := s.readEvents(ctx, branchID, from, last, 0, budget, func(ev history.Event, size int) error {
		if ev.Type == history.EventCreated && e.b != nil && e.b.Seq != 0 {
			// A new branch of this id started after the snapshot was
			// taken: everything before it belongs to a deleted branch.
			rev := e.snap.rev
			e.reset()
			e.snap.rev = rev
			rebuilt = true
		}
		if err := e.apply(ev, size); err != nil {
			return corrupt(fmt.Errorf("%w: replay history of branch %s: %w", ErrCorruptHistory, branchID, err))
		}
		e.snap.events++
		e.snap.bytes += size
		if seen != nil {
			seen(ev)
		}
		return nil
	})
	if err != nil {
		e.reset()
		return err
	}
	if e.b == nil || e.b.Seq < last {
		e.reset()
		// The history ended early: the branch was deleted (purged) while
		// it was read, or the server is struggling.
		if _, err := s.lastSeq(ctx, branchID); errors.Is(err, history.ErrBranchNotFound) {
			return err
		}
		return &ops.Error{
			Code:      ops.CodeUnavailable,
			Message:   fmt.Sprintf("history of branch %s could not be read up to seq %d", branchID, last),
			Temporary: true,
		}
	}
	if rebuilt {
		s.log.Info().Str("branch", branchID).Msg("branch snapshot predates the branch's creation; rebuilt")
	}
	s.maybeSnapshot(ctx, e)
	return nil
}

// readEvents calls fn with the events (and their encoded sizes) of branchID with from <= seq <= to
// (to == 0: no upper bound), in order, at most max of them (0: no limit).
// The first budget events are read with single-message gets, the rest with
// an ordered consumer.
func (s *Store) readEvents(ctx context.Context, branchID string, from, to uint64, max, budget int, fn func(ev history.Event, size int) error) error {
	subject := s.subj.History(branchID)
	n := 0
	done := func(seq uint64) bool {
		return (to != 0 && seq >= to) || (max > 0 && n >= max)
	}
	for ; budget > 0; budget-- {
		gctx, cancel := s.bounded(ctx)
		msg, err := s.stream.GetMsg(gctx, from, jetstream.WithGetMsgSubject(subject))
		err = connloss.Err(gctx, err)
		cancel()
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("store: read history of branch %s: %w", branchID, err)
		}
		if to != 0 && msg.Sequence > to {
			return nil
		}
		ev, err := decodeEvent(msg.Data, msg.Sequence)
		if err != nil {
			return fmt.Errorf("store: history of branch %s: %w", branchID, err)
		}
		n++
		if err := fn(ev, len(msg.Data)); err != nil {
			return err
		}
		if done(msg.Sequence) {
			return nil
		}
		from = msg.Sequence + 1
	}

	// An ordered consumer delivers the rest in batches. It only stops at
	// to, at max, or when a fetch comes back empty (the end of the log).
	octx, cancel := s.bounded(ctx)
	cons, err := s.js.OrderedConsumer(octx, s.subj.HistoryStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{subject},
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       from,
		InactiveThreshold: 5 * time.Second,
	})
	err = connloss.Err(octx, err)
	cancel()
	if err != nil {
		return fmt.Errorf("store: replay history of branch %s: %w", branchID, err)
	}
	defer s.dropOrdered(cons)
	for {
		want := replayFetchBatch
		if max > 0 && max-n < want {
			want = max - n
		}
		wait := replayFetchWait
		if dl, ok := ctx.Deadline(); ok {
			if left := time.Until(dl); left < wait {
				wait = left
			}
		}
		if wait <= 0 {
			return ctx.Err()
		}
		batch, err := cons.Fetch(want, jetstream.FetchMaxWait(wait))
		if err != nil {
			return fmt.Errorf("store: replay history of branch %s: %w", branchID, err)
		}
		got := 0
		for msg := range batch.Messages() {
			got++
			meta, err := msg.Metadata()
			if err != nil {
				return fmt.Errorf("store: replay history of branch %s: %w", branchID, err)
			}
			seq := meta.Sequence.Stream
			if to != 0 && seq > to {
				return nil
			}
			ev, err := decodeEvent(msg.Data(), seq)
			if err != nil {
				return fmt.Errorf("store: history of branch %s: %w", branchID, err)
			}
			n++
			if err := fn(ev, len(msg.Data())); err != nil {
				return err
			}
			if done(seq) {
				return nil
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return fmt.Errorf("store: replay history of branch %s: %w", branchID, err)
		}
		if got == 0 {
			// The end of the log (messages that exist arrive at once);
			// the caller checks whether it reached to.
			return ctx.Err()
		}
	}
}

// dropOrdered deletes the server side of an ordered consumer once a replay
// is done with it, so that many replays in a short time do not pile up
// consumers until their inactivity threshold (and hit the server's consumer
// limit). A failure is harmless: the threshold removes it later.
func (s *Store) dropOrdered(cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.js.DeleteConsumer(ctx, s.subj.HistoryStream(), info.Name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		s.log.Debug().Err(err).Str("consumer", info.Name).Msg("delete replay consumer")
	}
}
