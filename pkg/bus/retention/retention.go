// Package retention purges the history of deleted branches once it is old
// enough: a [Sweeper] reads the history stream's headers in order, notes
// every tombstone (a branch.deleted event), and once one is older than
// [Config.DeletedAfter] purges the events before it and the branch's
// snapshot, keeping the tombstone — unless the branch was created again
// since. Branches that are not deleted are never touched, so retention
// never removes a prefix a fork reads (a branch with live forks cannot be
// deleted).
package retention

import (
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

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// Bounds and defaults of a [Sweeper].
const (
	// DefaultInterval is how often a Sweeper looks for tombstones old
	// enough to purge.
	DefaultInterval = time.Minute
	// MaxPending is the most tombstones a Sweeper waits on at once;
	// reading the feed pauses while it holds that many.
	MaxPending = 100_000
	// PositionKey is the key of the branches bucket that holds the
	// sequence the sweepers read the history to (decimal). It is no
	// branch id (those have no "=").
	PositionKey = "=retention"
)

// Purger purges a deleted branch's events and snapshot, keeping its
// tombstone (*store.Store does).
type Purger interface {
	Delete(ctx context.Context, branchID string) error
}

// Config configures a [Sweeper].
type Config struct {
	// DeletedAfter is how long the events of a deleted branch are kept
	// after its tombstone; 0 keeps them until a branch.delete with purge.
	DeletedAfter time.Duration
	// Interval is how often the sweeper purges what became old enough.
	// Default DefaultInterval.
	Interval time.Duration
	// Clock tells the time; nil means time.Now.
	Clock func() time.Time
	// Logger receives one line per purge (what was dropped) and the
	// failures. The zero value discards them.
	Logger zerolog.Logger
}

type tombstone struct {
	branch string
	seq    uint64
	at     time.Time
}

// Sweeper purges old deleted branches' history; see the package doc.
type Sweeper struct {
	js     jetstream.JetStream
	res    *provision.Resources
	purger Purger
	cfg    Config

	mu      sync.Mutex
	pending []tombstone // in sequence order
	read    uint64      // the last sequence read

	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a sweeper over the resources res, purging with p. cfg's
// DeletedAfter must be positive.
func New(js jetstream.JetStream, res *provision.Resources, p Purger, cfg Config) (*Sweeper, error) {
	if cfg.DeletedAfter <= 0 {
		return nil, errors.New("retention: Config.DeletedAfter must be positive")
	}
	if js == nil || res == nil || res.History == nil || res.Branches == nil || p == nil {
		return nil, errors.New("retention: New needs JetStream, provisioned resources and a purger")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return &Sweeper{js: js, res: res, purger: p, cfg: cfg}, nil
}

// Start starts sweeping until ctx ends or Stop.
func (s *Sweeper) Start(ctx context.Context) error {
	ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		s.run(ctx)
	}()
	return nil
}

// Stop stops the sweeper and waits for it, or for ctx.
func (s *Sweeper) Stop(ctx context.Context) error {
	if s.cancel == nil {
		return nil
	}
	s.cancel()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Sweeper) run(ctx context.Context) {
	for ctx.Err() == nil {
		err := s.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		s.cfg.Logger.Warn().Err(err).Msg("retention: read the history; again in a while")
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.cfg.Interval):
		}
	}
}

// follow reads the history's headers from the stored position, noting
// tombstones, and purges on every tick.
func (s *Sweeper) follow(ctx context.Context) error {
	after, err := s.position(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.pending, s.read = nil, after
	s.mu.Unlock()
	subj := s.res.Subjects
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj.HistoryWildcard()}, HeadersOnly: true, DeliverPolicy: jetstream.DeliverAllPolicy}
	if after > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
	}
	cons, err := s.js.OrderedConsumer(ctx, subj.HistoryStream(), cfg)
	if err != nil {
		return err
	}
	msgs, err := cons.Messages(jetstream.PullMaxMessages(512))
	if err != nil {
		return err
	}
	defer msgs.Stop()
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			s.sweep(ctx)
		default:
		}
		s.mu.Lock()
		full := len(s.pending) >= MaxPending
		s.mu.Unlock()
		if full {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
				s.sweep(ctx)
			}
			continue
		}
		m, err := msgs.Next(jetstream.NextMaxWait(min(s.cfg.Interval, time.Second)))
		if errors.Is(err, jetstream.ErrNoMessages) || errors.Is(err, nats.ErrTimeout) {
			continue
		}
		if err != nil {
			return err
		}
		md, err := m.Metadata()
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.read = md.Sequence.Stream
		if m.Headers().Get("Lionbus-Event-Type") == string(history.EventDeleted) {
			if branch, ok := strings.CutPrefix(m.Subject(), subj.History("")); ok && protocol.ValidToken(branch) {
				s.pending = append(s.pending, tombstone{branch, md.Sequence.Stream, md.Timestamp})
			}
		}
		s.mu.Unlock()
	}
}

// sweep purges the pending tombstones old enough, then stores the
// position a restart resumes from.
func (s *Sweeper) sweep(ctx context.Context) {
	now := s.cfg.Clock()
	for {
		s.mu.Lock()
		if len(s.pending) == 0 || now.Sub(s.pending[0].at) < s.cfg.DeletedAfter {
			s.mu.Unlock()
			break
		}
		t := s.pending[0]
		s.mu.Unlock()
		if err := s.purge(ctx, t); err != nil {
			s.cfg.Logger.Warn().Err(err).Str("branch", t.branch).Msg("retention: purge a deleted branch; again at the next sweep")
			break
		}
		s.mu.Lock()
		s.pending = s.pending[1:]
		s.mu.Unlock()
	}
	s.mu.Lock()
	pos := s.read
	if len(s.pending) > 0 {
		pos = s.pending[0].seq - 1
	}
	s.mu.Unlock()
	if _, err := s.res.Branches.Put(ctx, PositionKey, []byte(strconv.FormatUint(pos, 10))); err != nil && ctx.Err() == nil {
		s.cfg.Logger.Warn().Err(err).Msg("retention: store the position")
	}
}

// purge purges t's branch when its history still ends with t.
func (s *Sweeper) purge(ctx context.Context, t tombstone) error {
	subject := s.res.Subjects.History(t.branch)
	info, err := s.res.History.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return err
	}
	n := info.State.Subjects[subject]
	last, err := s.res.History.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if last.Sequence != t.seq || n <= 1 {
		return nil // created again since, or purged already
	}
	if err := s.purger.Delete(ctx, t.branch); err != nil && !errors.Is(err, history.ErrBranchNotFound) {
		return fmt.Errorf("retention: purge branch %s: %w", t.branch, err)
	}
	s.cfg.Logger.Info().Str("branch", t.branch).Uint64("tombstone_seq", t.seq).Uint64("events_dropped", n-1).
		Time("deleted_at", t.at).Msg("retention: purged the history of a deleted branch, keeping its tombstone")
	return nil
}

// Position reports the sequence of the history the sweeper read to and
// how many tombstones it waits on, to observe it.
func (s *Sweeper) Position() (read uint64, pending int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read, len(s.pending)
}

// position reads the stored position (0 when there is none).
func (s *Sweeper) position(ctx context.Context) (uint64, error) {
	e, err := s.res.Branches.Get(ctx, PositionKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(string(e.Value()), 10, 64)
	if err != nil {
		return 0, nil // unreadable: read the history again from the start
	}
	return n, nil
}
