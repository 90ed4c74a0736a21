// Package pending collects the acknowledgements of JetStream publishes
// made on a request's behalf, so that they can be sent without waiting
// and awaited all at once before the request is acknowledged.
package pending

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// Acks holds the outstanding acknowledgements of one request's
// publishes. Its zero value is ready to use; it is safe for concurrent use.
//
// Each acknowledgement is read once, by the Wait that resolves it: a
// JetStream future delivers its outcome to one reader only. Waits made at
// the same time take turns, so that each returns once every publish
// recorded before it is resolved.
type Acks struct {
	turn sync.Mutex // held by the Wait resolving futures
	mu   sync.Mutex // guards futs
	futs []future   // not yet resolved, in publish order
}

type future struct {
	f    jetstream.PubAckFuture
	what string
}

// Add records the acknowledgement of a publish; what names it in errors.
func (a *Acks) Add(f jetstream.PubAckFuture, what string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.futs = append(a.futs, future{f, what})
}

// Wait waits until every recorded publish is acknowledged or has failed,
// or ctx ends, and forgets the resolved ones. It returns the failures it
// found joined (a failure is returned once, by the Wait that found it),
// and when ctx ended first one error for each publish left unresolved;
// nil when there were none.
func (a *Acks) Wait(ctx context.Context) error {
	a.turn.Lock()
	defer a.turn.Unlock()
	var errs []error
	for {
		a.mu.Lock()
		if len(a.futs) == 0 {
			a.mu.Unlock()
			return errors.Join(errs...)
		}
		f := a.futs[0]
		a.mu.Unlock()
		select {
		case <-f.f.Ok():
		case err := <-f.f.Err():
			errs = append(errs, fmt.Errorf("publish %s: %w", f.what, err))
		case <-ctx.Done():
			a.mu.Lock()
			for _, f := range a.futs {
				errs = append(errs, fmt.Errorf("publish %s: %w", f.what, ctx.Err()))
			}
			a.mu.Unlock()
			return errors.Join(errs...)
		}
		a.mu.Lock()
		a.futs = a.futs[1:]
		a.mu.Unlock()
	}
}
