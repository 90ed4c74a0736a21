package wire

import "encoding/json"

// Usage counts the tokens a request used, summed over its model calls.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
	// CostUSD is what the calls cost in US dollars by the worker's price
	// table (docs/budgets.md); 0 when no price is known.
	CostUSD float64 `json:"cost_usd,omitempty"`
}

// Result is the outcome of a successful request, whatever its verb: the
// `data` of a lionbus.V.result event. The typed result of each verb
// ([CommunicateResult], ...) decodes the same data with its value typed.
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
	// LNDLRounds lists what each round of the LNDL middle did (operate
	// with "middle": "lndl"); see [OperateResult].
	LNDLRounds []LNDLRound `json:"lndl_rounds,omitempty"`
	// RunLog says where a run with stream_persist kept its log; see
	// [RunResult] and [OperateResult].
	RunLog *RunLogLocation `json:"run_log,omitempty"`
	// Analyses lists the values of a react's analysis rounds; see
	// [ReactResult].
	Analyses []json.RawMessage `json:"analyses,omitempty"`
}

// LNDLRound is what one round of the LNDL middle did: the data of its
// lionbus.lndl.round signal and an item of an operate result's lndl_rounds.
type LNDLRound struct {
	// Round is the round's number, from 1.
	Round int `json:"round"`
	// Budget is the invocation's round budget.
	Budget int `json:"budget"`
	// BudgetLeft is how many rounds remain after this one.
	BudgetLeft int `json:"budget_left"`
	// Outcome is "continue", "retry", "rejected" or "success".
	Outcome string `json:"outcome"`
	// Error is the round's repair error (retry, rejected), bounded.
	Error string `json:"error,omitempty"`
	// Actions are the actions the round ran, in the order they were
	// asked for; never nil.
	Actions []LNDLAction `json:"actions"`
	// Notes is how many notes the invocation keeps after the round.
	Notes int `json:"notes"`
}

// LNDLAction is one action a round ran.
type LNDLAction struct {
	// Alias is the lact's alias.
	Alias string `json:"alias"`
	// Function is the tool called.
	Function string `json:"function"`
	// ErrorCode is the code of the call's error value, when it failed (a
	// denial, the tool's own failure, the invoker's).
	ErrorCode string `json:"error_code,omitempty"`
}

// RunLogLocation says where a run with stream_persist kept its log: the
// directory and the subjects of the live chunk log and of the snapshots.
type RunLogLocation struct {
	// Dir is the run log directory.
	Dir string `json:"dir"`
	// Chunks is where the live chunk log is (removed after a clean end).
	Chunks string `json:"chunks,omitempty"`
	// Snapshot is where the branch snapshots are.
	Snapshot string `json:"snapshot,omitempty"`
}

// RunValue is the value of a run result.
type RunValue struct {
	// Text is the assistant responses that have text, joined with a blank
	// line; nil when there were none.
	Text *string `json:"text"`
	// Responses are the texts of the recorded assistant responses, in order.
	Responses []string `json:"responses"`
	// SessionID is the provider session the next run resumes, if any.
	SessionID string `json:"session_id,omitempty"`
	// Chunks is the number of chunks the run emitted: the seq of its last.
	Chunks uint64 `json:"chunks"`
	// Canceled is true when the client cancelled the run (it ended
	// cleanly, with what arrived until then).
	Canceled bool `json:"canceled,omitempty"`
}

// HistoryPage is the value of a branch.history result.
type HistoryPage struct {
	// Events are the history events with Seq > after, oldest first.
	Events []Event `json:"events"`
	// Next is the Seq of the last returned event (the "after" of the next
	// page), or the request's after when no event was returned.
	Next uint64 `json:"next"`
	// More is true when the page is full, so there may be more events.
	More bool `json:"more"`
}
