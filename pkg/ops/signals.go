package ops

import (
	"context"
	"time"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

// SignalType names a lifecycle or message signal.
type SignalType string

// Signal types (ADR-0021 D4, docs/decisions.md#reference-a9). The tool
// hook signals are act's (ADR-0022 D4): they are named after the original's
// hook points, tool.pre, tool.post and tool.error.
const (
	// SignalRunStart is emitted when communicate or operate starts.
	SignalRunStart SignalType = "run.start"
	// SignalRunEnd is emitted when communicate or operate ends with a result.
	SignalRunEnd SignalType = "run.end"
	// SignalRunFailed is emitted when communicate or operate fails for
	// good: a temporary failure that the transport will retry emits none
	// (the retry ends the run), so a request has exactly one terminal
	// signal, run.end or run.failed.
	SignalRunFailed SignalType = "run.failed"
	// SignalMessageAdded is emitted once per message recorded on a branch,
	// after the event holding it is committed, before the run's terminal
	// signal.
	SignalMessageAdded SignalType = "message.added"
	// SignalToolPre is emitted by act before it invokes an authorized
	// tool call (a denied call emits no hook signal).
	SignalToolPre SignalType = "tool.pre"
	// SignalToolPost is emitted by act after a tool call returned an
	// output (or null).
	SignalToolPost SignalType = "tool.post"
	// SignalToolError is emitted by act after a tool call failed: the tool
	// reported an error, or the invoker could not get an outcome.
	SignalToolError SignalType = "tool.error"
	// SignalLNDLRound is emitted by the LNDL middle after each of its
	// rounds, with what the round did (Signal.Round).
	SignalLNDLRound SignalType = "lndl.round"
)

// SignalTypes returns every signal type the engine emits, in the order
// above. Each has a schema, schemas/lionbus.<type>.json.
func SignalTypes() []SignalType {
	return []SignalType{
		SignalRunStart, SignalRunEnd, SignalRunFailed, SignalMessageAdded,
		SignalToolPre, SignalToolPost, SignalToolError, SignalLNDLRound,
	}
}

// Signal is one lifecycle or message-added notification.
type Signal struct {
	Type      SignalType
	Verb      string
	BranchID  string
	RequestID string
	Time      time.Time
	// Message is set on SignalMessageAdded.
	Message *history.Message
	// Result is set on SignalRunEnd.
	Result *Result
	// Err is set on SignalRunFailed, and on SignalToolError (the call's
	// error code and message).
	Err *Error
	// Tool is set on the tool hook signals.
	Tool *ToolSignal
	// Round is set on SignalLNDLRound.
	Round *LNDLRound
}

// ToolSignal describes the tool call of a tool hook signal. The summaries
// are for observers only: [SummaryLength] bytes at most of the compact JSON
// of the arguments or the output (0022-D4-07); the call itself and what is
// recorded are never shortened.
type ToolSignal struct {
	// Function is the tool name.
	Function string `json:"function"`
	// CallID identifies the call: its idempotency key ([ToolCallKey]),
	// the same on every delivery of the request.
	CallID string `json:"call_id"`
	// Index is the call's position in the request's action requests, from 0.
	Index int `json:"index"`
	// ArgsSummary is the start of the arguments' compact JSON.
	ArgsSummary string `json:"args_summary"`
	// ResultSummary is the start of the output's compact JSON (tool.post).
	ResultSummary string `json:"result_summary,omitempty"`
	// DurationMS is how long the call took, in milliseconds (tool.post and
	// tool.error).
	DurationMS int64 `json:"duration_ms,omitempty"`
}

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
// lifecycle of their own (0021-D4-04, Go form). The marker lives in the
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
