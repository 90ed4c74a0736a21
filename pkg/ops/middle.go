package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

// Names of the built-in middles. A request selects its middle by name
// ("middle": "communicate").
const (
	// MiddleCommunicate is the API-model exchange: communicate without its
	// lifecycle signals (the caller owns the lifecycle).
	MiddleCommunicate = "communicate"
	// MiddleRunAndCollect is the CLI-model exchange: run, its responses
	// collected (operate's default for a CLI chat model).
	MiddleRunAndCollect = "run_and_collect"
	// MiddleLNDL is the LNDL adapter of ADR-0024: a bounded series of
	// recorded inner exchanges whose LNDL answers are assembled into the
	// target (docs/lndl.md#the-operate-adapter).
	MiddleLNDL = "lndl"
)

// builtinMiddles are the names no registered middle may take.
var builtinMiddles = []string{MiddleCommunicate, MiddleLNDL, MiddleRunAndCollect}

// Sentinel errors of the middle registry ([Middles]).
var (
	// ErrMiddleExists means a registration used the name of a built-in
	// middle, or a registered one without [WithUpdate].
	ErrMiddleExists = errors.New("ops: middle already exists")
	// ErrInvalidMiddle means a registration had no middle or a name that is
	// not a valid id ([ValidID]).
	ErrInvalidMiddle = errors.New("ops: invalid middle registration")
	// ErrUnknownMiddle means no middle has the name.
	ErrUnknownMiddle = errors.New("ops: unknown middle")
)

// MiddleInput is what operate hands its middle: one logical exchange on a
// branch (ADR-0021 D5, ADR-0022 D3). The middle owns the exchange: it
// clears messages when asked, calls the model (once, as a stream, or in a
// bounded series of inner exchanges) and records what it exchanged; the
// caller records nothing around it.
//
// The fields are what every middle reads; what only one built-in middle
// reads is in its own part ([LNDLInput], [RunInput]), nil when the request
// gives none of it.
type MiddleInput struct {
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

	// Instruction, Guidance, Context and PlainContent make the instruction,
	// as in communicate; the first three are JSON values as encoding/json
	// decodes them (string, float64, bool, nil, []any, map[string]any).
	Instruction  any
	Guidance     any
	Context      any
	PlainContent string
	// Sender and Recipient address the instruction.
	Sender, Recipient string
	// ResponseFormat is the JSON Schema the answer is parsed into (for
	// operate, the generated request schema: what the model is asked for,
	// without action_responses); nil for none.
	ResponseFormat json.RawMessage
	// ToolSchemas describe the tools the model may request; they are
	// rendered into the instruction.
	ToolSchemas []any
	// ChatModel and ParseModel override the branch's models; nil keeps
	// them. The parse model defaults to the chat model.
	ChatModel, ParseModel *history.ModelRef
	// NumParseRetries bounds the reformat rounds; nil is the default.
	NumParseRetries *int
	// ClearMessages asks the middle to clear the branch's messages before
	// the exchange.
	ClearMessages bool
	// SkipValidation asks for the raw answer text, unparsed.
	SkipValidation bool
	// Stream asks for the model's answer as chunks too (see
	// communicate's "stream"); StreamID is the request id they are
	// published under (the caller's; "" means RequestID).
	Stream   bool
	StreamID string

	// LNDL is what the LNDL middle reads besides; nil means its defaults.
	LNDL *LNDLInput
	// Run is what run_and_collect reads besides: run's parameters; nil
	// means none (the run keeps no log).
	Run *RunInput
}

// LNDLInput is the part of a [MiddleInput] only the LNDL middle reads.
type LNDLInput struct {
	// RoundBudget bounds the model exchanges; 0 is DefaultRoundBudget.
	RoundBudget int
	// Tools, when not nil, narrows the branch's tools the middle's actions
	// may run to these names.
	Tools []string
	// CallerFormat is the caller's response_format as sent, which keeps
	// the order of its properties (ResponseFormat, generated, does not);
	// nil for none.
	CallerFormat json.RawMessage
}

