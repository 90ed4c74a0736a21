package wire

import (
	"encoding/json"
	"time"
)

// Prompt is what every instruction verb (communicate, chat,
// chat_and_record, operate, react, run) takes: the task, how to go about
// it, extra material, who sends it to whom, and the chat model. Its fields
// are promoted: req.Instruction, req.ChatModel.
type Prompt struct {
	// Instruction is the task: a string, or a JSON object rendered as JSON.
	Instruction any `json:"instruction,omitempty"`
	// Guidance is how to go about the task: a string or any JSON value.
	Guidance any `json:"guidance,omitempty"`
	// Context is extra material: a list (one item each) or a single value.
	Context any `json:"context,omitempty"`
	// ChatModel is the model; nil means the branch's.
	ChatModel *ModelRef `json:"chat_model,omitempty"`
	// Sender and Recipient are recorded on the instruction (at most 256
	// bytes each).
	Sender    string `json:"sender,omitempty"`
	Recipient string `json:"recipient,omitempty"`
}

// Turn is a [Prompt] that makes one exchange with the branch's
// history: it may replace the rendered instruction by plain content, and
// leave the history out (clearing it, for the verbs that record).
type Turn struct {
	Prompt
	// PlainContent is sent verbatim instead of the rendered instruction.
	PlainContent string `json:"plain_content,omitempty"`
	// ClearMessages leaves the branch history out of the prompt (and, for
	// the verbs that record, clears the branch's messages atomically with
	// the exchange).
	ClearMessages bool `json:"clear_messages,omitempty"`
}

// ChatRequest is the data of a chat request: one model call with the
// branch history and the instruction, nothing recorded.
type ChatRequest struct {
	Turn
	// ParseModel is the model of the reformat rounds; nil means the
	// branch's parse model, else its chat model.
	ParseModel *ModelRef `json:"parse_model,omitempty"`
	// ResponseFormat is a JSON Schema the answer must satisfy.
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
}

// ChatAndRecordRequest is the data of a chat_and_record request: a chat
// whose instruction and response are recorded on the branch.
type ChatAndRecordRequest ChatRequest

// CommunicateRequest is the data of a communicate request: a recorded
// chat whose response is parsed (against ResponseFormat, or for
// RequestFields) unless SkipValidation.
type CommunicateRequest struct {
	ChatRequest
	// SkipValidation returns the response text without parsing.
	SkipValidation bool `json:"skip_validation,omitempty"`
	// RequestFields are field names (an object whose keys are the names,
	// or a list) to pick from the response's JSON when no ResponseFormat
	// is given.
	RequestFields json.RawMessage `json:"request_fields,omitempty"`
	// NumParseRetries is the number of reformat rounds after a failed
	// parse; nil means 3, values above 5 are clamped to 5.
	NumParseRetries *int `json:"num_parse_retries,omitempty"`
	// RetryInitialDelay is the wait before the first reformat round, in
	// seconds (0 to 10); nil means 1.
	RetryInitialDelay *float64 `json:"retry_initial_delay,omitempty"`
	// RetryBackoff is the factor of each later wait over the one before
	// (1 to 4); nil means 1.85.
	RetryBackoff *float64 `json:"retry_backoff,omitempty"`
	// Stream publishes the model's answer as it arrives, as chunks on the
	// request's chunk subject; the result is the same.
	Stream bool `json:"stream,omitempty"`
}

// Instruct is the instruction as one object, with its own reason, actions
// and action_strategy (operate's and react's instruct).
type Instruct struct {
	Instruction any `json:"instruction,omitempty"`
	Guidance    any `json:"guidance,omitempty"`
	Context     any `json:"context,omitempty"`
	// Reason asks for a reason field in the answer.
	Reason *bool `json:"reason,omitempty"`
	// Actions asks for action requests in the answer.
	Actions *bool `json:"actions,omitempty"`
	// ActionStrategy is "concurrent" or "sequential".
	ActionStrategy *string `json:"action_strategy,omitempty"`
}

