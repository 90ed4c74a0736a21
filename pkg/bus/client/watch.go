package client

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// MaxBranches bounds how many branches Branches lists.
const MaxBranches = 100_000

// BranchInfo is one branch as Branches lists it.
type BranchInfo struct {
	// ID is the branch id.
	ID string `json:"branch_id"`
	// Events is how many events its history holds.
	Events uint64 `json:"events"`
	// Updated is when its last history event was stored.
	Updated time.Time `json:"updated_at,omitzero"`
}

// Branches lists the branches that have history and are not deleted,
// sorted by id: the subjects of the history stream whose last event is
// not a tombstone (a branch deleted and not purged keeps its events and
// its tombstone there; one purged, its tombstone). It returns at most
// MaxBranches. It reads the stream's subjects and the headers of each
// subject's last message.
func (c *Client) Branches(ctx context.Context) ([]BranchInfo, error) {
	ctx, cancel := c.withTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	st, err := c.stream(ctx, c.subj.HistoryStream(), "history")
	if err != nil {
		return nil, err
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(c.subj.HistoryWildcard()))
	if err != nil {
		return nil, fmt.Errorf("client: list branches: %w", err)
	}
	last, err := c.lastEvents(ctx, st)
	if err != nil {
		return nil, err
	}
	prefix := c.subj.History("")
	out := make([]BranchInfo, 0, len(info.State.Subjects))
	for subject, n := range info.State.Subjects {
		if id, ok := strings.CutPrefix(subject, prefix); ok && protocol.ValidToken(id) && !last[subject].deleted {
			out = append(out, BranchInfo{ID: id, Events: n, Updated: last[subject].time})
		}
	}
	slices.SortFunc(out, func(a, b BranchInfo) int { return strings.Compare(a.ID, b.ID) })
	if len(out) > MaxBranches {
		out = out[:MaxBranches]
	}
	return out, nil
}

// lastEvent is what Branches reads of a history subject's last message.
type lastEvent struct {
	deleted bool      // it is a tombstone
	time    time.Time // when it was stored
}

// lastEvents returns, by history subject, whether its last message is a
// tombstone and when it was stored: one headers-only consumer delivering
// the last message of every subject.
func (c *Client) lastEvents(ctx context.Context, st jetstream.Stream) (map[string]lastEvent, error) {
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{c.subj.HistoryWildcard()},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
		HeadersOnly:    true,
	})
	if err != nil {
		return nil, fmt.Errorf("client: list branches: %w", err)
	}
	ci, err := cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("client: list branches: %w", err)
	}
	last := map[string]lastEvent{}
	pending := ci.NumPending
	if pending == 0 {
		return last, nil
	}
	msgs, err := cons.Messages(jetstream.PullMaxMessages(512))
	if err != nil {
		return nil, fmt.Errorf("client: list branches: %w", err)
	}
	defer msgs.Stop()
	for pending > 0 {
		m, err := msgs.Next(jetstream.NextMaxWait(5 * time.Second))
		if err != nil {
			return nil, fmt.Errorf("client: list branches: %w", err)
		}
		md, err := m.Metadata()
		if err != nil {
			return nil, fmt.Errorf("client: list branches: %w", err)
		}
		pending = md.NumPending
		last[m.Subject()] = lastEvent{
			deleted: m.Headers().Get(headerEventType) == string(wire.EventDeleted),
			time:    md.Timestamp,
		}
	}
	return last, nil
}

// headerEventType is the history message header naming the event's type
// (docs/history.md, the change feed).
const headerEventType = "Lionbus-Event-Type"

// WatchOptions says where Watch starts.
type WatchOptions struct {
	// Since starts at the first event stored at or after this time; zero
	// (with All false) starts with the next event published.
	Since time.Time
	// All starts with the first event the events stream still keeps.
	All bool
}

// Watch calls fn with each signal event of branch (lifecycle,
// message-added, hook and round events, from the events stream), in order,
// until ctx ends (it then returns nil) or fn returns an error (returned).
// Events that cannot be decoded are skipped.
func (c *Client) Watch(ctx context.Context, branch string, opts WatchOptions, fn func(*event.Event) error) error {
	if !protocol.ValidToken(branch) {
		return fmt.Errorf("%w: branch %q", ErrInvalidOption, branch)
	}
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{c.subj.Events(branch, ">")},
		DeliverPolicy:  jetstream.DeliverNewPolicy,
	}
	switch {
	case opts.All:
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	case !opts.Since.IsZero():
		cfg.DeliverPolicy = jetstream.DeliverByStartTimePolicy
		cfg.OptStartTime = &opts.Since
	}
	sctx, cancel := c.withTimeout(ctx, c.cfg.Timeout)
	cons, err := c.js.OrderedConsumer(sctx, c.subj.EventsStream(), cfg)
	cancel()
	if err != nil {
		return fmt.Errorf("client: watch %s: %w", branch, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("client: watch %s: %w", branch, err)
	}
	defer it.Stop()
	// Next blocks until a message comes: stop the iterator when ctx ends.
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			it.Stop()
		case <-done:
		}
	}()
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("client: watch %s: %w", branch, err)
		}
		ev, err := c.codec.DecodeEvent(m.Headers(), m.Data())
		if err != nil {
			continue
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
}
