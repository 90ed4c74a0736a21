// Package store is the JetStream implementation of ops.Store.
//
// [Store] implements ops.Store. History is the source of truth: every
// change to a branch is an event on lion.history.<branch>, appended with
// the expected last subject sequence, so concurrent writers never
// overwrite each other (the loser folds what it missed and appends after
// it), and with a Nats-Msg-Id of branch, request and event type, so a
// repeated append is stored once.
//
// A Store keeps recently used branches in memory and checks them against
// the history's last sequence (one read) on every load; an append is one
// publish. The lion_branches bucket holds snapshots, written on a cadence
// (Config.SnapshotEvents events or Config.SnapshotBytes bytes of history
// since the last one): a snapshot keeps the branch's older messages in
// immutable segments under their own keys and only the newest ones
// itself, so writing one costs what changed since the last, and no value
// grows with the branch. A load that misses the cache reads the snapshot,
// its segments and the events after it; a missing, corrupt or stale
// snapshot is rebuilt from history. History pages are bounded by
// history.MaxHistoryPage.
package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/lionbus/lionbus/pkg/bus/internal/bufpool"
	"github.com/lionbus/lionbus/pkg/bus/internal/connloss"
	"github.com/lionbus/lionbus/pkg/bus/internal/jserr"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// Bounds and defaults of [Store].
const (
	// DefaultAppendRetries is how many times [Store.Append] re-reads
	// and retries after losing an optimistic-concurrency race.
	DefaultAppendRetries = 32

	// DefaultRequestTimeout bounds each JetStream request of a Store
	// (Config.RequestTimeout).
	DefaultRequestTimeout = 5 * time.Second

	// DefaultSnapshotEvents and DefaultSnapshotBytes are the snapshot
	// cadence: a snapshot is written once this many history events, or
	// this many bytes of them, were folded since the last one.
	DefaultSnapshotEvents = 64
	DefaultSnapshotBytes  = 256 << 10

	// DefaultSegmentBytes is the size at which a snapshot moves the
	// messages it holds itself into a segment of their own.
	DefaultSegmentBytes = 64 << 10

	// HeaderEventType is the header of a history message that carries the
	// event's [ops.EventType], so that tools can filter without decoding.
	HeaderEventType = "Lionbus-Event-Type"

	// HeaderForkParent and HeaderForkSeq are headers of a fork's
	// branch.created: its parent and the parent's sequence it starts
	// from, so that history retention sees every fork of a branch
	// reading only headers.
	HeaderForkParent = "Lionbus-Fork-Parent"
	HeaderForkSeq    = "Lionbus-Fork-Seq"

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

	// CacheBranches and CacheBytes bound the branches the Store keeps in
	// memory (least recently used first out): how many, and the sum of
	// their sizes, a branch's size being the encoded bytes (snapshot,
	// segments, history events) it was folded from. The branch a request
	// just used is kept even when it alone is larger than CacheBytes.
	// Defaults DefaultCacheBranches and DefaultCacheBytes.
	//
	// Keeping a branch saves reading its snapshot, segments and newest
	// events at its next request; the price is not only memory: every
	// garbage collection of the process marks the kept branches again.
	CacheBranches int
	CacheBytes    int

	// SnapshotEvents and SnapshotBytes set the snapshot cadence: a
	// snapshot is written when this many events, or this many encoded
	// bytes of events, were folded into a branch since its last snapshot.
	// A cold load replays at most about that much history. Defaults
	// DefaultSnapshotEvents and DefaultSnapshotBytes.
	SnapshotEvents int
	SnapshotBytes  int

	// SegmentBytes is how large the newest messages a snapshot holds
	// itself may grow before they move into a segment. It bounds the
	// snapshot value and what each snapshot rewrites; it is capped at half
	// the server's max payload. Default DefaultSegmentBytes.
	SegmentBytes int

	// RequestTimeout bounds each JetStream request the Store makes (a
	// read, an append, a snapshot write), whatever the deadline of the
	// context it was given: a request lost with a server that restarted
	// fails after it (an append then, as a temporary error, is retried
	// by the worker) instead of holding its operation until the
	// operation's own deadline. Default DefaultRequestTimeout.
	RequestTimeout time.Duration

	// Logger receives corrupt-snapshot and snapshot-write warnings. The zero
	// value discards them.
	Logger zerolog.Logger

	// Observer, when not nil, is told of the store's notable events (for
	// metrics).
	Observer Observer
}

