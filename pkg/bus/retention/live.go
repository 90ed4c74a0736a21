package retention

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// Bounds and defaults of a [Compactor].
const (
	// DefaultCompactInterval is how often a Compactor passes over the
	// history.
	DefaultCompactInterval = 10 * time.Minute
	// MaxScannedBranches is the most branches a Compactor remembers and
	// considers (the first met in the history); another is met at its
	// next event once some of these are deleted (and forgotten), and is
	// not cut until the Compactor reads the history anew (a new worker).
	MaxScannedBranches = 100_000
	// MaxStartPoints is the most compaction points a pass remembers per
	// branch (the newest): a cut is at one of them.
	MaxStartPoints = 64

	// Header names of the history stream (as pkg/bus/store writes them).
	headerEventType  = "Lionbus-Event-Type"
	headerForkParent = "Lionbus-Fork-Parent"
	headerForkSeq    = "Lionbus-Fork-Seq"
)

// Compacter is what a [Compactor] needs of the history store (*store.Store
// has it): the branch's own fold, its events after a point, a compaction
// point appended at its head (carrying what is dropped before it), and
// the cut.
type Compacter interface {
	Load(ctx context.Context, branchID string) (*history.Branch, error)
	History(ctx context.Context, branchID string, after uint64, limit int) ([]history.Event, error)
	Compact(ctx context.Context, branchID, requestID, reason string, droppedBefore, droppedEvents uint64) (history.Event, error)
	DropBefore(ctx context.Context, branchID string, seq uint64) error
}

// LiveConfig configures a [Compactor]: the retention of the history of
// branches that are not deleted. Each limit set keeps at least what it
// names; an event is dropped only when every limit set lets it go.
type LiveConfig struct {
	// KeepEvents keeps at least the last KeepEvents events of every
	// branch (0: no limit by count).
	KeepEvents int
	// MaxAge keeps at least the events of the last MaxAge (0: no limit by
	// age).
	MaxAge time.Duration
	// Interval is the time between two passes. Default
	// DefaultCompactInterval.
	Interval time.Duration
	// Clock tells the time; nil means time.Now.
	Clock func() time.Time
	// Logger gets one line per branch trimmed (what was dropped), and the
	// branches skipped and why.
	Logger zerolog.Logger
}

// Trimmed reports what one pass did to one branch.
type Trimmed struct {
	// Branch is the branch id.
	Branch string
	// Compaction is the sequence of the compaction point the pass wrote
	// (0: none).
	Compaction uint64
	// DroppedBefore is the sequence of the first event kept, when events
	// were dropped (0: none), and DroppedEvents how many.
	DroppedBefore uint64
	DroppedEvents uint64
	// Skipped says why the branch was left alone although due (its state
	// too large for one event, its head moved meanwhile), or why its cut
	// was cancelled after its compaction point (a fork made meanwhile);
	// "" otherwise.
	Skipped string
}

// Compactor trims the history of live branches: on every pass it reads
// the history stream's headers written since the last pass (the first
// pass: all of them), and for every branch that is not a fork
// nor deleted, it appends a compaction point when one is due and drops
// the events before the latest compaction point that every limit and
// every live fork of the branch allow. See docs/history.md#retention.
type Compactor struct {
	js  jetstream.JetStream
	res *provision.Resources
	st  Compacter
	cfg LiveConfig

	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex // one pass at a time
	ps   *pass      // what the passes read of the history so far
	read uint64     // the headers the last pass read
}

