package tools

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

const (
	// DefaultStartupTimeout bounds how long [Serve] keeps trying to open
	// the registry and results buckets, and to write the registry
	// entries, while JetStream does not answer.
	DefaultStartupTimeout = 30 * time.Second

	// startTryTimeout bounds one JetStream API request of a start: a
	// request the server never answers (a cluster still electing a
	// leader, a bucket another service creates at the same moment) costs
	// one try, not the whole start.
	startTryTimeout = 5 * time.Second
	// startFirstDelay and startMaxDelay bound the pause between tries.
	startFirstDelay = 250 * time.Millisecond
	startMaxDelay   = 5 * time.Second
)

// untilReady calls f, each time with a context bounded by
// startTryTimeout, until it succeeds, returns an error that waiting cannot
// cure (a bucket name or configuration the server refuses), or ctx ends.
// Between tries it pauses 250ms, doubling to 5s, less up to a quarter at
// random, and logs the failure; what says what f does ("open the registry
// bucket").
func (s *Service) untilReady(ctx context.Context, what string, f func(context.Context) error) error {
	delay := startFirstDelay
	for try := 1; ; try++ {
		tctx, cancel := context.WithTimeout(ctx, startTryTimeout)
		err := f(tctx)
		cancel()
		if err == nil || permanent(err) {
			return err
		}
		pause := delay - time.Duration(rand.Int64N(int64(delay/4)+1))
		s.log.Warn().Err(err).Int("attempt", try).Dur("retry_in", pause).Msgf("%s: retrying", what)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up after %d attempts: %w)", err, try, context.Cause(ctx))
		case <-t.C:
		}
		delay = min(2*delay, startMaxDelay)
	}
}

// permanent reports whether err, from a JetStream request, stays the same
// however long one waits: the server refused the request itself (any
// JetStream API error but "temporarily unavailable"), or the name or
// configuration is invalid.
func permanent(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code != 503
	}
	return errors.Is(err, jetstream.ErrInvalidBucketName) || errors.Is(err, jetstream.ErrBucketExists)
}
