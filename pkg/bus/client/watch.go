package client

import (
	"context"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
)

// WatchOptions says where Watch starts.
type WatchOptions struct {
	// Since starts at the first event stored at or after this time; zero
	// (with All false) starts with the next event published.
	Since time.Time
	// All starts with the first event the events stream still keeps.
	All bool
}

// Watch calls fn with each signal event of branch (lifecycle,
// message-added, hook and round events), in order, until ctx ends (it
// then returns nil) or fn returns an error (returned). Events that cannot
// be decoded are skipped. From now (zero opts) it subscribes to the
// branch's event subjects, which every client user may (no JetStream
// grant needed); with Since or All it reads the events stream.
func (c *Client) Watch(ctx context.Context, branch string, opts WatchOptions, fn func(*event.Event) error) error {
	if !protocol.ValidToken(branch) {
		return fmt.Errorf("%w: branch %q", ErrInvalidOption, branch)
	}
	if !opts.All && opts.Since.IsZero() {
		return c.watchLive(ctx, branch, fn)
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

// watchLive is Watch from now: a subscription to the branch's event
// subjects.
func (c *Client) watchLive(ctx context.Context, branch string, fn func(*event.Event) error) error {
	sub, err := c.nc.SubscribeSync(c.subj.Events(branch, ">"))
	if err != nil {
		return fmt.Errorf("client: watch %s: %w", branch, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	// The subscription is in place at the server before Watch waits.
	fctx, cancel := c.withTimeout(ctx, c.cfg.Timeout)
	err = c.nc.FlushWithContext(fctx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("client: watch %s: %w", branch, err)
	}
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("client: watch %s: %w", branch, err)
		}
		ev, err := c.codec.DecodeEvent(m.Header, m.Data)
		if err != nil {
			continue
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
}
