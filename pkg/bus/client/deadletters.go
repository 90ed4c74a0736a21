package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
)

// Errors of the dead-letter methods.
var (
	// ErrNoDeadLetter means no dead letter has the key.
	ErrNoDeadLetter = errors.New("client: no such dead letter")
	// ErrNotRetryable means a dead letter holds a request that cannot be
	// published again: one that could not be read as a CloudEvent.
	ErrNotRetryable = errors.New("client: dead letter cannot be retried")
)

// ExtRetryOf is the extension attribute a retried dead letter carries: the
// id of the request it is a copy of.
const ExtRetryOf = "retryof"

// MaxDeadLetters bounds how many dead letters DeadLetters returns.
const MaxDeadLetters = 10_000

// DeadLetters returns the dead letters, oldest first, at most limit of them
// (0 or more than MaxDeadLetters means MaxDeadLetters).
func (c *Client) DeadLetters(ctx context.Context, limit int) ([]*protocol.DeadLetter, error) {
	if limit <= 0 || limit > MaxDeadLetters {
		limit = MaxDeadLetters
	}
	ctx, cancel := c.withTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	st, err := c.stream(ctx, c.subj.DeadStream(), "dead-letter")
	if err != nil {
		return nil, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("client: dead-letter stream: %w", err)
	}
	if info.State.Msgs == 0 {
		return nil, nil
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return nil, fmt.Errorf("client: read dead letters: %w", err)
	}
	var out []*protocol.DeadLetter
	for len(out) < limit {
		batch, err := cons.Fetch(min(limit-len(out), 256), jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return nil, fmt.Errorf("client: read dead letters: %w", err)
		}
		more := false
		for m := range batch.Messages() {
			meta, err := m.Metadata()
			if err != nil {
				continue
			}
			d, err := protocol.DecodeDeadLetter(c.subj, m.Subject(), meta.Sequence.Stream, m.Headers(), m.Data())
			if err == nil {
				out = append(out, d)
			}
			more = meta.NumPending > 0
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return nil, fmt.Errorf("client: read dead letters: %w", err)
		}
		if !more {
			break
		}
	}
	return out, nil
}

// DeadLetter returns the dead letter of key: a request id, or "seq-N" for a
// request whose id could not be read. It returns ErrNoDeadLetter when there
// is none.
func (c *Client) DeadLetter(ctx context.Context, key string) (*protocol.DeadLetter, error) {
	if !protocol.ValidToken(key) {
		return nil, fmt.Errorf("%w: key %q", ErrInvalidOption, key)
	}
	ctx, cancel := c.withTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	raw, err := c.lastMsg(ctx, c.subj.DeadStream(), "dead-letter", c.subj.DeadLetter(key))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNoDeadLetter, key)
	}
	if err != nil {
		return nil, fmt.Errorf("client: dead letter %s: %w", key, err)
	}
	return protocol.DecodeDeadLetter(c.subj, raw.Subject, raw.Sequence, raw.Header, raw.Data)
}

// DeleteDeadLetter removes the dead letter of key.
func (c *Client) DeleteDeadLetter(ctx context.Context, key string) error {
	d, err := c.DeadLetter(ctx, key)
	if err != nil {
		return err
	}
	ctx, cancel := c.withTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	st, err := c.stream(ctx, c.subj.DeadStream(), "dead-letter")
	if err != nil {
		return err
	}
	if err := st.DeleteMsg(ctx, d.Seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("client: delete dead letter %s: %w", key, err)
	}
	return nil
}

// RetryDeadLetter publishes the request of dead letter key again, as a new
// request with a fresh id (returned) and the extension retryof naming the
// original, to the subject it was first published to, then removes the
// dead letter. The original id is not reused: it was answered already (with
// the error that ended it) and that answer stays. A replyto that was the
// original's default reply subject becomes the new request's. It returns
// ErrNotRetryable for a request that is not a readable CloudEvent.
func (c *Client) RetryDeadLetter(ctx context.Context, key string) (string, error) {
	d, err := c.DeadLetter(ctx, key)
	if err != nil {
		return "", err
	}
	ev, err := c.codec.DecodeEvent(d.Header, d.Data)
	if err != nil {
		return "", fmt.Errorf("%w: %s (%s): %v", ErrNotRetryable, key, d.Reason, err)
	}
	verb, ok := strings.CutPrefix(d.Subject, c.subj.Op(""))
	if !ok || !validVerb(verb) {
		return "", fmt.Errorf("%w: %s was published to %q, not a request subject", ErrNotRetryable, key, d.Subject)
	}
	old := ev.ID()
	ev.SetID(uuid.NewString())
	ev.SetExtension(ExtRetryOf, old)
	if rt, _ := ev.Extensions()[protocol.ExtReplyTo].(string); rt == c.subj.Reply(old) {
		ev.SetExtension(protocol.ExtReplyTo, nil)
	}
	msg, err := protocol.Encode(d.Subject, ev, protocol.Structured)
	if err != nil {
		return "", fmt.Errorf("client: retry %s: %w", key, err)
	}
	ctx, cancel := c.withTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	if _, err := c.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(c.subj.OpsStream())); err != nil {
		return "", fmt.Errorf("client: retry %s: %w", key, err)
	}
	if err := c.DeleteDeadLetter(ctx, key); err != nil && !errors.Is(err, ErrNoDeadLetter) {
		return ev.ID(), err
	}
	return ev.ID(), nil
}
