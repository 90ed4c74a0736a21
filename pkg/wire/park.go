package wire

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrParked is what an operation returns (as a *ParkedError) when it
// stopped to wait for something outside it, an approver's answer: its
// request is neither answered nor failed. The transport keeps it aside,
// frees the worker and the branch, and runs it again once the answer came
// (docs/approvals.md). pkg/ops re-exports it as ops.ErrParked.
var ErrParked = errors.New("request parked")

// ParkedError says why a request was parked.
type ParkedError struct {
	// ApprovalID is the approval the request waits for.
	ApprovalID string
	// Tool is the tool whose call waits.
	Tool string
	// Approval, when set, is what the branch's history records of the
	// waiting call (a branch.approval_requested event).
	Approval *ApprovalRequest
}

// Error says which call waits for which approval.
func (e *ParkedError) Error() string {
	return fmt.Sprintf("parked: tool call %s waits for approval %s", e.Tool, e.ApprovalID)
}

// Is makes errors.Is(err, ErrParked) true.
func (e *ParkedError) Is(target error) bool { return target == ErrParked }

// parkKey is the context key of an operation's parker.
type parkKey struct{}

// parker ends one operation as parked, once.
type parker struct {
	mu     sync.Mutex
	parked *ParkedError
	cancel context.CancelCauseFunc
}

// Park ends the operation ctx runs for (one that [WithParker] made) as
// parked by p: the operation's context is cancelled with p as its cause,
// so that it stops at once and commits nothing. A gate that recorded a
// pending approval calls it and returns its error. A second Park in the
// same operation (another call of the same round) keeps the first one and
// returns it. Outside such an operation, Park returns p.
func Park(ctx context.Context, p *ParkedError) error {
	pk, _ := ctx.Value(parkKey{}).(*parker)
	if pk == nil {
		return p
	}
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if pk.parked == nil {
		pk.parked = p
		pk.cancel(p)
	}
	return pk.parked
}

// ParkedBy returns the *ParkedError that parked the operation ctx runs
// for, nil when none did.
func ParkedBy(ctx context.Context) *ParkedError {
	pk, _ := ctx.Value(parkKey{}).(*parker)
	if pk == nil {
		return nil
	}
	pk.mu.Lock()
	defer pk.mu.Unlock()
	return pk.parked
}

// WithParker returns the context of one operation, which [Park] can end,
// and a function that returns the *ParkedError that ended it (nil when
// none did) and releases the context.
func WithParker(ctx context.Context) (context.Context, func() *ParkedError) {
	ctx, cancel := context.WithCancelCause(ctx)
	pk := &parker{cancel: cancel}
	return context.WithValue(ctx, parkKey{}, pk), func() *ParkedError {
		pk.mu.Lock()
		p := pk.parked
		pk.mu.Unlock()
		cancel(nil)
		return p
	}
}