// Observer is told of a [Store]'s notable events. Its methods are called
// synchronously, from any goroutine, and must be quick.
type Observer interface {
	// AppendConflict: an append found that another writer appended first,
	// and caught up before appending again.
	AppendConflict(branch string)
	// SnapshotWritten: a snapshot of size bytes (segments not counted)
	// was stored.
	SnapshotWritten(branch string, bytes int)
	// Rebuilt: a branch was loaded without a usable snapshot, folding its
	// history from the start.
	Rebuilt(branch string)
	// CacheMiss: a branch the Store did not keep in memory was read
	// from the stream (its snapshot and the events after it, or its whole
	// history). Many of them for branches used before mean the cache is
	// too small for the branches in use at once (Config.CacheBytes).
	CacheMiss(branch string)
}

// nopObserver is the Observer of a Store configured without one.
type nopObserver struct{}

func (nopObserver) AppendConflict(string)       {}
func (nopObserver) SnapshotWritten(string, int) {}
func (nopObserver) Rebuilt(string)              {}
func (nopObserver) CacheMiss(string)            {}

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
// The Store keeps up to Config.CacheBranches folded branches, of at most
// Config.CacheBytes, in memory.
// Load reads the last message of the branch's history subject and folds
// what the cached branch has not seen (nothing, when this process made the
// last change); Append publishes against the cached branch's sequence and
// catches up only when another writer was first. The branches returned by
// Load and Append share their messages with the cache: callers must not
// modify them (Branch.Clone gives a private copy).
//
// Snapshots: the branches bucket holds, under the branch id, a msgpack
// snapshot of the folded branch and the sequence it reflects, written on
// the cadence of Config.SnapshotEvents and Config.SnapshotBytes. Messages
// the snapshot does not hold itself are in segments under the keys
// "<branch>.<seq>-<first>-<count>", written once and never changed (a
// clear starts new ones; the old are purged). Snapshot writes are
// best-effort and use the key's revision, so they never move a snapshot
// backwards and never fail an operation.
//
// Sizes: one event must fit in the server's max_payload (1 MiB by
// default); an append of a larger event fails. A snapshot holds the
// branch's settings, its commits, its segment list and at most
// SegmentBytes of messages; should it still not fit (huge settings), it is
// not written (logged) and loads replay more history.
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
	timeout time.Duration // of each JetStream request
	log     zerolog.Logger
	obs     Observer
	cache   *cache

	snapEvents, snapBytes, segBytes int
	maxValue                        int

	kvStreamMu sync.Mutex
	kvStream   jetstream.Stream // the bucket's stream, for purges; nil until needed
}

var _ history.Store = (*Store)(nil)

