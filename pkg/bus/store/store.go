// Package store is the JetStream implementation of ops.Store.
//
// [Store] implements ops.Store. History is the source of truth: every
// change to a branch is an event on lion.history.<branch>, appended with
// the expected last subject sequence, so concurrent writers never
// overwrite each other (the loser folds what it missed and appends after
// it), and with a Nats-Msg-Id of branch, request and event type, so a
// repeated append is stored once. The lion_branches bucket holds a msgpack
// snapshot of the folded branch (its commits as one compact table) and the
// sequence it reflects; Load replays the events after it, and a missing,
// corrupt or stale snapshot is rebuilt from history. Snapshot writes are
// best-effort, conditional on the revision read, and never move a snapshot
// backwards. History pages are bounded by ops.MaxHistoryPage.
package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
)

// Bounds and defaults of [Store].
const (
	// DefaultAppendRetries is how many times [Store.Append] re-reads
	// and retries after losing an optimistic-concurrency race.
	DefaultAppendRetries = 32

	// HeaderEventType is the header of a history message that carries the
	// event's [ops.EventType], so that tools can filter without decoding.
	HeaderEventType = "Lionbus-Event-Type"

	// directReadBudget is how many events a replay reads one by one (a
	// direct get each) before switching to an ordered consumer: a snapshot
	// is usually only a few events behind, a rebuild reads the whole log.
	directReadBudget = 8

	// replayFetchBatch is the batch size of the ordered consumer used for
	// long replays, and replayFetchWait how long one of its fetches waits:
	// stored messages arrive at once, so only the end of the log waits.
	replayFetchBatch = 256
	replayFetchWait  = time.Second
)

// ErrAppendConflict is returned (wrapped in a temporary *ops.Error with
// code [ops.CodeUnavailable]) by [Store.Append] when every retry lost the
// optimistic-concurrency race to other writers.
var ErrAppendConflict = errors.New("store: too many concurrent appends to one branch")

// ErrCorruptHistory is returned (wrapped) when a message in a branch's
// history cannot be decoded as an event, or the events do not fold (see
// ops.ErrEventOrder). The branch cannot be loaded until an operator
// repairs its history. It comes wrapped in a final (not temporary)
// *ops.Error with code ops.CodeInternal, since retrying cannot help.
var ErrCorruptHistory = errors.New("store: corrupt branch history")

// corrupt returns err, which wraps ErrCorruptHistory, as a final
// ops.CodeInternal error.
func corrupt(err error) error {
	return &ops.Error{Code: ops.CodeInternal, Message: err.Error(), Err: err}
}

// Config configures a [Store]. The zero value is usable.
type Config struct {
	// AppendRetries bounds how often Append re-reads the branch and retries
	// after another writer committed first. Default DefaultAppendRetries.
	AppendRetries int

	// Logger receives corrupt-snapshot and snapshot-write warnings. The zero
	// value discards them.
	Logger zerolog.Logger
}

// Store is the NATS implementation of [ops.Store].
//
// A branch's history is the sequence of messages on the subject
// Subjects.History(branch) in the history stream, one msgpack-encoded
// [ops.Event] each; an event's Seq is its stream sequence. Appends carry the
// expected last sequence of that subject, so two writers never overwrite
// each other: the loser re-reads the events it missed and appends after
// them. Each appended message also carries the Nats-Msg-Id
// "<branch>/<request id>/<event type>", so a re-sent append inside the
// stream's duplicate window is stored once (a creation needs none: it
// expects the subject to be empty; nor does an event without a request id).
//
// The branches bucket holds, under the branch id, a msgpack snapshot of the
// folded branch and the sequence it reflects. Load replays the history
// after the snapshot; a missing, corrupt or stale snapshot is rebuilt from
// the whole history and written back. Snapshot writes are best-effort and
// use the key's revision, so they never move a snapshot backwards and never
// fail an operation.
//
// Sizes: one event, and one snapshot, must each fit in the server's
// max_payload (1 MiB by default). An append of a larger event fails; a
// snapshot that does not fit is not written (logged at debug level), and
// the branch is then rebuilt from its whole history on every load, which is
// correct but slow, so long-lived branches should be cleared or cloned.
//
// Snapshots name history positions by stream sequence, so the history
// stream must not be deleted and re-created (restarting its sequences)
// while the branches bucket keeps its snapshots: purge the bucket too.
//
// A Store is safe for concurrent use by several goroutines and processes.
type Store struct {
	js      jetstream.JetStream
	subj    protocol.Subjects
	stream  jetstream.Stream
	kv      jetstream.KeyValue
	retries int
	log     zerolog.Logger
}