// NewCompactor returns a compactor over the resources res and the store
// st. cfg must set KeepEvents or MaxAge, neither negative.
func NewCompactor(js jetstream.JetStream, res *provision.Resources, st Compacter, cfg LiveConfig) (*Compactor, error) {
	if cfg.KeepEvents < 0 || cfg.MaxAge < 0 || (cfg.KeepEvents == 0 && cfg.MaxAge == 0) {
		return nil, errors.New("retention: LiveConfig needs a positive KeepEvents or MaxAge")
	}
	if js == nil || res == nil || res.History == nil || st == nil {
		return nil, errors.New("retention: NewCompactor needs JetStream, provisioned resources and a store")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultCompactInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return &Compactor{js: js, res: res, st: st, cfg: cfg}, nil
}

// Start passes over the history every Interval until ctx ends or Stop.
func (c *Compactor) Start(ctx context.Context) error {
	ctx, c.cancel = context.WithCancel(ctx)
	c.done = make(chan struct{})
	go func() {
		defer close(c.done)
		tick := time.NewTicker(c.cfg.Interval)
		defer tick.Stop()
		for {
			if _, err := c.Pass(ctx); err != nil && ctx.Err() == nil {
				c.cfg.Logger.Warn().Err(err).Msg("retention: pass over the history of live branches; again at the next")
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return nil
}

// Stop stops the compactor and waits for it, or for ctx.
func (c *Compactor) Stop(ctx context.Context) error {
	if c.cancel == nil {
		return nil
	}
	c.cancel()
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// point is an event a fold can start from: a branch.created or a
// branch.compacted.
type point struct {
	seq   uint64
	at    time.Time // the stream's timestamp
	index uint64    // how many of the branch's stored events come before it
}

// forkRef is a fork of a branch seen in the history: its id and the
// parent's sequence it starts from.
type forkRef struct {
	id  string
	seq uint64
}

// scan is what a pass knows of one branch's stored history.
type scan struct {
	first, last uint64
	count       uint64
	lastType    string
	starts      []point  // oldest first, at most MaxStartPoints
	forked      []uint64 // sequences of its branch.forked events
	partial     bool     // met after its first stored event: not cut
}

// pass is what the passes read of the history: every branch's scan, in
// the order first met, the forks whose branch.created names each parent
// (by its headers), and the stream sequence read up to. Each pass reads
// only the headers written since the last one.
type pass struct {
	scans map[string]*scan
	order []string
	forks map[string][]forkRef
	upto  uint64
}

func newPass() *pass {
	return &pass{scans: map[string]*scan{}, forks: map[string][]forkRef{}}
}

// forget drops the scans of deleted branches (a branch created again is
// met anew), so that MaxScannedBranches counts live ones.
func (ps *pass) forget() {
	order := ps.order[:0]
	for _, id := range ps.order {
		if ps.scans[id].lastType == string(history.EventDeleted) {
			delete(ps.scans, id)
			continue
		}
		order = append(order, id)
	}
	clear(ps.order[len(order):])
	ps.order = order
}

// HeadersRead returns how many history headers the last pass read: the
// first pass reads the whole history stream, each later one what was
// written since the one before.
func (c *Compactor) HeadersRead() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.read
}

// Pass makes one pass over the history and returns what it did to each
// branch it compacted or trimmed, or skipped though due.
func (c *Compactor) Pass(ctx context.Context) ([]Trimmed, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ps == nil {
		c.ps = newPass()
	}
	ps := c.ps
	n, err := c.scan(ctx, ps)
	c.read = n
	if err != nil {
		c.ps = nil // read again from the start at the next pass
		return nil, err
	}
	defer ps.forget()
	now := c.cfg.Clock()
	var out []Trimmed
	for _, id := range ps.order {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		t, ok := c.branch(ctx, id, ps, now)
		if ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// scan reads into ps the headers of the history stream after ps.upto,
// up to its last sequence when the pass started, and returns how many it
// read.
func (c *Compactor) scan(ctx context.Context, ps *pass) (uint64, error) {
	info, err := c.res.History.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("retention: history stream info: %w", err)
	}
	upto := info.State.LastSeq
	if upto < ps.upto {
		*ps = *newPass() // a stream made anew: read it all
	}
	if info.State.Msgs == 0 || upto == ps.upto {
		ps.upto = upto
		return 0, nil
	}
	subj := c.res.Subjects
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj.HistoryWildcard()}, HeadersOnly: true, DeliverPolicy: jetstream.DeliverAllPolicy}
	if ps.upto > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, ps.upto+1
	}
	cons, err := c.js.OrderedConsumer(ctx, subj.HistoryStream(), cfg)
	if err != nil {
		return 0, fmt.Errorf("retention: read the history: %w", err)
	}
	msgs, err := cons.Messages(jetstream.PullMaxMessages(512))
	if err != nil {
		return 0, fmt.Errorf("retention: read the history: %w", err)
	}
	defer msgs.Stop()
	prefix := subj.History("")
	var n uint64
	for {
		m, err := msgs.Next(jetstream.NextMaxWait(time.Second))
		if errors.Is(err, jetstream.ErrNoMessages) || errors.Is(err, nats.ErrTimeout) {
			if ctx.Err() != nil {
				return n, ctx.Err()
			}
			ps.upto = upto
			return n, nil // nothing more stored
		}
		if err != nil {
			return n, fmt.Errorf("retention: read the history: %w", err)
		}
		md, err := m.Metadata()
		if err != nil {
			return n, fmt.Errorf("retention: read the history: %w", err)
		}
		seq := md.Sequence.Stream
		if seq > upto {
			ps.upto = upto
			return n, nil
		}
		n++
		branch, ok := strings.CutPrefix(m.Subject(), prefix)
		if ok && protocol.ValidToken(branch) {
			h := m.Headers()
			s := ps.scans[branch]
			if s == nil && len(ps.order) < MaxScannedBranches {
				// Met after its first event (a later pass, once there was
				// room): what came before is not counted.
				typ := history.EventType(h.Get(headerEventType))
				s = &scan{first: seq, partial: ps.upto > 0 && typ != history.EventCreated && typ != history.EventCompacted}
				ps.scans[branch] = s
				ps.order = append(ps.order, branch)
			}
			if s != nil {
				s.add(seq, md.Timestamp, h)
			}
			if parent := h.Get(headerForkParent); parent != "" {
				if at, err := strconv.ParseUint(h.Get(headerForkSeq), 10, 64); err == nil {
					ps.forks[parent] = append(ps.forks[parent], forkRef{id: branch, seq: at})
				}
			}
		}
		if md.NumPending == 0 || seq >= upto {
			ps.upto = upto
			return n, nil
		}
	}
}

// add notes the event at seq, with its headers h.
func (s *scan) add(seq uint64, at time.Time, h nats.Header) {
	typ := h.Get(headerEventType)
	switch history.EventType(typ) {
	case history.EventCreated, history.EventCompacted:
		s.starts = append(s.starts, point{seq: seq, at: at, index: s.count})
		if len(s.starts) > MaxStartPoints {
			s.starts = s.starts[1:]
		}
	case history.EventForked:
		s.forked = append(s.forked, seq)
	}
	s.count++
	s.last, s.lastType = seq, typ
}

// cut notes that the events before seq, a start point, were dropped.
func (s *scan) cut(seq uint64) {
	var gone uint64
	for _, p := range s.starts {
		if p.seq == seq {
			gone = p.index
		}
	}
	s.first, s.count = seq, s.count-gone
	kept := s.starts[:0]
	for _, p := range s.starts {
		if p.seq >= seq {
			p.index -= gone
			kept = append(kept, p)
		}
	}
	s.starts = kept
	forked := s.forked[:0]
	for _, f := range s.forked {
		if f >= seq {
			forked = append(forked, f)
		}
	}
	s.forked = forked
}

// since is how many stored events follow the point p.
func (s *scan) since(p point) uint64 { return s.count - p.index - 1 }

// branch applies the limits to one branch; ok is false when nothing was
// due.
func (c *Compactor) branch(ctx context.Context, id string, ps *pass, now time.Time) (Trimmed, bool) {
	s := ps.scans[id]
	t := Trimmed{Branch: id}
	if s.lastType == string(history.EventDeleted) || len(s.starts) == 0 {
		return t, false // deleted (the deleted-history sweeper's), or no start kept
	}
	log := c.cfg.Logger
	keep, age := uint64(c.cfg.KeepEvents), c.cfg.MaxAge
	allowed := func(p point) bool {
		return (keep == 0 || s.since(p) >= keep) && (age == 0 || !p.at.After(now.Add(-age)))
	}
	// The cut: the latest start point after the first stored event that
	// the limits allow.
	var cut *point
	for i := len(s.starts) - 1; i >= 0 && !s.partial; i-- {
		if p := s.starts[i]; p.seq > s.first && allowed(p) {
			cut = &s.starts[i]
			break
		}
	}
	lastStart := s.starts[len(s.starts)-1]
	due := (keep > 0 && s.since(lastStart) >= keep) || (age > 0 && s.since(lastStart) > 0 && !lastStart.at.After(now.Add(-age)))
	if cut == nil && !due {
		return t, false
	}
	own, err := c.st.Load(ctx, id)
	if err != nil {
		log.Debug().Err(err).Str("branch", id).Msg("retention: load a branch to compact; skipped")
		return t, false
	}
	if own.Fork != nil {
		return t, false // a fork's state is its parent's prefix and its own events: not compacted
	}
	if cut != nil {
		// No live fork's prefix may be cut: the cut moves back to the
		// latest start point at or before every live fork's point.
		minFork, ok, err := c.liveForks(ctx, id, ps)
		if err != nil {
			log.Warn().Err(err).Str("branch", id).Msg("retention: read the forks of a branch; nothing of it dropped")
			cut = nil
		}
		for ok && cut != nil && cut.seq > minFork {
			cut = c.before(s, cut)
		}
	}
	var dropBefore, dropped uint64
	if cut != nil {
		dropBefore, dropped = cut.seq, cut.index
	}
	if dropBefore == 0 && !due {
		return t, false
	}
	reason := c.reason()
	ev, err := c.st.Compact(ctx, id, "retention/"+strconv.FormatUint(s.last, 10), reason, dropBefore, dropped)
	if err != nil {
		t.Skipped = err.Error()
		log.Warn().Err(err).Str("branch", id).Msg("retention: branch not compacted; nothing of it dropped")
		return t, true
	}
	t.Compaction = ev.Seq
	if dropBefore == 0 {
		log.Debug().Str("branch", id).Uint64("compaction_seq", ev.Seq).Msg("retention: compaction point written")
		return t, true
	}
	// A fork made since the scan is recorded in the parent's history
	// (branch.forked) before or after the compaction point just written:
	// before it, it is read here; after it, the fork sees the compaction
	// point announcing the cut and is refused (ops: the fork verb).
	if late, err := c.forkedSince(ctx, id, s.last, dropBefore); err != nil || late != nil {
		if err == nil {
			err = fmt.Errorf("fork %s made at seq %d during the pass", late.id, late.seq)
		}
		t.Skipped = "cut cancelled: " + err.Error()
		log.Info().Err(err).Str("branch", id).Uint64("compaction_seq", ev.Seq).Uint64("cut", dropBefore).
			Msg("retention: cut of a live branch cancelled, nothing dropped; again at the next pass")
		return t, true
	}
	if err := c.st.DropBefore(ctx, id, dropBefore); err != nil {
		t.Skipped = err.Error()
		log.Warn().Err(err).Str("branch", id).Msg("retention: drop a branch's old history; again at the next pass")
		return t, true
	}
	t.DroppedBefore, t.DroppedEvents = dropBefore, dropped
	s.cut(dropBefore)
	log.Info().Str("branch", id).Uint64("dropped_before", dropBefore).Uint64("events_dropped", dropped).
		Uint64("compaction_seq", ev.Seq).Str("rule", reason).Msg("retention: dropped the old history of a live branch")
	return t, true
}

// before returns the start point of s before p, or nil.
func (c *Compactor) before(s *scan, p *point) *point {
	for i := len(s.starts) - 1; i >= 0; i-- {
		if q := &s.starts[i]; q.seq < p.seq && q.seq > s.first {
			return q
		}
	}
	return nil
}

// reason names the limits.
func (c *Compactor) reason() string {
	var parts []string
	if c.cfg.KeepEvents > 0 {
		parts = append(parts, "keep_events="+strconv.Itoa(c.cfg.KeepEvents))
	}
	if c.cfg.MaxAge > 0 {
		parts = append(parts, "max_age="+c.cfg.MaxAge.String())
	}
	return strings.Join(parts, ",")
}

// liveForks returns the smallest fork point of the branch's live forks
// (ok false: none). The forks are those whose branch.created names the
// branch (by its headers) and those its branch.forked events name; a
// fork is live while it exists, is not deleted and still starts from
// the branch. A fork that cannot be checked counts as live; a
// branch.forked that cannot be read is an error (the cut waits).
func (c *Compactor) liveForks(ctx context.Context, id string, ps *pass) (uint64, bool, error) {
	refs := append([]forkRef(nil), ps.forks[id]...)
	for _, seq := range ps.scans[id].forked {
		ref, err := c.forkedRef(ctx, seq)
		if err != nil {
			return 0, false, err
		}
		if ref.id != "" {
			refs = append(refs, ref)
		}
	}
	min, found := uint64(0), false
	for _, r := range refs {
		if found && r.seq >= min {
			continue
		}
		f, err := c.st.Load(ctx, r.id)
		if err != nil {
			if !errors.Is(err, history.ErrBranchNotFound) {
				min, found = r.seq, true // unknown: its prefix is kept
			}
			continue
		}
		if f.Fork != nil && f.Fork.BranchID == id && f.Fork.Seq == r.seq {
			min, found = r.seq, true
		}
	}
	return min, found, nil
}

// forkedRef reads the branch.forked event at seq: the fork and the fork
// point (a zero forkRef when it names none).
func (c *Compactor) forkedRef(ctx context.Context, seq uint64) (forkRef, error) {
	m, err := c.res.History.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return forkRef{}, nil
	}
	if err != nil {
		return forkRef{}, fmt.Errorf("retention: read the branch.forked at seq %d: %w", seq, err)
	}
	var ev struct {
		Fork *history.ForkPoint `msgpack:"fork"`
	}
	if err := msgpack.NewDecoder(bytes.NewReader(m.Data)).Decode(&ev); err != nil || ev.Fork == nil {
		return forkRef{}, nil
	}
	return forkRef{id: ev.Fork.BranchID, seq: ev.Fork.Seq}, nil
}

// forkedSince returns a fork recorded in the branch's history after seq
// (the last event the pass's scan saw) whose fork point is before cut,
// or nil: reading the history after the compaction point announcing the
// cut was written, so that every fork recorded before that point is
// seen. Its events are read up to the head, at most MaxHistoryPage at a
// time.
func (c *Compactor) forkedSince(ctx context.Context, id string, seq, cut uint64) (*forkRef, error) {
	for {
		evs, err := c.st.History(ctx, id, seq, history.MaxHistoryPage)
		if err != nil {
			return nil, fmt.Errorf("retention: read the history of %s after seq %d: %w", id, seq, err)
		}
		for _, ev := range evs {
			if ev.Type == history.EventForked && ev.Fork != nil && ev.Fork.Seq < cut {
				return &forkRef{id: ev.Fork.BranchID, seq: ev.Fork.Seq}, nil
			}
		}
		if len(evs) < history.MaxHistoryPage {
			return nil, nil
		}
		seq = evs[len(evs)-1].Seq
	}
}
