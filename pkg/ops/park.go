package ops

import (
	"context"

	"github.com/lionbus/lionbus/pkg/wire"
)

// ErrParked is what [Engine.Do] returns (as a *ParkedError) for a request
// whose operation stopped to wait for something outside it, an approver's
// answer: the request is neither answered nor failed. Its transport keeps
// it aside, frees the worker and the branch, and runs it again with
// Request.Resume set once the answer came (docs/approvals.md).
var ErrParked = wire.ErrParked

// ParkedError says why a request was parked ([wire.ParkedError]).
type ParkedError = wire.ParkedError

// Park ends the operation ctx runs for (inside [Engine.Do]) as parked by
// p: the operation's context is cancelled with p as its cause, so that it
// stops at once, commits nothing and Do returns p. An [Authorizer] that
// recorded a pending approval calls it and returns its error. A second
// Park in the same operation keeps the first one. Outside Do, Park
// returns p ([wire.Park]).
func Park(ctx context.Context, p *ParkedError) error { return wire.Park(ctx, p) }

// Parked reports whether the operation ctx runs for was parked (see
// [Park]): an [Authorizer] asked about another call after that records
// nothing.
func Parked(ctx context.Context) bool { return wire.ParkedBy(ctx) != nil }