var _ ops.Store = (*Store)(nil)

// NewStore returns a Store over the history stream and the branches bucket
// of res (see [Provision]), publishing through js.
func New(js jetstream.JetStream, res *provision.Resources, cfg Config) (*Store, error) {
	if js == nil || res == nil || res.History == nil || res.Branches == nil {
		return nil, errors.New("store: NewStore needs a JetStream handle and provisioned provision.Resources")
	}
	if cfg.AppendRetries <= 0 {
		cfg.AppendRetries = DefaultAppendRetries
	}
	return &Store{
		js:      js,
		subj:    res.Subjects,
		stream:  res.History,
		kv:      res.Branches,
		retries: cfg.AppendRetries,
		log:     cfg.Logger,
	}, nil
}

// loaded is a branch with the snapshot revision it was read against.
type loaded struct {
	b       *ops.Branch
	rev     uint64 // snapshot revision read, 0 when there was none
	snapSeq uint64 // sequence of the snapshot read, 0 when there was none
}

// Load returns the branch folded up to its latest history event, or
// ops.ErrBranchNotFound.
func (s *Store) Load(ctx context.Context, branchID string) (*ops.Branch, error) {
	if err := checkBranchID(branchID); err != nil {
		return nil, err
	}
	l, err := s.load(ctx, branchID)
	if err != nil {
		return nil, err
	}
	if l.b.Seq != l.snapSeq {
		s.writeSnapshot(ctx, branchID, l)
	}
	return l.b, nil
}

func (s *Store) load(ctx context.Context, branchID string) (*loaded, error) {
	subject := s.subj.History(branchID)
	l := &loaded{}
	entry, err := s.kv.Get(ctx, branchID)
	switch {
	case err == nil:
		l.rev = entry.Revision()
		snap, derr := decodeSnapshot(entry.Value())
		if derr != nil || snap.Branch.ID != branchID {
			s.log.Warn().Err(derr).Str("branch", branchID).Uint64("revision", l.rev).Msg("corrupt branch snapshot; rebuilding from history")
		} else {
			l.b, l.snapSeq = snap.Branch, snap.Seq
		}
	case errors.Is(err, jetstream.ErrKeyNotFound):
	default:
		// The snapshot is only a cache: rebuild from history.
		if ctx.Err() != nil {
			return nil, fmt.Errorf("store: read snapshot of branch %s: %w", branchID, err)
		}
		s.log.Warn().Err(err).Str("branch", branchID).Msg("read branch snapshot; rebuilding from history")
	}

	last, err := s.stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, ops.ErrBranchNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: read history of branch %s: %w", branchID, err)
	}
	if l.b != nil && l.b.Seq > last.Sequence {
		// The snapshot is ahead of history: it belongs to an earlier
		// branch of the same id that was deleted.
		l.b, l.snapSeq = nil, 0
	}
	if l.b != nil && l.b.Seq == last.Sequence {
		return l, nil
	}
	if err := s.catchUp(ctx, branchID, l, last.Sequence, nil); err != nil {
		return nil, err
	}
	return l, nil
}

