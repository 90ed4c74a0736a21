package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// ChangesOptions says how [Client.Changes] reads the feed.
type ChangesOptions struct {
	// After starts with the first change after this sequence (a
	// change's LionSeq; 0: from the start of the feed).
	After uint64
	// Follow goes on with new changes as they are committed, until ctx
	// ends; without it, Changes returns once it read what was there.
	Follow bool
}

// storedEvent is a history event as the history stream holds it:
// msgpack, with the field names of its JSON form (docs/history.md).
type storedEvent struct {
	Type       wire.EventType        `msgpack:"type"`
	RequestID  string                `msgpack:"request_id"`
	Time       time.Time             `msgpack:"time"`
	Settings   *wire.Settings        `msgpack:"settings,omitempty"`
	Messages   []wire.Message        `msgpack:"messages,omitempty"`
	Result     []byte                `msgpack:"result,omitempty"`
	BranchID   string                `msgpack:"branch_id,omitempty"`
	Clear      bool                  `msgpack:"clear,omitempty"`
	ModelCalls uint64                `msgpack:"model_calls,omitempty"`
	Fork       *wire.ForkPoint       `msgpack:"fork,omitempty"`
	Tombstone  *wire.Tombstone       `msgpack:"tombstone,omitempty"`
	Compaction *wire.Compaction      `msgpack:"compaction,omitempty"`
	Approval   *wire.ApprovalRequest `msgpack:"approval,omitempty"`
}

// DecodeChange decodes a message of the history stream: its subject
// (<prefix>.history.<branch>), stream sequence and msgpack body. It is
// what [Client.Changes] does with each; a consumer of the stream in Go
// that reads it itself can use it.
func DecodeChange(subj protocol.Subjects, subject string, seq uint64, data []byte) (wire.Change, error) {
	branch, ok := strings.CutPrefix(subject, subj.History(""))
	if !ok || !protocol.ValidToken(branch) {
		return wire.Change{}, fmt.Errorf("client: change at seq %d: subject %q is not a branch's history", seq, subject)
	}
	var se storedEvent
	dec := msgpack.NewDecoder(bytes.NewReader(data))
	dec.UseLooseInterfaceDecoding(true)
	if err := dec.Decode(&se); err != nil {
		return wire.Change{}, fmt.Errorf("client: change at seq %d of branch %s: %w", seq, branch, err)
	}
	ev := wire.Event{
		Seq: seq, Type: se.Type, RequestID: se.RequestID, Time: se.Time.UTC(), Settings: se.Settings,
		Messages: se.Messages, BranchID: se.BranchID, Clear: se.Clear, ModelCalls: se.ModelCalls,
		Fork: se.Fork, Tombstone: se.Tombstone, Compaction: se.Compaction, Approval: se.Approval,
	}
	if c := ev.Compaction; c != nil {
		c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
		for i := range c.Messages {
			c.Messages[i].CreatedAt = c.Messages[i].CreatedAt.UTC()
		}
	}
	if len(se.Result) > 0 {
		ev.Result = json.RawMessage(se.Result)
	}
	for i := range ev.Messages {
		ev.Messages[i].CreatedAt = ev.Messages[i].CreatedAt.UTC()
	}
	if ev.BranchID == "" {
		ev.BranchID = branch
	}
	return wire.NewChange(branch, ev), nil
}

// Changes calls fn with every committed history event of every branch,
// in commit order, from the one after opt.After: the public change feed
// (docs/history.md), from which a projection can be built and rebuilt.
// A change's LionSeq is where to resume. Without opt.Follow it returns
// nil once it read the changes there were when it started; with it, it
// goes on until ctx ends (then it returns ctx's error). fn returning an
// error stops it with that error.
func (c *Client) Changes(ctx context.Context, opt ChangesOptions, fn func(wire.Change) error) error {
	st, err := c.stream(ctx, c.subj.HistoryStream(), "history")
	if err != nil {
		return err
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{c.subj.HistoryWildcard()}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if opt.After > 0 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = opt.After + 1
	}
	cons, err := st.OrderedConsumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("client: changes: %w", err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("client: changes: %w", err)
	}
	pending := info.NumPending
	msgs, err := cons.Messages(jetstream.PullMaxMessages(512))
	if err != nil {
		return fmt.Errorf("client: changes: %w", err)
	}
	defer msgs.Stop()
	for {
		if pending == 0 && !opt.Follow {
			return nil
		}
		m, err := msgs.Next(jetstream.NextMaxWait(time.Second))
		if errors.Is(err, jetstream.ErrNoMessages) || errors.Is(err, nats.ErrTimeout) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("client: changes: %w", err)
		}
		md, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("client: changes: %w", err)
		}
		pending = md.NumPending
		ch, err := DecodeChange(c.subj, m.Subject(), md.Sequence.Stream, m.Data())
		if err != nil {
			return err
		}
		if err := fn(ch); err != nil {
			return err
		}
	}
}
