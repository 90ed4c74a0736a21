// Package journal is the JetStream store of the journal of completed model
// and tool calls (pkg/ops/journal): one message per call, on the subject
// <prefix>.journal.<key> of the stream <PREFIX>_JOURNAL, which keeps the
// last per subject for JournalMaxAge (one hour by default). A write waits
// for the stream's acknowledgement; a read is a direct get of the last
// message of the key's subject.
package journal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
)

// MaxEntryBytes bounds a journal entry; a larger one is not journaled
// (ErrTooLarge), and its call is made again on a redelivery.
const MaxEntryBytes = 512 << 10

// Timeout bounds one read or write of the journal: a journal that does not
// answer (JetStream down) costs a call at most that much, and the call
// goes on without it.
const Timeout = 2 * time.Second

// ErrTooLarge is returned by Put for an entry over MaxEntryBytes.
var ErrTooLarge = errors.New("journal: entry too large to journal")

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

// Put journals entry under key, once the stream has stored it.
func (s *Store) Put(ctx context.Context, key string, raw []byte) error {
	if len(raw) > MaxEntryBytes {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(raw), MaxEntryBytes)
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	if _, err := s.js.Publish(ctx, s.subj.Journal(key), raw, jetstream.WithExpectStream(s.stream)); err != nil {
		return fmt.Errorf("journal: put %s: %w", key, err)
	}
	return nil
}

// Get returns the entry journaled under key, and false when there is
// none.
func (s *Store) Get(ctx context.Context, key string) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	m, err := s.st.GetLastMsgForSubject(ctx, s.subj.Journal(key))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("journal: get %s: %w", key, err)
	}
	return m.Data, true, nil
}