// catchUp folds the history events after l.b.Seq up to and including
// last into l.b (a nil l.b is rebuilt from the first event). seen, when not
// nil, is called for every event folded.
func (s *Store) catchUp(ctx context.Context, branchID string, l *loaded, last uint64, seen func(ops.Event)) error {
	from := uint64(1)
	if l.b != nil {
		from = l.b.Seq + 1
	}
	budget := directReadBudget
	if l.b == nil {
		budget = 0
	}
	rebuilt := false
	err := s.readEvents(ctx, branchID, from, last, 0, budget, func(ev ops.Event) error {
		if ev.Type == ops.EventCreated && l.b != nil && l.b.Seq != 0 {
			// A new branch of this id started after the snapshot was
			// taken: everything before it belongs to a deleted branch.
			l.b = nil
			rebuilt = true
		}
		if l.b == nil {
			l.b = &ops.Branch{}
		}
		if err := l.b.Apply(ev); err != nil {
			return corrupt(fmt.Errorf("%w: replay history of branch %s: %w", ErrCorruptHistory, branchID, err))
		}
		if seen != nil {
			seen(ev)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if l.b == nil || l.b.Seq < last {
		// The history ended early: the branch was deleted (purged) while
		// it was read, or the server is struggling.
		if _, err := s.stream.GetLastMsgForSubject(ctx, s.subj.History(branchID)); errors.Is(err, jetstream.ErrMsgNotFound) {
			return ops.ErrBranchNotFound
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
	return nil
}

// readEvents calls fn with the events of branchID with from <= seq <= to
// (to == 0: no upper bound), in order, at most max of them (0: no limit).
// The first budget events are read with single-message gets, the rest with
// an ordered consumer.
func (s *Store) readEvents(ctx context.Context, branchID string, from, to uint64, max, budget int, fn func(ops.Event) error) error {
	subject := s.subj.History(branchID)
	n := 0
	done := func(seq uint64) bool {
		return (to != 0 && seq >= to) || (max > 0 && n >= max)
	}
	for ; budget > 0; budget-- {
		msg, err := s.stream.GetMsg(ctx, from, jetstream.WithGetMsgSubject(subject))
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
		if err := fn(ev); err != nil {
			return err
		}
		if done(msg.Sequence) {
			return nil
		}
		from = msg.Sequence + 1
	}

	// An ordered consumer delivers the rest in batches. It only stops at
	// to, at max, or when a fetch comes back empty (the end of the log).
	cons, err := s.js.OrderedConsumer(ctx, s.subj.HistoryStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{subject},
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       from,
		InactiveThreshold: 5 * time.Second,
	})
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
			if err := fn(ev); err != nil {
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

// Create appends ev, which must be an EventCreated, as the first event of a
// new branch. It returns ops.ErrBranchExists when the branch already has
// history, except when that history starts with an EventCreated of the same
// request: then it returns the branch and ops.ErrAlreadyCommitted.
func (s *Store) Create(ctx context.Context, branchID string, ev ops.Event) (*ops.Branch, error) {
	if err := checkBranchID(branchID); err != nil {
		return nil, err
	}
	if ev.Type != ops.EventCreated {
		return nil, fmt.Errorf("store: Create needs a %s event, not %q", ops.EventCreated, ev.Type)
	}
	ev.Seq = 0
	if ev.BranchID == "" {
		ev.BranchID = branchID
	}
	// No message id: the expected last sequence 0 already admits exactly
	// one creation, and a branch that was deleted may be created again by
	// the same request inside the duplicate window.
	ack, err := s.publish(ctx, branchID, ev, 0, "")
	if isWrongLastSequence(err) {
		return s.existing(ctx, branchID, ev)
	}
	if err != nil {
		return nil, err
	}
	ev.Seq = ack.Sequence
	b := &ops.Branch{}
	if err := b.Apply(ev); err != nil {
		return nil, fmt.Errorf("store: create branch %s: %w", branchID, err)
	}
	// The branch is new: any snapshot under its id is left over from a
	// deleted branch, so it is replaced unconditionally.
	if data, release, err := encodeSnapshot(b); err == nil {
		if _, err := s.kv.Put(ctx, branchID, data); err != nil {
			s.log.Warn().Err(err).Str("branch", branchID).Msg("write branch snapshot")
		}
		release()
	}
	return b, nil
}

// existing answers a Create that found history already there.
func (s *Store) existing(ctx context.Context, branchID string, ev ops.Event) (*ops.Branch, error) {
	var first *ops.Event
	err := s.readEvents(ctx, branchID, 1, 0, 1, 1, func(e ops.Event) error {
		first = &e
		return nil
	})
	if err != nil {
		return nil, err
	}
	if first == nil || first.Type != ops.EventCreated || first.RequestID != ev.RequestID || ev.RequestID == "" {
		return nil, ops.ErrBranchExists
	}
	b, err := s.Load(ctx, branchID)
	if err != nil {
		return nil, err
	}
	return b, ops.ErrAlreadyCommitted
}

// Append appends ev after the branch's last event; see [ops.Store]. It
// returns ops.ErrBranchNotFound, ops.ErrAlreadyCommitted (with the current
// branch) when an event of the same request and type is already in history,
// and a temporary *ops.Error wrapping ErrAppendConflict when it lost the
// race to other writers AppendRetries times in a row.
//
// Limitation: Append appends to the branch that has the id when it runs.
// An operation that loaded the branch earlier (before its model call, say)
// and whose branch was meanwhile deleted and created again under the same
// id appends to the new branch; only a deletion without re-creation is
// reported (ops.ErrBranchNotFound). Clients that re-create branch ids
// should not delete a branch with operations still running on it.
func (s *Store) Append(ctx context.Context, branchID string, ev ops.Event) (*ops.Branch, error) {
	if err := checkBranchID(branchID); err != nil {
		return nil, err
	}
	if ev.Type == ops.EventCreated {
		return nil, fmt.Errorf("store: Append of a %s event; use Create", ev.Type)
	}
	ev.Seq = 0
	if ev.BranchID == "" {
		ev.BranchID = branchID
	}
	l, err := s.load(ctx, branchID)
	if err != nil {
		return nil, err
	}
	msgID := "" // an event without a request id has nothing to de-duplicate by
	if ev.RequestID != "" {
		msgID = branchID + "/" + ev.RequestID + "/" + string(ev.Type)
	}
	committed := func(e ops.Event) bool {
		return ev.RequestID != "" && e.RequestID == ev.RequestID && e.Type == ev.Type
	}
	for attempt := 0; attempt < s.retries; attempt++ {
		if _, ok := l.b.Commits[ev.RequestID]; ok && ev.Type == ops.EventMessages && ev.RequestID != "" {
			s.writeSnapshot(ctx, branchID, l)
			return l.b, ops.ErrAlreadyCommitted
		}
		ack, err := s.publish(ctx, branchID, ev, l.b.Seq, msgID)
		if isWrongLastSequence(err) {
			// Another operation committed first: fold what it wrote and
			// append after it.
			last, lerr := s.stream.GetLastMsgForSubject(ctx, s.subj.History(branchID))
			if errors.Is(lerr, jetstream.ErrMsgNotFound) {
				return nil, ops.ErrBranchNotFound
			}
			if lerr != nil {
				return nil, fmt.Errorf("store: read history of branch %s: %w", branchID, lerr)
			}
			if last.Sequence < l.b.Seq {
				return nil, ops.ErrBranchNotFound // deleted and re-created
			}
			dup := false
			if err := s.catchUp(ctx, branchID, l, last.Sequence, func(e ops.Event) {
				dup = dup || committed(e)
			}); err != nil {
				return nil, err
			}
			if dup {
				s.writeSnapshot(ctx, branchID, l)
				return l.b, ops.ErrAlreadyCommitted
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		if ack.Duplicate {
			if s.holds(ctx, branchID, ack.Sequence, ev) {
				b, err := s.Load(ctx, branchID)
				if err != nil {
					return nil, err
				}
				return b, ops.ErrAlreadyCommitted
			}
			// The event the server remembers was purged with a deleted
			// branch of the same id: append under a message id of this
			// branch's own.
			msgID = fmt.Sprintf("%s/%s/%s/%d", branchID, ev.RequestID, ev.Type, l.b.Seq)
			continue
		}
		ev.Seq = ack.Sequence
		if err := l.b.Apply(ev); err != nil {
			return nil, fmt.Errorf("store: append to branch %s: %w", branchID, err)
		}
		s.writeSnapshot(ctx, branchID, l)
		return l.b, nil
	}
	return nil, &ops.Error{
		Code:      ops.CodeUnavailable,
		Message:   fmt.Sprintf("append to branch %s: lost %d races to concurrent writers", branchID, s.retries),
		Temporary: true,
		Err:       ErrAppendConflict,
	}
}

// holds reports whether the history message at seq is ev's request's event
// of ev's type on the branch.
func (s *Store) holds(ctx context.Context, branchID string, seq uint64, ev ops.Event) bool {
	msg, err := s.stream.GetMsg(ctx, seq)
	if err != nil || msg.Subject != s.subj.History(branchID) {
		return false
	}
	got, err := decodeEvent(msg.Data, seq)
	return err == nil && got.RequestID == ev.RequestID && got.Type == ev.Type
}

// publish appends ev to the branch's history subject, expecting last to be
// the subject's last sequence (0: no message yet), with message id msgID
// ("" for none).
func (s *Store) publish(ctx context.Context, branchID string, ev ops.Event, last uint64, msgID string) (*jetstream.PubAck, error) {
	data, err := encodeEvent(ev)
	if err != nil {
		return nil, fmt.Errorf("store: encode %s event of branch %s: %w", ev.Type, branchID, err)
	}
	msg := nats.NewMsg(s.subj.History(branchID))
	msg.Data = data
	msg.Header.Set(HeaderEventType, string(ev.Type))
	opts := []jetstream.PublishOpt{
		jetstream.WithExpectStream(s.subj.HistoryStream()),
		jetstream.WithExpectLastSequencePerSubject(last),
	}
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	ack, err := s.js.PublishMsg(ctx, msg, opts...)
	if err != nil && !isWrongLastSequence(err) {
		return nil, fmt.Errorf("store: append %s event to branch %s: %w", ev.Type, branchID, err)
	}
	return ack, err
}

// History returns the events of the branch with Seq > after, in order, at
// most limit (<= 0 or above ops.MaxHistoryPage: ops.MaxHistoryPage).
func (s *Store) History(ctx context.Context, branchID string, after uint64, limit int) ([]ops.Event, error) {
	if err := checkBranchID(branchID); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > ops.MaxHistoryPage {
		limit = ops.MaxHistoryPage
	}
	last, err := s.stream.GetLastMsgForSubject(ctx, s.subj.History(branchID))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, ops.ErrBranchNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: read history of branch %s: %w", branchID, err)
	}
	events := []ops.Event{}
	if last.Sequence <= after {
		return events, nil
	}
	budget := directReadBudget
	if limit < budget {
		budget = limit
	}
	err = s.readEvents(ctx, branchID, after+1, last.Sequence, limit, budget, func(ev ops.Event) error {
		events = append(events, ev)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return events, nil
}

// Delete purges the branch's history and its snapshot. It returns
// ops.ErrBranchNotFound when the branch has no history.
func (s *Store) Delete(ctx context.Context, branchID string) error {
	if err := checkBranchID(branchID); err != nil {
		return err
	}
	subject := s.subj.History(branchID)
	if _, err := s.stream.GetLastMsgForSubject(ctx, subject); err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return ops.ErrBranchNotFound
		}
		return fmt.Errorf("store: read history of branch %s: %w", branchID, err)
	}
	if err := s.stream.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
		return fmt.Errorf("store: purge history of branch %s: %w", branchID, err)
	}
	// A snapshot left behind is harmless (Load finds no history, and a
	// re-created branch replaces it), so failing here is only logged.
	if err := s.kv.Purge(ctx, branchID); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		s.log.Warn().Err(err).Str("branch", branchID).Msg("purge branch snapshot")
	}
	return nil
}

// writeSnapshot stores l.b as the branch's snapshot if the bucket still
// holds the revision l was read against (or an older snapshot). Failures
// are logged, never returned.
func (s *Store) writeSnapshot(ctx context.Context, branchID string, l *loaded) {
	data, release, err := encodeSnapshot(l.b)
	if err != nil {
		s.log.Warn().Err(err).Str("branch", branchID).Msg("encode branch snapshot")
		return
	}
	defer release()
	rev := l.rev
	for try := 0; try < 2; try++ {
		var nrev uint64
		if rev == 0 {
			nrev, err = s.kv.Create(ctx, branchID, data)
		} else {
			nrev, err = s.kv.Update(ctx, branchID, data, rev)
		}
		if err == nil {
			l.rev, l.snapSeq = nrev, l.b.Seq
			return
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			break
		}
		// Someone else wrote a snapshot: replace it only if it is older.
		entry, gerr := s.kv.Get(ctx, branchID)
		if gerr != nil {
			err = gerr
			break
		}
		if seq, derr := snapshotSeq(entry.Value()); derr == nil && seq >= l.b.Seq {
			return
		}
		rev = entry.Revision()
	}
	s.log.Debug().Err(err).Str("branch", branchID).Uint64("seq", l.b.Seq).Msg("branch snapshot not written")
}

func checkBranchID(id string) error {
	if !protocol.ValidToken(id) {
		return ops.Errorf(ops.CodeInvalidRequest, "invalid branch id %q: want %s", ops.Truncate(id, protocol.MaxTokenLength+8), ops.IDRule)
	}
	return nil
}

func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

func encodeEvent(ev ops.Event) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	if err := enc.Encode(&ev); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decodeEvent(data []byte, seq uint64) (ops.Event, error) {
	var ev ops.Event
	if err := newDecoder(data).Decode(&ev); err != nil {
		return ops.Event{}, corrupt(fmt.Errorf("%w: decode history event at seq %d: %w", ErrCorruptHistory, seq, err))
	}
	ev.Seq = seq
	normalizeEventTimes(&ev)
	return ev, nil
}

// newDecoder decodes untyped values (message content, metadata) the way
// JSON would hold them: integers as int64 or uint64, floats as float64,
// maps as map[string]any.
func newDecoder(data []byte) *msgpack.Decoder {
	dec := msgpack.NewDecoder(bytes.NewReader(data))
	dec.UseLooseInterfaceDecoding(true)
	return dec
}

func normalizeEventTimes(ev *ops.Event) {
	ev.Time = ev.Time.UTC()
	for i := range ev.Messages {
		ev.Messages[i].CreatedAt = ev.Messages[i].CreatedAt.UTC()
	}
}
