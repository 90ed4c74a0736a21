package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/wire"
)

// ErrStopFollowing may be returned by a [Client.Follow] callback to stop
// following without an error.
var ErrStopFollowing = errors.New("client: stop following")

// Follow delivers the chunks of request id to fn, in seq order, each once,
// starting at seq from (0 or 1: from the first): first those the chunk
// stream holds already, then the rest as they arrive. It returns the
// request's answer once the answer has arrived and every chunk stored
// before it was delivered (a worker stores all of a request's chunks
// before answering). An error from fn stops following and is returned
// (ErrStopFollowing as a nil error with a nil reply). When ctx has no
// deadline, AwaitTimeout applies.
func (c *Client) Follow(ctx context.Context, id string, from uint64, fn func(wire.Chunk) error) (*Reply, error) {
	ctx, cancel := c.withTimeout(ctx, c.cfg.AwaitTimeout)
	defer cancel()
	w, err := c.watch(id)
	if err != nil {
		return nil, err
	}
	defer w.stop()
	return c.follow(ctx, w, from, fn, true)
}

// Stream submits a request for verb and follows its chunks (see
// [Client.Follow]): run, or communicate and operate with "stream": true.
func (c *Client) Stream(ctx context.Context, verb, branchID string, data any, fn func(wire.Chunk) error, opts ...SubmitOption) (string, *Reply, error) {
	ctx, cancel := c.withTimeout(ctx, c.cfg.AwaitTimeout)
	defer cancel()
	id, w, given, err := c.submitWatched(ctx, verb, branchID, data, opts)
	if err != nil {
		return id, nil, err
	}
	defer w.stop()
	r, err := c.follow(ctx, w, 0, fn, given)
	return id, r, err
}

type chunkMsg struct {
	c   wire.Chunk
	err error
}

// follow delivers the chunks of w's request from seq from to fn and
// returns its answer (see Follow). early says the answer may be out
// already (see wait).
func (c *Client) follow(ctx context.Context, w *answerWatch, from uint64, fn func(wire.Chunk) error, early bool) (*Reply, error) {
	// The readers below end with this call.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	subject := c.subj.Chunk(w.id)
	cons, err := c.js.OrderedConsumer(ctx, c.subj.ChunksStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("client: follow the chunks of %s: %w", w.id, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("client: follow the chunks of %s: %w", w.id, err)
	}
	defer it.Stop()
	chunks := make(chan chunkMsg, 64)
	go func() {
		defer close(chunks)
		for {
			m, err := it.Next()
			if err != nil {
				if !errors.Is(err, jetstream.ErrMsgIteratorClosed) {
					select {
					case chunks <- chunkMsg{err: err}:
					case <-ctx.Done():
					}
				}
				return
			}
			var cm chunkMsg
			ev, err := c.codec.DecodeEvent(m.Headers(), m.Data())
			if err == nil {
				err = json.Unmarshal(ev.Data(), &cm.c)
			}
			cm.err = err
			select {
			case chunks <- cm:
			case <-ctx.Done():
				return
			}
		}
	}()
	answers := make(chan answerOrErr, 1)
	go func() {
		r, err := c.wait(ctx, w, early)
		answers <- answerOrErr{r, err}
	}()

	var (
		seen  uint64 // the last seq delivered (or skipped before from)
		reply *Reply
		last  uint64 // the seq of the last stored chunk, once answered
	)
	if from > 1 {
		seen = from - 1
	}
	for {
		if reply != nil && seen >= last {
			return reply, nil
		}
		select {
		case cm, ok := <-chunks:
			if !ok {
				return nil, fmt.Errorf("client: follow the chunks of %s: %w", w.id, ctx.Err())
			}
			if cm.err != nil {
				return nil, fmt.Errorf("client: chunk of %s: %w", w.id, cm.err)
			}
			if cm.c.Seq <= seen {
				continue // before from, or a copy of one delivered
			}
			seen = cm.c.Seq
			if err := fn(cm.c); err != nil {
				if errors.Is(err, ErrStopFollowing) {
					return nil, nil
				}
				return nil, err
			}
		case a := <-answers:
			if a.err != nil {
				return nil, a.err
			}
			reply = a.r
			if last, err = c.lastChunk(ctx, w.id); err != nil {
				return nil, err
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("client: follow the chunks of %s: %w", w.id, ctx.Err())
		}
	}
}

type answerOrErr struct {
	r   *Reply
	err error
}

// lastChunk returns the seq of the last stored chunk of request id, 0 when
// there is none.
func (c *Client) lastChunk(ctx context.Context, id string) (uint64, error) {
	m, err := c.lastMsg(ctx, c.subj.ChunksStream(), "chunk", c.subj.Chunk(id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("client: last chunk of %s: %w", id, err)
	}
	ev, err := c.codec.DecodeEvent(m.Header, m.Data)
	if err != nil {
		return 0, fmt.Errorf("client: last chunk of %s: %w", id, err)
	}
	var ch wire.Chunk
	if err := json.Unmarshal(ev.Data(), &ch); err != nil {
		return 0, fmt.Errorf("client: last chunk of %s: %w", id, err)
	}
	return ch.Seq, nil
}
