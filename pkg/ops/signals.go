package ops

import (
	"context"

	"github.com/lionbus/lionbus/pkg/wire"
)

// SignalType names a lifecycle or message signal ([wire.SignalType]).
type SignalType = wire.SignalType

// Signal types (see package wire).
const (
	SignalRunStart     = wire.SignalRunStart
	SignalRunEnd       = wire.SignalRunEnd
	SignalRunFailed    = wire.SignalRunFailed
	SignalMessageAdded = wire.SignalMessageAdded
	SignalToolPre      = wire.SignalToolPre
	SignalToolPost     = wire.SignalToolPost
	SignalToolError    = wire.SignalToolError
	SignalLNDLRound    = wire.SignalLNDLRound
)

// SignalTypes returns every signal type the engine emits.
func SignalTypes() []SignalType { return wire.SignalTypes() }

// Signal is one lifecycle or message-added notification ([wire.Signal]).
type Signal = wire.Signal

// ToolSignal describes the tool call of a tool hook signal
// ([wire.ToolSignal]).
type ToolSignal = wire.ToolSignal

// Signals receives signals. Emit is called synchronously from the operation;
// a returned error is logged and otherwise ignored: observers never change an
// operation's outcome.
type Signals interface {
	Emit(ctx context.Context, s Signal) error
}

// emit sends s to the configured sink, if any.
func (e *Engine) emit(ctx context.Context, s Signal) {
	if e.signals == nil {
		return
	}
	s.Time = e.clock()
	if err := e.signals.Emit(ctx, s); err != nil {
		e.log.Warn().Err(err).Str("signal", string(s.Type)).Str("request_id", s.RequestID).Msg("signal observer failed")
	}
}

// runLifecycle runs body between req's run start and its one terminal
// signal (ADR-0021 D4): run.end with the result, or run.failed with the
// error, except for a failure the transport retries, whose retry ends the
// run instead.
//
// Under a nested-turn marker (see [withNestedTurn]) body runs without
// either signal: the operation that set the marker owns the lifecycle.
func (e *Engine) runLifecycle(ctx context.Context, req Request, branchID string, body func() (*Result, error)) (*Result, error) {
	if isNestedTurn(ctx) {
		res, err := body()
		if err != nil {
			return nil, asError(ctx, err)
		}
		return res, nil
	}
	e.emit(ctx, Signal{Type: SignalRunStart, Verb: req.Verb, BranchID: branchID, RequestID: req.ID})
	res, err := body()
	if err != nil {
		oe := asError(ctx, err)
		if !retried(oe, req) {
			e.emit(ctx, Signal{Type: SignalRunFailed, Verb: req.Verb, BranchID: branchID, RequestID: req.ID, Err: oe})
		}
		return nil, oe
	}
	e.emit(ctx, Signal{Type: SignalRunEnd, Verb: req.Verb, BranchID: branchID, RequestID: req.ID, Result: res})
	return res, nil
}

// retried reports whether the transport will run req again after the
// failure oe: a temporary failure before the last delivery.
func retried(oe *Error, req Request) bool {
	return oe.Temporary && !req.LastAttempt
}

// nestedTurnKey is the context key of the nested-turn marker.
type nestedTurnKey struct{}

// withNestedTurn returns ctx marked as carrying a turn nested inside
// another operation (a react round): the verbs run under it emit no run
// lifecycle of their own. The marker lives in the
// request's context, so another request running at the same time on the
// same engine and branch is not affected. Message-added and tool signals
// are emitted as usual.
func withNestedTurn(ctx context.Context) context.Context {
	return context.WithValue(ctx, nestedTurnKey{}, true)
}

// isNestedTurn reports whether ctx carries the nested-turn marker.
func isNestedTurn(ctx context.Context) bool {
	nested, _ := ctx.Value(nestedTurnKey{}).(bool)
	return nested
}
