// Package pending collects the acknowledgements of JetStream publishes
// made on a request's behalf, so that they can be sent without waiting
// and awaited all at once before the request is answered.
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
type Acks struct {
	mu   sync.Mutex
	futs []future
}

type future struct {
	f    jetstream.PubAckFuture
	what string
}

type ctxKey struct{}

// NewContext returns ctx carrying a.
func NewContext(ctx context.Context, a *Acks) context.Context {
	return context.WithValue(ctx, ctxKey{}, a)
}

// FromContext returns the Acks ctx carries, or nil.
func FromContext(ctx context.Context) *Acks {
	a, _ := ctx.Value(ctxKey{}).(*Acks)
	return a
}

// Add records the acknowledgement of a publish; what names it in errors.
func (a *Acks) Add(f jetstream.PubAckFuture, what string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.futs = append(a.futs, future{f, what})
}

// Wait waits until every recorded publish is acknowledged or has failed,
// or ctx ends, and forgets them. It returns the failures joined, nil when
// there were none.
func (a *Acks) Wait(ctx context.Context) error {
	a.mu.Lock()
	futs := a.futs
	a.futs = nil
	a.mu.Unlock()
	var errs []error
	for _, f := range futs {
		select {
		case <-f.f.Ok():
		case err := <-f.f.Err():
			errs = append(errs, fmt.Errorf("publish %s: %w", f.what, err))
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("publish %s: %w", f.what, ctx.Err()))
		}
	}
	return errors.Join(errs...)
}
