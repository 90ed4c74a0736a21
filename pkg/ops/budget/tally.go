package budget

import (
	"context"
	"sync/atomic"
	"time"
)

// tallyKey is the context key of a request's WaitTally.
type tallyKey struct{}

// WaitTally adds up how long the model calls of one request waited for
// budget, the retries after a 429 included. It is safe for concurrent use.
type WaitTally struct{ ns atomic.Int64 }

// WithWaitTally returns ctx carrying a new tally: every metered call made
// with the returned context (or one derived from it) adds its wait.
func WithWaitTally(ctx context.Context) (context.Context, *WaitTally) {
	t := &WaitTally{}
	return context.WithValue(ctx, tallyKey{}, t), t
}

// Waited returns the waits added so far.
func (t *WaitTally) Waited() time.Duration { return time.Duration(t.ns.Load()) }

// addWait adds d to ctx's tally, if it has one.
func addWait(ctx context.Context, d time.Duration) {
	if t, _ := ctx.Value(tallyKey{}).(*WaitTally); t != nil && d > 0 {
		t.ns.Add(int64(d))
	}
}
