// Package journal is the JetStream store of the journal of completed model
// calls (pkg/ops/journal): one message per call, on the subject
// <prefix>.journal.<key> of the stream <PREFIX>_JOURNAL, which keeps the
// last per subject for JournalMaxAge (one hour by default). A write waits
// for the stream's acknowledgement; a read is a direct get of the last
// message of the key's subject.
package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/ops"
)

// MaxEntryBytes bounds a journaled completion; a larger one is not
// journaled (ErrTooLarge), and its call is made again on a redelivery.
const MaxEntryBytes = 512 << 10

// ErrTooLarge is returned by Put for a completion over MaxEntryBytes.
var ErrTooLarge = errors.New("journal: completion too large to journal")

// entry is a journaled completion, JSON.
type entry struct {
	Text      string          `json:"text"`
	ToolCalls []ops.ToolCall  `json:"tool_calls,omitempty"`
	Usage     *ops.Usage      `json:"usage,omitempty"`
	Raw       json.RawMessage `json:"raw,omitempty"`
	SessionID string          `json:"session_id,omitempty"`
}

// Store is the journal on a JetStream stream. It is safe for concurrent
// use.
type Store struct {
	js     jetstream.JetStream
	st     jetstream.Stream
	subj   protocol.Subjects
	stream string
}

// New returns the journal kept in st (the provisioned journal stream of
// the deployment with subjects subj), written through js.
func New(js jetstream.JetStream, st jetstream.Stream, subj protocol.Subjects) *Store {
	return &Store{js: js, st: st, subj: subj, stream: subj.JournalStream()}
}

// Put journals c under key, once the stream has stored it.
func (s *Store) Put(ctx context.Context, key string, c *ops.Completion) error {
	raw, err := json.Marshal(entry{Text: c.Text, ToolCalls: c.ToolCalls, Usage: c.Usage, Raw: c.Raw, SessionID: c.SessionID})
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if len(raw) > MaxEntryBytes {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(raw), MaxEntryBytes)
	}
	if _, err := s.js.Publish(ctx, s.subj.Journal(key), raw, jetstream.WithExpectStream(s.stream)); err != nil {
		return fmt.Errorf("journal: put %s: %w", key, err)
	}
	return nil
}

// Get returns the completion journaled under key, and false when there is
// none.
func (s *Store) Get(ctx context.Context, key string) (*ops.Completion, bool, error) {
	m, err := s.st.GetLastMsgForSubject(ctx, s.subj.Journal(key))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("journal: get %s: %w", key, err)
	}
	var e entry
	if err := json.Unmarshal(m.Data, &e); err != nil {
		return nil, false, fmt.Errorf("journal: entry %s: %w", key, err)
	}
	return &ops.Completion{Text: e.Text, ToolCalls: e.ToolCalls, Usage: e.Usage, Raw: e.Raw, SessionID: e.SessionID}, true, nil
}
