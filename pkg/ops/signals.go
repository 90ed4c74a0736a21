package ops

import (
	"context"
	"time"
)

// SignalType names a lifecycle or message signal.
type SignalType string

// Signal types (ADR-0021 D4, docs/decisions.md#reference-a9).
const (
	// SignalRunStart is emitted when communicate starts.
	SignalRunStart SignalType = "run.start"
	// SignalRunEnd is emitted when communicate ends with a result.
	SignalRunEnd SignalType = "run.end"
	// SignalRunFailed is emitted when communicate fails.
	SignalRunFailed SignalType = "run.failed"
	// SignalMessageAdded is emitted once per message recorded on a branch,
	// after the event holding it is committed, before the run's terminal
	// signal.
	SignalMessageAdded SignalType = "message.added"
)

// Signal is one lifecycle or message-added notification.
type Signal struct {
	Type      SignalType
	Verb      string
	BranchID  string
	RequestID string
	Time      time.Time
	// Message is set on SignalMessageAdded.
	Message *Message
	// Result is set on SignalRunEnd.
	Result *Result
	// Err is set on SignalRunFailed.
	Err *Error
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