// OperateRequest is the data of an operate request (ADR-0022 D1): a
// structured exchange through a middle, then the actions it asked for.
// The names operate refuses (request_model, operative_model, imodel,
// operative) have no field: they were removed from the protocol.
type OperateRequest struct {
	ChatRequest
	// Instruct is the instruction as one object, instead of Instruction,
	// Guidance and Context.
	Instruct *Instruct `json:"instruct,omitempty"`
	// Reason and Actions are written into the instruct object.
	Reason  *bool `json:"reason,omitempty"`
	Actions *bool `json:"actions,omitempty"`
	// ActionStrategy is "concurrent" or "sequential"; nil means the
	// instruct object's own, else concurrent.
	ActionStrategy *string `json:"action_strategy,omitempty"`
	// Tools are the branch tools offered to the model (and allowed to
	// run); nil means all the branch's tools.
	Tools []string `json:"tools,omitempty"`
	// FieldModels are extra fields, by name: each a JSON Schema fragment.
	FieldModels map[string]json.RawMessage `json:"field_models,omitempty"`
	// HandleValidation is "raise", "return_value" (the default) or
	// "return_none".
	HandleValidation string `json:"handle_validation,omitempty"`
	// SkipValidation returns the response without parsing.
	SkipValidation bool `json:"skip_validation,omitempty"`
	// Middle is the middle making the exchange: "communicate" (the
	// default), "lndl" or a registered one.
	Middle string `json:"middle,omitempty"`
	// RoundBudget is the LNDL middle's most model exchanges, 1 to 10; nil
	// means 3.
	RoundBudget *int `json:"round_budget,omitempty"`
	// StreamPersist runs the exchange as a persisted run (run_and_collect).
	StreamPersist *bool `json:"stream_persist,omitempty"`
	// StreamPersistDir is the run log directory of the persisted run; nil
	// means the worker's.
	StreamPersistDir *string `json:"stream_persist_dir,omitempty"`
	// InvokeActions runs the action requests of the answer; nil means true.
	InvokeActions *bool `json:"invoke_actions,omitempty"`
	// NumParseRetries is communicate's.
	NumParseRetries *int `json:"num_parse_retries,omitempty"`
	// Stream publishes the model's answer as chunks as it arrives.
	Stream bool `json:"stream,omitempty"`
}

// ReactRequest is the data of a react request: analysis rounds with
// actions, then a final answer.
type ReactRequest struct {
	Prompt
	// Instruct is the instruction as one object.
	Instruct *Instruct `json:"instruct,omitempty"`
	// AnalysisModel makes the analysis rounds instead of ChatModel.
	AnalysisModel *ModelRef `json:"analysis_model,omitempty"`
	// ParseModel and NumParseRetries are operate's.
	ParseModel      *ModelRef `json:"parse_model,omitempty"`
	NumParseRetries *int      `json:"num_parse_retries,omitempty"`
	// ResponseFormat is the JSON Schema of the final answer; nil: text.
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	// HandleValidation is operate's policy for the final answer.
	HandleValidation string `json:"handle_validation,omitempty"`
	// Tools are the branch tools offered in the analysis rounds.
	Tools []string `json:"tools,omitempty"`
	// ActionStrategy is how round 0's actions run.
	ActionStrategy *string `json:"action_strategy,omitempty"`
	// Interpret rewrites the instruction with interpret before round 0,
	// with the hints and the model below.
	Interpret       bool      `json:"interpret,omitempty"`
	InterpretDomain string    `json:"interpret_domain,omitempty"`
	InterpretStyle  string    `json:"interpret_style,omitempty"`
	InterpretSample string    `json:"interpret_sample,omitempty"`
	InterpretModel  *ModelRef `json:"interpret_model,omitempty"`
	// ExtensionAllowed lets an analysis ask for more rounds, at most
	// MaxExtensions of them.
	ExtensionAllowed *bool `json:"extension_allowed,omitempty"`
	MaxExtensions    *int  `json:"max_extensions,omitempty"`
	// ReturnAnalysis puts the analysis values in the result.
	ReturnAnalysis bool `json:"return_analysis,omitempty"`
	// Stream publishes each completed round as a chunk.
	Stream bool `json:"stream,omitempty"`
}

// RunRequest is the data of a run request: a turn with a CLI model, its
// answer streamed as chunks.
type RunRequest struct {
	Turn
	RunParams
}

// RunParams are the parameters of a run besides its turn: whether and
// where it keeps its run log.
type RunParams struct {
	// StreamPersist keeps the chunk log and the branch snapshots of the
	// run in the run log.
	StreamPersist bool `json:"stream_persist,omitempty"`
	// StreamPersistDir is the run log directory; nil means the worker's.
	StreamPersistDir *string `json:"stream_persist_dir,omitempty"`
}

// ParseRequest is the data of a parse request: extract a JSON value
// matching ResponseFormat from Text, with reformat rounds if need be.
type ParseRequest struct {
	// Text is the text to parse (at most 10 MiB). Required.
	Text string `json:"text"`
	// ResponseFormat is the JSON Schema the value must satisfy. Required.
	ResponseFormat json.RawMessage `json:"response_format"`
	// ParseModel is the model of the reformat rounds.
	ParseModel *ModelRef `json:"parse_model,omitempty"`
	// FuzzyMatch matches keys to property names loosely; nil means true.
	FuzzyMatch *bool `json:"fuzzy_match,omitempty"`
	// SimilarityThreshold is the Jaro-Winkler similarity from which a key
	// is taken for a property name (0.5 to 1); nil means 0.85.
	SimilarityThreshold *float64 `json:"similarity_threshold,omitempty"`
	// HandleValidation is "raise" (the default), "return_value" or
	// "return_none".
	HandleValidation string `json:"handle_validation,omitempty"`
	// MaxRetries is the number of reformat rounds; nil means 3.
	MaxRetries *int `json:"max_retries,omitempty"`
	// RetryInitialDelay and RetryBackoff are communicate's.
	RetryInitialDelay *float64 `json:"retry_initial_delay,omitempty"`
	RetryBackoff      *float64 `json:"retry_backoff,omitempty"`
}