// New returns a Store over the history stream and the branches bucket of
// res (see provision.Ensure), publishing through js.
func New(js jetstream.JetStream, res *provision.Resources, cfg Config) (*Store, error) {
	if js == nil || res == nil || res.History == nil || res.Branches == nil {
		return nil, errors.New("store: New needs a JetStream handle and provisioned provision.Resources")
	}
	if cfg.AppendRetries <= 0 {
		cfg.AppendRetries = DefaultAppendRetries
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.SnapshotEvents <= 0 {
		cfg.SnapshotEvents = DefaultSnapshotEvents
	}
	if cfg.SnapshotBytes <= 0 {
		cfg.SnapshotBytes = DefaultSnapshotBytes
	}
	if cfg.SegmentBytes <= 0 {
		cfg.SegmentBytes = DefaultSegmentBytes
	}
	maxValue := 1 << 20
	if nc := js.Conn(); nc != nil && nc.MaxPayload() > 0 {
		maxValue = int(nc.MaxPayload())
	}
	if cfg.SegmentBytes > maxValue/2 {
		cfg.SegmentBytes = maxValue / 2
	}
	return &Store{
		js:         js,
		subj:       res.Subjects,
		stream:     res.History,
		kv:         res.Branches,
		retries:    cfg.AppendRetries,
		timeout:    cfg.RequestTimeout,
		log:        cfg.Logger,
		obs:        cfg.Observer,
		cache:      newCache(cfg.CacheBranches, cfg.CacheBytes),
		snapEvents: cfg.SnapshotEvents,
		snapBytes:  cfg.SnapshotBytes,
		segBytes:   cfg.SegmentBytes,
		maxValue:   maxValue,
	}, nil
}

// Load returns the branch folded up to its latest history event, or
// ops.ErrBranchNotFound. The branch is shared with the Store's cache and
// must not be modified.
func (s *Store) Load(ctx context.Context, branchID string) (*history.Branch, error) {
	if err := checkBranchID(branchID); err != nil {
		return nil, err
	}
	e := s.cache.get(branchID)
	e.mu.Lock()
	defer e.mu.Unlock()
	defer s.cache.resize(e)
	if err := s.refresh(ctx, e); err != nil {
		if errors.Is(err, history.ErrBranchNotFound) {
			s.cache.drop(branchID, e)
		}
		return nil, err
	}
	return e.view(), nil
}

// Create appends ev, which must be an EventCreated, as the first event of a
// new branch. It returns ops.ErrBranchExists when the branch already has
// history, except when that history starts with an EventCreated of the same
// request: then it returns the branch and ops.ErrAlreadyCommitted.
func (s *Store) Create(ctx context.Context, branchID string, ev history.Event) (*history.Branch, error) {
	if err := checkBranchID(branchID); err != nil {
		return nil, err
	}
	if ev.Type != history.EventCreated {
		return nil, fmt.Errorf("store: Create needs a %s event, not %q", history.EventCreated, ev.Type)
	}
	ev.Seq = 0
	if ev.BranchID == "" {
		ev.BranchID = branchID
	}
	// No message id: the expected last sequence 0 already admits exactly
	// one creation, and a branch that was deleted may be created again by
	// the same request inside the duplicate window.
	ack, size, err := s.publish(ctx, branchID, ev, 0, "")
	if jserr.WrongLastSequence(err) {
		// A deleted branch's id may be used again: after its tombstone.
		last, deleted, lerr := s.lastMsg(ctx, branchID)
		if lerr != nil || !deleted {
			return s.existing(ctx, branchID, ev)
		}
		ack, size, err = s.publish(ctx, branchID, ev, last, "")
		if jserr.WrongLastSequence(err) {
			return s.existing(ctx, branchID, ev)
		}
	}
	if err != nil {
		return nil, err
	}
	ev.Seq = ack.Sequence
	e := s.cache.get(branchID)
	e.mu.Lock()
	defer e.mu.Unlock()
	defer s.cache.resize(e)
	// Whatever the entry held belongs to a deleted branch of this id. A
	// snapshot left behind by one is replaced at the first snapshot (it
	// is older than this event, and a load that finds it folds from this
	// event on).
	e.reset()
	if err := e.apply(ev, size); err != nil {
		return nil, fmt.Errorf("store: create branch %s: %w", branchID, err)
	}
	e.snap.events, e.snap.bytes = 1, size
	return e.view(), nil
}

// existing answers a Create that found history already there.
func (s *Store) existing(ctx context.Context, branchID string, ev history.Event) (*history.Branch, error) {
	var first *history.Event
	err := s.readEvents(ctx, branchID, 1, 0, 1, 1, func(e history.Event, _ int) error {
		first = &e
		return nil
	})
	if err != nil {
		return nil, err
	}
	if first == nil || first.Type != history.EventCreated || first.RequestID != ev.RequestID || ev.RequestID == "" {
		return nil, history.ErrBranchExists
	}
	b, err := s.Load(ctx, branchID)
	if err != nil {
		return nil, err
	}
	return b, history.ErrAlreadyCommitted
}

// Append appends ev after the branch's last event; see [ops.Store]. It
// returns ops.ErrBranchNotFound, ops.ErrAlreadyCommitted (with the current
// branch) when an event of the same request and type is already in history,
// and a temporary *ops.Error wrapping ErrAppendConflict when it lost the
// race to other writers AppendRetries times in a row. The branch it
// returns is shared with the cache, as Load's is.
//
// Limitation: Append appends to the branch that has the id when it runs.
// An operation that loaded the branch earlier (before its model call, say)
// and whose branch was meanwhile deleted and created again under the same
// id appends to the new branch; only a deletion without re-creation is
// reported (ops.ErrBranchNotFound). Clients that re-create branch ids
// should not delete a branch with operations still running on it.
func (s *Store) Append(ctx context.Context, branchID string, ev history.Event) (*history.Branch, error) {
	if err := checkBranchID(branchID); err != nil {
		return nil, err
	}
	if ev.Type == history.EventCreated {
		return nil, fmt.Errorf("store: Append of a %s event; use Create", ev.Type)
	}
	ev.Seq = 0
	if ev.BranchID == "" {
		ev.BranchID = branchID
	}
	e := s.cache.get(branchID)
	e.mu.Lock()
	defer e.mu.Unlock()
	defer s.cache.resize(e)
	b, err := s.append(ctx, e, ev)
	if errors.Is(err, history.ErrBranchNotFound) {
		e.reset()
		s.cache.drop(branchID, e)
	}
	return b, err
}

func (s *Store) append(ctx context.Context, e *entry, ev history.Event) (*history.Branch, error) {
	branchID := e.id
	if e.b == nil || e.b.Deleted {
		// Not cached: load it. Cached: publish against what is known, and
		// catch up only if another writer was first. Deleted: nothing is
		// appended after a tombstone but a new creation (Create).
		if err := s.refresh(ctx, e); err != nil {
			return nil, err
		}
	}
	key := ev.CommitKey()
	msgID := "" // an event without a request id has nothing to de-duplicate by
	if key != "" {
		msgID = branchID + "/" + key
	}
	committed := func(x history.Event) bool {
		return key != "" && x.CommitKey() == key
	}
	for attempt := 0; attempt < s.retries; attempt++ {
		if _, ok := e.b.Commits.Seq(ev.RequestID); ok && ev.Type == history.EventMessages && ev.RequestID != "" {
			return e.view(), history.ErrAlreadyCommitted
		}
		ack, size, err := s.publish(ctx, branchID, ev, e.b.Seq, msgID)
		if jserr.WrongLastSequence(err) {
			// Another operation committed first: fold what it wrote and
			// append after it.
			s.obs.AppendConflict(branchID)
			last, lerr := s.lastSeq(ctx, branchID)
			if lerr != nil {
				return nil, lerr
			}
			if last < e.b.Seq {
				return nil, history.ErrBranchNotFound // deleted and re-created
			}
			dup := false
			if err := s.catchUp(ctx, e, last, func(x history.Event) {
				dup = dup || committed(x)
			}); err != nil {
				return nil, err
			}
			if dup {
				return e.view(), history.ErrAlreadyCommitted
			}
			if e.b.Deleted {
				return nil, history.ErrBranchDeleted
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		if ack.Duplicate {
			if s.holds(ctx, branchID, ack.Sequence, ev) {
				if err := s.refresh(ctx, e); err != nil {
					return nil, err
				}
				return e.view(), history.ErrAlreadyCommitted
			}
			// The event the server remembers was purged with a deleted
			// branch of the same id: append under a message id of this
			// branch's own.
			msgID = fmt.Sprintf("%s/%s/%d", branchID, key, e.b.Seq)
			continue
		}
		ev.Seq = ack.Sequence
		if err := e.apply(ev, size); err != nil {
			return nil, fmt.Errorf("store: append to branch %s: %w", branchID, err)
		}
		e.snap.events++
		e.snap.bytes += size
		s.maybeSnapshot(ctx, e)
		return e.view(), nil
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
func (s *Store) holds(ctx context.Context, branchID string, seq uint64, ev history.Event) bool {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	msg, err := s.stream.GetMsg(ctx, seq)
	if err != nil || msg.Subject != s.subj.History(branchID) {
		return false
	}
	got, err := decodeEvent(msg.Data, seq)
	return err == nil && got.CommitKey() == ev.CommitKey()
}

// publish appends ev to the branch's history subject, expecting last to be
// the subject's last sequence (0: no message yet), with message id msgID
// ("" for none).
func (s *Store) publish(ctx context.Context, branchID string, ev history.Event, last uint64, msgID string) (*jetstream.PubAck, int, error) {
	// The publish has copied the event out of the buffer by the time it
	// returns, so the buffer goes back to the pool for the next one.
	buf, release := bufpool.Get()
	defer release()
	if err := encodeEventTo(buf, ev); err != nil {
		return nil, 0, fmt.Errorf("store: encode %s event of branch %s: %w", ev.Type, branchID, err)
	}
	data := buf.Bytes()
	msg := nats.NewMsg(s.subj.History(branchID))
	msg.Data = data
	msg.Header.Set(HeaderEventType, string(ev.Type))
	if ev.Type == history.EventCreated && ev.Fork != nil {
		msg.Header.Set(HeaderForkParent, ev.Fork.BranchID)
		msg.Header.Set(HeaderForkSeq, strconv.FormatUint(ev.Fork.Seq, 10))
	}
	opts := []jetstream.PublishOpt{
		jetstream.WithExpectStream(s.subj.HistoryStream()),
		jetstream.WithExpectLastSequencePerSubject(last),
	}
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	ack, err := s.js.PublishMsg(ctx, msg, opts...)
	err = connloss.Err(ctx, err)
	if err != nil && !jserr.WrongLastSequence(err) {
		return nil, 0, fmt.Errorf("store: append %s event to branch %s: %w", ev.Type, branchID, err)
	}
	return ack, len(data), err
}

// History returns the events of the branch with Seq > after, in order, at
// most limit (<= 0 or above history.MaxHistoryPage: history.MaxHistoryPage).
func (s *Store) History(ctx context.Context, branchID string, after uint64, limit int) ([]history.Event, error) {
	if err := checkBranchID(branchID); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > history.MaxHistoryPage {
		limit = history.MaxHistoryPage
	}
	last, err := s.lastSeq(ctx, branchID)
	if err != nil {
		return nil, err
	}
	events := []history.Event{}
	if last <= after {
		return events, nil
	}
	budget := directReadBudget
	if limit < budget {
		budget = limit
	}
	err = s.readEvents(ctx, branchID, after+1, last, limit, budget, func(ev history.Event, _ int) error {
		events = append(events, ev)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return events, nil
}

// Delete purges the branch's history, its snapshot and the snapshot's
// segments; a history that ends with a tombstone (history.EventDeleted)
// keeps it. It returns ops.ErrBranchNotFound when the branch has no
// history.
func (s *Store) Delete(ctx context.Context, branchID string) error {
	if err := checkBranchID(branchID); err != nil {
		return err
	}
	e := s.cache.get(branchID)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reset()
	s.cache.drop(branchID, e)
	subject := s.subj.History(branchID)
	_, deleted, err := s.lastMsg(ctx, branchID)
	if err != nil {
		return err
	}
	opts := []jetstream.StreamPurgeOpt{jetstream.WithPurgeSubject(subject)}
	if deleted {
		opts = append(opts, jetstream.WithPurgeKeep(1)) // the tombstone stays
	}
	pctx, cancel := s.bounded(ctx)
	defer cancel()
	if err := connloss.Err(pctx, s.stream.Purge(pctx, opts...)); err != nil {
		return fmt.Errorf("store: purge history of branch %s: %w", branchID, err)
	}
	// A snapshot left behind is harmless (Load finds no history, and a
	// re-created branch replaces it), so failing here is only logged.
	s.purgeKeys(ctx, branchID, branchID+".>")
	return nil
}

// bounded returns ctx for one JetStream request: bounded by the Store's
// request timeout, and cut short should the connection lose its server
// meanwhile (see connloss).
func (s *Store) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return connloss.Bound(ctx, s.js.Conn(), s.timeout)
}

func checkBranchID(id string) error {
	if !protocol.ValidToken(id) {
		return ops.Errorf(ops.CodeInvalidRequest, "invalid branch id %q: want %s", ops.Truncate(id, protocol.MaxTokenLength+8), ops.IDRule)
	}
	return nil
}

func encodeEvent(ev history.Event) ([]byte, error) {
	var buf bytes.Buffer
	err := encodeEventTo(&buf, ev)
	return buf.Bytes(), err
}

// encodeEventTo appends the encoding of ev to buf.
func encodeEventTo(buf *bytes.Buffer, ev history.Event) error {
	enc := msgpack.GetEncoder() // pooled: an encoder is a sizeable allocation
	defer msgpack.PutEncoder(enc)
	enc.Reset(buf)
	return enc.Encode(&ev)
}

func decodeEvent(data []byte, seq uint64) (history.Event, error) {
	var ev history.Event
	if err := newDecoder(data).Decode(&ev); err != nil {
		return history.Event{}, corrupt(fmt.Errorf("%w: decode history event at seq %d: %w", ErrCorruptHistory, seq, err))
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

func normalizeEventTimes(ev *history.Event) {
	ev.Time = ev.Time.UTC()
	for i := range ev.Messages {
		ev.Messages[i].CreatedAt = ev.Messages[i].CreatedAt.UTC()
	}
	if c := ev.Compaction; c != nil {
		c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
		normalizeMessageTimes(c.Messages)
	}
}
