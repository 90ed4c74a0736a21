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

	"github.com/lionbus/lionbus/pkg/ops/middle"
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

// The middle seam is package middle's; these names are its.

// MiddleInput is what operate hands its middle: one logical exchange on a
// branch ([middle.Input]).
type MiddleInput = middle.Input

// RunInput is the part of a [MiddleInput] only run_and_collect reads
// ([middle.RunInput]).
type RunInput = middle.RunInput

// MiddleResult is what a middle answers for one exchange ([middle.Result]).
type MiddleResult = middle.Result

// Middle performs one logical exchange for operate ([middle.Middle]).
type Middle = middle.Middle

// MiddleFunc adapts a function to a [Middle] ([middle.Func]).
type MiddleFunc = middle.Func

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

// middleExchange is the request and the chat data with which a built-in
// middle named name makes in's exchange: keyed by in.RequestID, with
// in.Verb or else name as the verb.
func middleExchange(in MiddleInput, name string) (Request, *chatData, error) {
	if in.RequestID == "" {
		return Request{}, nil, Errorf(CodeInvalidRequest, "middle %s: a request id is required", name)
	}
	verb := in.Verb
	if verb == "" {
		verb = name
	}
	d := &chatData{CommunicateRequest: in.CommunicateRequest, tools: in.ToolSchemas}
	return Request{ID: in.RequestID, Verb: verb, BranchID: in.BranchID, Attempt: in.Attempt}, d, nil
}

// communicateMiddle is communicate as a middle: the same exchange, parse and
// atomic record, keyed by in.RequestID, without run lifecycle signals (the
// caller's lifecycle covers it, ADR-0021 D4).
type communicateMiddle struct{ e *Engine }

// Exchange runs communicate's exchange for in.
func (m communicateMiddle) Exchange(ctx context.Context, in MiddleInput) (*MiddleResult, error) {
	req, d, err := middleExchange(in, MiddleCommunicate)
	if err != nil {
		return nil, err
	}
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
