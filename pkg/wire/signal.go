package wire

import "time"

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
	Message *Message
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

// SummaryLength bounds the argument and result summaries of the tool hook
// signals, in bytes of compact JSON.
const SummaryLength = 200

// ToolSignal describes the tool call of a tool hook signal. The summaries
// are for observers only: [SummaryLength] bytes at most of the compact JSON
// of the arguments or the output; the call itself and what is recorded are
// never shortened.
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
