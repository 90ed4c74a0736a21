package ops

import (
	"encoding/json"
)

// Request is one decoded operation request, independent of how it arrived.
type Request struct {
	// ID is the request id (the CloudEvent id). It is the idempotency key.
	ID string
	// Verb is the operation: "communicate", "branch.create", "op.NAME", ...
	Verb string
	// BranchID names the branch for branch-scoped verbs.
	BranchID string
	// Data is the request's JSON data, already validated against its schema.
	Data json.RawMessage
	// TraceParent is the W3C traceparent to propagate, if any.
	TraceParent string
	// Attempt is the delivery attempt of the request, 1 for the first
	// delivery (0 is read as 1). Only deterministic test providers look at
	// it (a scripted temporary error fails the first N attempts).
	Attempt int
	// LastAttempt is set on the last delivery the transport will make:
	// a temporary failure is then answered instead of retried. The
	// lifecycle signals use it to emit exactly one terminal event per
	// request (see Signal).
	LastAttempt bool
}

// Usage counts the tokens a request used, summed over its model calls.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
	// CostUSD is what the calls cost in US dollars by the worker's price
	// table (see package budget); 0 when no price is known.
	CostUSD float64 `json:"cost_usd,omitempty"`
}

// Result is the outcome of a successful request. Its JSON form is the
// `data` of a lionbus.V.result event.
type Result struct {
	// Value is the verb's return value as JSON.
	Value json.RawMessage `json:"value"`
	// BranchID is the branch the request acted on, if any.
	BranchID string `json:"branch_id,omitempty"`
	// Usage is the token usage of the request's model calls, if any.
	Usage *Usage `json:"usage,omitempty"`
	// DurationMS is how long the request ran, in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// Replayed is true when the result was read back from history because
	// the request had already been committed.
	Replayed bool `json:"replayed,omitempty"`
	// LNDLRounds lists what each round of the LNDL middle did, when the
	// request used it (operate with "middle": "lndl").
	LNDLRounds []LNDLRound `json:"lndl_rounds,omitempty"`
	// RunLog says where a run with stream_persist (run, or operate's
	// run_and_collect) kept its log and snapshots (0021-D5-06); nil when
	// nothing was kept.
	RunLog *RunLogLocation `json:"run_log,omitempty"`
	// Analyses lists the values of a react's analysis rounds, in order,
	// when the request asked for them (return_analysis) or streamed them
	// (stream): a streamed react answered as one result carries every
	// round it published (0021-D2-08).
	Analyses []json.RawMessage `json:"analyses,omitempty"`
}