// RunInput is the part of a [MiddleInput] only run_and_collect reads: the
// run parameters of run.
type RunInput struct {
	// StreamPersist keeps the run's live chunk log and snapshots (run's
	// stream_persist).
	StreamPersist bool
	// StreamPersistDir is the run log directory of that run (run's
	// stream_persist_dir); "" means the engine's Config.RunLogDir. Only
	// with StreamPersist.
	StreamPersistDir string
}

// MiddleResult is what a middle answers for one exchange.
type MiddleResult struct {
	// Value is the answer as encoding/json decodes JSON (string, float64,
	// bool, nil, []any, map[string]any): the parsed value, or the raw text
	// as a string when validation is skipped or there is nothing to parse;
	// nil for null. With SkipValidation it may be any value encoding/json
	// encodes: the caller returns it as it is.
	Value any
	// Usage is the token usage of the exchange's model calls, if any.
	Usage *Usage
	// Replayed is set when the exchange was read back from history.
	Replayed bool

	// LNDL is what the LNDL middle reports besides; nil for the others.
	LNDL *LNDLReport
	// Run is what run_and_collect reports besides; nil for the others and
	// for a run that kept no log.
	Run *RunReport
}

// LNDLReport is the part of a [MiddleResult] only the LNDL middle gives:
// what each of its rounds did.
type LNDLReport struct {
	// Rounds are the records of the rounds run, the last one the success.
	Rounds []LNDLRound
}

// RunReport is the part of a [MiddleResult] only run_and_collect gives.
type RunReport struct {
	// Log says where the run kept its log (stream_persist).
	Log *RunLogLocation
}

// Middle performs one logical exchange for operate (ADR-0021 D5). operate
// calls it exactly once and never retries it. The result's Value is the
// parsed value, or the raw text when validation is skipped or there is
// nothing to parse; the protocol promises neither a particular shape nor a
// single model reply. Failures are returned as errors, not turned into
// values. Implementations must be safe for concurrent use.
type Middle interface {
	Exchange(ctx context.Context, in MiddleInput) (*MiddleResult, error)
}

// MiddleFunc adapts a function to a [Middle].
type MiddleFunc func(ctx context.Context, in MiddleInput) (*MiddleResult, error)

// Exchange calls f.
func (f MiddleFunc) Exchange(ctx context.Context, in MiddleInput) (*MiddleResult, error) {
	return f(ctx, in)
}

// Middles is a registry of custom middles by name, shared by the engines
// configured with it. The built-in names (communicate, run_and_collect,
// lndl) belong to each engine's own adapters and cannot be registered. It
// is safe for concurrent use; the zero value is an empty registry.
type Middles struct {
	mu sync.RWMutex
	m  map[string]Middle
}

// NewMiddles returns an empty registry.
func NewMiddles() *Middles { return &Middles{m: map[string]Middle{}} }

// Register adds m under name, a valid id ([ValidID]); otherwise, or for a
// nil m, it returns an error wrapping ErrInvalidMiddle. A built-in name, or
// a registered one without [WithUpdate], gives ErrMiddleExists.
func (r *Middles) Register(name string, m Middle, opts ...RegisterOption) error {
	var ro registerOptions
	for _, opt := range opts {
		opt(&ro)
	}
	if m == nil || !ValidID(name) {
		return fmt.Errorf("%w: a middle and a name of 1 to %d characters of [A-Za-z0-9_-] are needed, got %q", ErrInvalidMiddle, MaxIDLength, name)
	}
	for _, b := range builtinMiddles {
		if b == name {
			return fmt.Errorf("%w: %q is a built-in middle", ErrMiddleExists, name)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.m[name]; ok && !ro.update {
		return fmt.Errorf("%w: %q (register it WithUpdate to replace it)", ErrMiddleExists, name)
	}
	if r.m == nil {
		r.m = map[string]Middle{}
	}
	r.m[name] = m
	return nil
}

// Lookup returns the middle registered as name, or an error wrapping
// ErrUnknownMiddle.
func (r *Middles) Lookup(name string) (Middle, error) {
	r.mu.RLock()
	m, ok := r.m[name]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownMiddle, name)
	}
	return m, nil
}