// InterpretRequest is the data of an interpret request: rewrite Text into
// a clearer prompt.
type InterpretRequest struct {
	// Text is the raw instruction or question. Required.
	Text string `json:"text"`
	// Domain is the field the text belongs to; "" means "general".
	Domain string `json:"domain,omitempty"`
	// Style is the style wanted; "" means "concise".
	Style string `json:"style,omitempty"`
	// SampleWriting is an example of the writing wanted.
	SampleWriting string `json:"sample_writing,omitempty"`
	// InterpretModel makes the rewrite; it wins over ChatModel.
	InterpretModel *ModelRef `json:"interpret_model,omitempty"`
	ChatModel      *ModelRef `json:"chat_model,omitempty"`
}

// ActRequest is the data of an act request: run tool calls.
type ActRequest struct {
	// ActionRequests are the calls, in order (at most 256).
	ActionRequests []ActionRequest `json:"action_requests,omitempty"`
	// Strategy is "concurrent" (the default) or "sequential".
	Strategy string `json:"strategy,omitempty"`
	// SuppressErrors turns a failed call into an error-valued response;
	// nil means true.
	SuppressErrors *bool `json:"suppress_errors,omitempty"`
}

// BranchCreateRequest is the data of a branch.create request.
type BranchCreateRequest struct {
	// BranchID is the new branch's id; "" means the request's branch id,
	// else one derived from the request id.
	BranchID string `json:"branch_id,omitempty"`
	// System is the system message.
	System string `json:"system,omitempty"`
	// ChatModel and ParseModel are the branch's models.
	ChatModel  *ModelRef `json:"chat_model,omitempty"`
	ParseModel *ModelRef `json:"parse_model,omitempty"`
	// Tools names the registered tools the branch may use.
	Tools []string `json:"tools,omitempty"`
	// Metadata is free-form caller metadata.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// BranchCloneRequest is the data of a branch.clone request.
type BranchCloneRequest struct {
	// BranchID is the copy's id; "" means one derived from the request id.
	BranchID string `json:"branch_id,omitempty"`
}

// BranchHistoryRequest is the data of a branch.history request.
type BranchHistoryRequest struct {
	// After returns the events after this sequence (0: from the start).
	After uint64 `json:"after,omitempty"`
	// Limit is the most events returned; 0 means 100, at most 1000.
	Limit int `json:"limit,omitempty"`
	// AtSeq, when not 0, returns no event after this sequence: the
	// events a branch.get at AtSeq folds. It must not be beyond the
	// branch's head.
	AtSeq uint64 `json:"at_seq,omitempty"`
	// AtTime, when not nil, returns the events up to the first one
	// stamped after it. It excludes AtSeq.
	AtTime *time.Time `json:"at_time,omitempty"`
}

// MaxImportEvents is the most events one branch.import request carries.
const MaxImportEvents = 1000

// BranchImportRequest is the data of a branch.import request: one page
// of another branch's history (an export's events, oldest first) to
// append to the request's branch.
type BranchImportRequest struct {
	// Events are 1 to 1000 events, in order. Their seq (the source's)
	// only orders them; their branch_id is replaced by the request's.
	Events []Event `json:"events"`
	// Head is the sequence of the branch's last event that the page
	// continues (the previous page's answer); 0 for the first page,
	// which starts with the branch.created and creates the branch.
	Head uint64 `json:"head,omitempty"`
}

// BranchGetRequest is the data of a branch.get request. The zero value
// asks for the branch's head.
type BranchGetRequest struct {
	// AtSeq, when not 0, asks for the branch as it was at this history
	// sequence: the fold of its events with seq <= AtSeq, as an
	// operation that ran then saw it. It must not be beyond the branch's
	// head; before the branch's creation the answer is branch_not_found.
	AtSeq uint64 `json:"at_seq,omitempty"`
	// AtTime, when not nil, asks for the branch as it was at this time:
	// the fold of its events up to the first one stamped after it. It
	// excludes AtSeq.
	AtTime *time.Time `json:"at_time,omitempty"`
}

// BranchClearRequest is the data of a branch.clear request: none.
type BranchClearRequest struct{}

// BranchDeleteRequest is the data of a branch.delete request. The zero
// value deletes the branch and keeps its events, ending them with a
// tombstone.
type BranchDeleteRequest struct {
	// Purge also removes the branch's events and snapshot (the tombstone
	// stays): the history can no longer be read or exported.
	Purge bool `json:"purge,omitempty"`
	// By and Reason are recorded in the tombstone (at most 1024 bytes
	// each): who deleted the branch, and why.
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}
