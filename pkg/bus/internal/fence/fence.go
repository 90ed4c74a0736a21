// Package fence carries, from the worker to the store, the branch lease a
// request runs under, so that the store can trust a branch it cached under
// the same lease without reading the history again.
//
// A worker runs a branch's requests only while it holds the branch's
// lease, and so does every other worker of the prefix: while one
// acquisition of the lease lasts, no other worker appends to the branch.
// A branch the store cached, or brought up to date, under an acquisition
// that still lasts is therefore current. An acquisition is named by the
// stream sequence of the lease message that took it (its epoch), which is
// never reused; renewals keep it, and a lease that is let go or lost ends
// it.
//
// A worker that lost its lease unawares (paused past the lease's age
// limit) may then run one request on a branch that is behind; the
// history's optimistic concurrency still makes its append land after what
// the other worker wrote, never over it.
package fence

import "context"

type ctxKey struct{}

type lease struct {
	branch string
	epoch  uint64
}

// NewContext returns ctx carrying the acquisition epoch of branch's lease,
// held by the request that ctx belongs to. An epoch of 0 carries nothing.
func NewContext(ctx context.Context, branch string, epoch uint64) context.Context {
	if epoch == 0 || branch == "" {
		return ctx
	}
	return context.WithValue(ctx, ctxKey{}, lease{branch, epoch})
}

// Epoch returns the epoch of branch's lease carried by ctx, or 0 when ctx
// carries none for that branch.
func Epoch(ctx context.Context, branch string) uint64 {
	l, ok := ctx.Value(ctxKey{}).(lease)
	if !ok || l.branch != branch {
		return 0
	}
	return l.epoch
}
