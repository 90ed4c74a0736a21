// Package middle declares the seam of operate's one logical exchange
// (ADR-0021 D5, ADR-0022 D3): a [Middle] takes an [Input] and answers a
// [Result]. The built-in middles (communicate, run_and_collect, lndl) are
// the engine's; package ops re-exports these names (ops.Middle,
// ops.MiddleInput, ops.MiddleResult, ...) and keeps the registry of custom
// middles.
package middle

import (
	"context"
	"encoding/json"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Input is what operate hands its middle: one logical exchange on a
// branch (ADR-0021 D5, ADR-0022 D3). The middle owns the exchange: it
// clears messages when asked, calls the model (once, as a stream, or in a
// bounded series of inner exchanges) and records what it exchanged; the
// caller records nothing around it.
//
// The fields are what every middle reads; what only one built-in middle
// reads is in its own part ([LNDLInput], [RunInput]), nil when the request
// gives none of it.
type Input struct {
	// RequestID is the idempotency key of what the middle records; a
	// middle that finds it already committed answers from history. The
	// caller derives it from its own request id, stable across
	// redeliveries.
	RequestID string
	// BranchID is the branch to exchange on.
	BranchID string
	// Verb is the verb the middle works for (e.g. "operate"); it labels the
	// signals the middle emits. Empty means the middle's own name.
	Verb string
	// Attempt is the delivery attempt of the request, from 1.
	Attempt int

	// CommunicateRequest is the exchange, as communicate's request data
	// has it (its fields are promoted: in.Instruction, in.ChatModel, ...):
	// the instruction (Instruction, Guidance and Context as encoding/json
	// decodes JSON: string, float64, bool, nil, []any, map[string]any; or
	// PlainContent), its Sender and Recipient, the models overriding the
	// branch's (nil keeps them; the parse model defaults to the chat
	// model), ClearMessages, and how the answer is parsed: ResponseFormat
	// (for operate, the generated request schema: what the model is asked
	// for, without action_responses; nil for none), SkipValidation, the
	// reformat rounds, and Stream (the model's answer as chunks too).
	// operate sets neither RequestFields nor the retry schedule.
	wire.CommunicateRequest
	// StreamID is the request id a streamed answer's chunks are published
	// under (the caller's; "" means RequestID).
	StreamID string
	// ToolSchemas describe the tools the model may request; they are
	// rendered into the instruction.
	ToolSchemas []any

	// LNDL is what the LNDL middle reads besides; nil means its defaults.
	LNDL *LNDLInput
	// Run is what run_and_collect reads besides: run's parameters; nil
	// means none (the run keeps no log).
	Run *RunInput
}

// LNDLInput is the part of an [Input] only the LNDL middle reads.
type LNDLInput struct {
	// RoundBudget bounds the model exchanges; 0 is the default budget (3).
	RoundBudget int
	// Tools, when not nil, narrows the branch's tools the middle's actions
	// may run to these names.
	Tools []string
	// CallerFormat is the caller's response_format as sent, which keeps
	// the order of its properties (ResponseFormat, generated, does not);
	// nil for none.
	CallerFormat json.RawMessage
}

// RunInput is the part of an [Input] only run_and_collect reads: the
// run parameters of run.
type RunInput struct {
	// StreamPersist keeps the run's live chunk log and snapshots (run's
	// stream_persist).
	StreamPersist bool
	// StreamPersistDir is the run log directory of that run (run's
	// stream_persist_dir); "" means the engine's default (Config.RunLogDir). Only
	// with StreamPersist.
	StreamPersistDir string
}

// Result is what a middle answers for one exchange.
type Result struct {
	// Value is the answer as encoding/json decodes JSON (string, float64,
	// bool, nil, []any, map[string]any): the parsed value, or the raw text
	// as a string when validation is skipped or there is nothing to parse;
	// nil for null. With SkipValidation it may be any value encoding/json
	// encodes: the caller returns it as it is.
	Value any
	// Usage is the token usage of the exchange's model calls, if any.
	Usage *wire.Usage
	// Replayed is set when the exchange was read back from history.
	Replayed bool

	// LNDL is what the LNDL middle reports besides; nil for the others.
	LNDL *LNDLReport
	// Run is what run_and_collect reports besides; nil for the others and
	// for a run that kept no log.
	Run *RunReport
}

// LNDLReport is the part of a [Result] only the LNDL middle gives:
// what each of its rounds did.
type LNDLReport struct {
	// Rounds are the records of the rounds run, the last one the success.
	Rounds []wire.LNDLRound
}

// RunReport is the part of a [Result] only run_and_collect gives.
type RunReport struct {
	// Log says where the run kept its log (stream_persist).
	Log *wire.RunLogLocation
}

// Middle performs one logical exchange for operate (ADR-0021 D5). operate
// calls it exactly once and never retries it. The result's Value is the
// parsed value, or the raw text when validation is skipped or there is
// nothing to parse; the protocol promises neither a particular shape nor a
// single model reply. Failures are returned as errors, not turned into
// values. Implementations must be safe for concurrent use.
type Middle interface {
	Exchange(ctx context.Context, in Input) (*Result, error)
}

// Func adapts a function to a [Middle].
type Func func(ctx context.Context, in Input) (*Result, error)

// Exchange calls f.
func (f Func) Exchange(ctx context.Context, in Input) (*Result, error) {
	return f(ctx, in)
}
