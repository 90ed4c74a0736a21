package ops

import (
	"context"
	"errors"
	"fmt"

	"github.com/lionbus/lionbus/pkg/ops/history"
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

// recordParked appends, to the branch of req, the branch.approval_requested
// event of the call p parked, so that the branch's history shows what it
// waits for. A redelivery that parks on the same call again finds it
// recorded (history.ErrAlreadyCommitted). A request without a branch, or
// whose branch is gone, records nothing; a store failure is temporary:
// the request is redelivered and parks again.
func (e *Engine) recordParked(ctx context.Context, req Request, p *ParkedError) error {
	if req.BranchID == "" || p.Approval == nil {
		return nil
	}
	ev := history.Event{Type: history.EventApprovalRequested, RequestID: req.ID, Time: e.clock(), BranchID: req.BranchID, Approval: p.Approval}
	_, err := e.store.Append(ctx, req.BranchID, ev)
	switch {
	case err == nil, errors.Is(err, history.ErrAlreadyCommitted):
		return nil
	case errors.Is(err, history.ErrBranchNotFound), errors.Is(err, history.ErrBranchDeleted):
		e.log.Debug().Str("request_id", req.ID).Str("branch", req.BranchID).Str("approval", p.ApprovalID).Msg("parked call not recorded: the branch is gone")
		return nil
	default:
		return asError(ctx, storeErr(fmt.Sprintf("append of the parked call of approval %s to branch %s", p.ApprovalID, req.BranchID), err))
	}
}