// Names returns the registered names, sorted (the built-in ones are not
// listed).
func (r *Middles) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.m))
}

// Middles returns the engine's registry of custom middles (Config.Middles,
// or the empty one the engine made).
func (e *Engine) Middles() *Middles { return e.middles }

// Middle returns the middle a request names: the engine's own adapter for
// a built-in name, else the registered one. An unknown name is a
// CodeInvalidRequest error wrapping ErrUnknownMiddle.
func (e *Engine) Middle(name string) (Middle, error) {
	switch name {
	case MiddleCommunicate:
		return communicateMiddle{e}, nil
	case MiddleLNDL:
		return lndlMiddle{e: e}, nil
	case MiddleRunAndCollect:
		return runCollectMiddle{e}, nil
	}
	m, err := e.middles.Lookup(name)
	if err != nil {
		return nil, &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf(
			"unknown middle %q (built-in: %s; registered: %v)", name, strings.Join(builtinMiddles, ", "), e.middles.Names()), Err: err}
	}
	return m, nil
}

// exchange is the request and the chat data with which a built-in middle
// named name makes in's exchange: keyed by in.RequestID, with in.Verb or
// else name as the verb.
func (in MiddleInput) exchange(name string) (Request, *chatData, error) {
	if in.RequestID == "" {
		return Request{}, nil, Errorf(CodeInvalidRequest, "middle %s: a request id is required", name)
	}
	verb := in.Verb
	if verb == "" {
		verb = name
	}
	d := &chatData{tools: in.ToolSchemas}
	d.Instruction, d.Guidance, d.Context, d.PlainContent = in.Instruction, in.Guidance, in.Context, in.PlainContent
	d.Sender, d.Recipient, d.ResponseFormat = in.Sender, in.Recipient, in.ResponseFormat
	d.ChatModel, d.ParseModel, d.NumParseRetries = in.ChatModel, in.ParseModel, in.NumParseRetries
	d.ClearMessages, d.SkipValidation = in.ClearMessages, in.SkipValidation
	return Request{ID: in.RequestID, Verb: verb, BranchID: in.BranchID, Attempt: in.Attempt}, d, nil
}

// communicateMiddle is communicate as a middle: the same exchange, parse and
// atomic record, keyed by in.RequestID, without run lifecycle signals (the
// caller's lifecycle covers it, ADR-0021 D4).
type communicateMiddle struct{ e *Engine }

// Exchange runs communicate's exchange for in.
func (m communicateMiddle) Exchange(ctx context.Context, in MiddleInput) (*MiddleResult, error) {
	req, d, err := in.exchange(MiddleCommunicate)
	if err != nil {
		return nil, err
	}
	d.Stream = in.Stream
	x, err := m.e.prepareData(ctx, req, d)
	if err != nil {
		return nil, asError(ctx, err)
	}
	x.streamID = in.StreamID
	var res *Result
	if seq, ok := x.branch.Commits.Seq(req.ID); ok {
		res, err = m.e.replayCommitted(ctx, req, seq, replayMessages)
	} else {
		res, err = x.communicate(ctx, req)
	}
	if err != nil {
		return nil, asError(ctx, err)
	}
	return middleResult(MiddleCommunicate, res)
}

// middleResult is the middle result of an exchange recorded as res: its
// value decoded, its usage and whether it was replayed.
func middleResult(name string, res *Result) (*MiddleResult, error) {
	out := &MiddleResult{Usage: res.Usage, Replayed: res.Replayed}
	if len(res.Value) > 0 {
		if err := json.Unmarshal(res.Value, &out.Value); err != nil {
			return nil, Errorf(CodeInternal, "middle %s: the recorded value is not JSON: %v", name, err)
		}
	}
	return out, nil
}
