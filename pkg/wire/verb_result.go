package wire

import "encoding/json"

// ResultMeta is what the result of most verbs carries besides its value:
// the branch, the token usage, the duration and whether it was replayed.
type ResultMeta struct {
	// BranchID is the branch the request acted on.
	BranchID string `json:"branch_id"`
	// Usage is the token usage of the request's model calls, if any.
	Usage *Usage `json:"usage,omitempty"`
	// DurationMS is how long the request ran, in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// Replayed is true when the result was read back from history because
	// the request had already been committed.
	Replayed bool `json:"replayed,omitempty"`
}

// CommunicateResult is the result of communicate: the validated JSON with
// a response format, the matched fields with request fields, else the
// response text.
type CommunicateResult struct {
	Value json.RawMessage `json:"value"`
	ResultMeta
}

// ChatResult is the result of chat: the response text.
type ChatResult struct {
	Value string `json:"value"`
	// BranchID is the branch the chat ran on; "" for a chat without a
	// branch.
	BranchID string `json:"branch_id,omitempty"`
	// Usage is the token usage of the model call, if any.
	Usage *Usage `json:"usage,omitempty"`
	// DurationMS is how long the request ran, in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// Replayed is never set for a chat (nothing is recorded to replay);
	// the schema allows it as for every verb.
	Replayed bool `json:"replayed,omitempty"`
}

// ChatAndRecordResult is the result of chat_and_record: the response text.
type ChatAndRecordResult struct {
	Value string `json:"value"`
	ResultMeta
}

// OperateResult is the result of operate.
type OperateResult struct {
	// Value is the answer: the structured value, with the action responses
	// when actions ran.
	Value json.RawMessage `json:"value"`
	ResultMeta
	OperateExtra
}

// OperateExtra is what an operate result answers beside the shared fields
// ([Result.Extra]).
type OperateExtra struct {
	// LNDLRounds lists what each round of the LNDL middle did ("middle":
	// "lndl").
	LNDLRounds []LNDLRound `json:"lndl_rounds,omitempty"`
	// RunLog says where a persisted run kept its log (run_and_collect).
	RunLog *RunLogLocation `json:"run_log,omitempty"`
}

// ReactResult is the result of react.
type ReactResult struct {
	// Value is the final answer.
	Value json.RawMessage `json:"value"`
	ResultMeta
	ReactExtra
}

// ReactExtra is what a react result answers beside the shared fields
// ([Result.Extra]).
type ReactExtra struct {
	// Analyses are the values of the analysis rounds, in order, when
	// asked for (return_analysis) or streamed.
	Analyses []json.RawMessage `json:"analyses,omitempty"`
}

// RunResult is the result of run.
type RunResult struct {
	Value RunValue `json:"value"`
	ResultMeta
	RunExtra
}

// RunExtra is what a run result answers beside the shared fields
// ([Result.Extra]).
type RunExtra struct {
	// RunLog says where a persisted run (stream_persist) kept its log.
	RunLog *RunLogLocation `json:"run_log,omitempty"`
}

// ParseResult is the result of parse: the value, or the text or null
// under a non-raising handle_validation. A parse is not recorded, so it is
// never replayed.
type ParseResult struct {
	Value      json.RawMessage `json:"value"`
	BranchID   string          `json:"branch_id"`
	Usage      *Usage          `json:"usage,omitempty"`
	DurationMS int64           `json:"duration_ms"`
}

// InterpretResult is the result of interpret: the rewritten prompt.
type InterpretResult struct {
	Value string `json:"value"`
	ResultMeta
}

// ActResult is the result of act: one response per call that did not
// answer null, in the order of the calls. act calls no model, so it has
// no usage.
type ActResult struct {
	Value      []ActionResponse `json:"value"`
	BranchID   string           `json:"branch_id"`
	DurationMS int64            `json:"duration_ms"`
	Replayed   bool             `json:"replayed,omitempty"`
}

// BranchResult is the result of branch.create, branch.get, branch.clear
// and branch.clone: the branch as it is afterwards.
type BranchResult struct {
	Value Branch `json:"value"`
	ResultMeta
}

// BranchDeleted is the value of a branch.delete result.
type BranchDeleted struct {
	BranchID string `json:"branch_id"`
	Deleted  bool   `json:"deleted"`
	// Seq is the sequence of the branch's tombstone (branch.deleted).
	Seq uint64 `json:"seq,omitempty"`
	// Purged is set when the branch's events were purged.
	Purged bool `json:"purged,omitempty"`
}

// BranchDeleteResult is the result of branch.delete.
type BranchDeleteResult struct {
	Value BranchDeleted `json:"value"`
	ResultMeta
}

// BranchImported is the value of a branch.import result.
type BranchImported struct {
	// BranchID is the branch the events were imported into.
	BranchID string `json:"branch_id"`
	// Head is the sequence of the branch's last event afterwards: the
	// head of the next page.
	Head uint64 `json:"head"`
	// Imported counts the events the request appended; Present the
	// events of the page the branch already held (a page sent again).
	Imported int `json:"imported"`
	Present  int `json:"present"`
}

// BranchImportResult is the result of branch.import.
type BranchImportResult struct {
	Value BranchImported `json:"value"`
	ResultMeta
}

// BranchHistoryResult is the result of branch.history.
type BranchHistoryResult struct {
	Value HistoryPage `json:"value"`
	ResultMeta
}
