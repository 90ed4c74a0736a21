package tools

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// bucketGone reports whether err, from a bucket operation, may mean that
// the bucket is gone (deleted, or lost with a server's store): no stream
// takes its writes, or none answers its reads.
func bucketGone(err error) bool {
	return errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders)
}

// heartbeatOnce keeps the registry entries in place once: it writes back
// those missing or changed and, when the registry bucket seems gone,
// creates it (and the results bucket) again first. It logs the first
// failure of a run of them and the end of the run, not every failure.
func (s *Service) heartbeatOnce(ctx context.Context) {
	err := s.register(ctx)
	if err != nil && bucketGone(err) {
		if err = s.reopen(ctx); err == nil {
			err = s.register(ctx)
		}
	}
	switch {
	case err != nil && !s.hbFailing:
		s.log.Warn().Err(err).Msg("registry heartbeat failed")
		s.hbFailing = true
	case err == nil && s.hbFailing:
		s.log.Info().Msg("registry entries in place again")
		s.hbFailing = false
	}
}

// reopen opens the registry bucket, and the results bucket when results
// are remembered, creating each when missing (with the settings of
// Serve). The handles stay the same: they name the buckets.
func (s *Service) reopen(ctx context.Context) error {
	if _, err := openRegistryBucket(ctx, s.js, s.reg.Bucket()); err != nil {
		return err
	}
	return s.reopenResults(ctx)
}

// reopenResults opens the results bucket, creating it when missing.
func (s *Service) reopenResults(ctx context.Context) error {
	if s.results == nil {
		return nil
	}
	_, err := openResults(ctx, s.js, ResultsBucket(s.cfg.Prefix), s.cfg.ResultWindow)
	return err
}
