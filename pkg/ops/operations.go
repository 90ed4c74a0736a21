package ops

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// OpVerbPrefix starts the verb of a named operation: the request verb
// "op.NAME" runs the operation registered as NAME.
const OpVerbPrefix = "op."

// Sentinel errors of the named-operation registry ([Operations]).
var (
	// ErrOperationExists means a registration used a name that is already
	// registered and did not ask to replace it (see [WithUpdate]).
	ErrOperationExists = errors.New("ops: operation already registered")
	// ErrReservedOperation means a registration used the name of a built-in
	// verb. Built-in verbs always win, so such a registration is refused,
	// even with [WithUpdate].
	ErrReservedOperation = errors.New("ops: operation name is a built-in verb")
	// ErrInvalidOperation means a registration had no operation or a name
	// that is not a valid id (see [ValidID]).
	ErrInvalidOperation = errors.New("ops: invalid operation registration")
	// ErrUnknownOperation means no operation is registered under the name.
	// [Engine.Do] answers it with CodeUnknownVerb.
	ErrUnknownOperation = errors.New("ops: unknown operation")
)

// Doer runs a request. [Engine] is the Doer a named operation receives, so
// that it can compose other verbs; it sees nothing else of the engine.
type Doer interface {
	Do(ctx context.Context, req Request) (*Result, error)
}

// Operation is a named operation (ADR-0021 D2), served as the verb
// "op.NAME" for the name it is registered under.
//
// Run receives the engine (as a [Doer]) and the request; req.Verb is
// "op.NAME" and req.BranchID is optional: the operation decides whether it
// needs a branch. The request data is the operation's arguments as a JSON
// object. A returned *Error keeps its code; any other error is answered as
// CodeInternal, context errors as CodeTimeout or CodeCanceled (see
// [Engine.Do]). A nil *Result with a nil error is answered with the value
// null.
//
// Sub-requests the operation sends through the Doer need request ids of
// their own that are stable across redeliveries of req, for example req.ID
// followed by a fixed suffix, so that a redelivered operation is answered
// from history where its sub-requests already committed.
type Operation interface {
	Run(ctx context.Context, eng Doer, req Request) (*Result, error)
}

// OperationFunc adapts a function to an [Operation].
type OperationFunc func(ctx context.Context, eng Doer, req Request) (*Result, error)

// Run calls f.
func (f OperationFunc) Run(ctx context.Context, eng Doer, req Request) (*Result, error) {
	return f(ctx, eng, req)
}

// builtinVerbs are the names of the public verbs of the operations layer
// (ADR-0021 D1; docs/protocol.md#reserved-verbs), served or still to come.
// No named operation may take one of them, compared without regard to case.
var builtinVerbs = []string{
	"act", "chat", "chat_and_record", "communicate", "interpret", "operate",
	"parse", "react", "run", "run_and_collect", "select",
}

// isBuiltinVerb reports whether name is a built-in verb name.
func isBuiltinVerb(name string) bool {
	for _, v := range builtinVerbs {
		if strings.EqualFold(v, name) {
			return true
		}
	}
	return false
}

// RegisterOption changes how [Operations.Register] treats a registration.
type RegisterOption func(*registerOptions)

type registerOptions struct {
	update bool
}

// WithUpdate lets a registration replace an operation already registered
// under its name. It never allows a built-in verb's name.
func WithUpdate() RegisterOption {
	return func(o *registerOptions) { o.update = true }
}

// Operations is the registry of named operations (ADR-0021 D2). One
// registry is shared by every branch an engine serves: an operation
// registered after the engine was built is visible to the next request. It
// is safe for concurrent use; the zero value is an empty registry.
type Operations struct {
	mu sync.RWMutex
	m  map[string]Operation
}

// NewOperations returns an empty registry.
func NewOperations() *Operations {
	return &Operations{m: map[string]Operation{}}
}

// Register adds op under name. The name must be a valid id ([ValidID]), so
// that "op.NAME" is a valid subject; a bad name or a nil op gives an error
// wrapping ErrInvalidOperation. A built-in verb's name gives
// ErrReservedOperation. A name already registered gives ErrOperationExists
// unless [WithUpdate] is passed, in which case op replaces the entry.
func (o *Operations) Register(name string, op Operation, opts ...RegisterOption) error {
	var ro registerOptions
	for _, opt := range opts {
		opt(&ro)
	}
	switch {
	case op == nil:
		return fmt.Errorf("%w: operation %q is nil", ErrInvalidOperation, name)
	case !ValidID(name):
		return fmt.Errorf("%w: name %q must be 1 to %d characters of [A-Za-z0-9_-]", ErrInvalidOperation, name, MaxIDLength)
	case isBuiltinVerb(name):
		return fmt.Errorf("%w: %q", ErrReservedOperation, name)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.m[name]; ok && !ro.update {
		return fmt.Errorf("%w: %q (register it WithUpdate to replace it)", ErrOperationExists, name)
	}
	if o.m == nil {
		o.m = map[string]Operation{}
	}
	o.m[name] = op
	return nil
}

// Lookup returns the operation registered as name, or an error wrapping
// ErrUnknownOperation.
func (o *Operations) Lookup(name string) (Operation, error) {
	o.mu.RLock()
	op, ok := o.m[name]
	o.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownOperation, name)
	}
	return op, nil
}

// Names returns the registered names, sorted.
func (o *Operations) Names() []string {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return slices.Sorted(maps.Keys(o.m))
}

// Operations returns the engine's named-operation registry
// (Config.Operations, or the empty one the engine made).
func (e *Engine) Operations() *Operations { return e.operations }

// verbFor returns the function serving verb: a built-in verb, or the
// registered operation of "op.NAME". An unknown verb or name is a
// CodeUnknownVerb error.
func (e *Engine) verbFor(verb string) (verbFunc, error) {
	if fn, ok := e.verbs[verb]; ok {
		return fn, nil
	}
	name, isOp := strings.CutPrefix(verb, OpVerbPrefix)
	if !isOp {
		return nil, Errorf(CodeUnknownVerb, "unknown verb %q (served: %v)", verb, e.Verbs())
	}
	op, err := e.operations.Lookup(name)
	if err != nil {
		msg := fmt.Sprintf("unknown operation %q (registered: %v)", name, e.operations.Names())
		if isBuiltinVerb(name) {
			msg = fmt.Sprintf("%q is a built-in verb, not a named operation: send verb %q", name, name)
		}
		return nil, &Error{Code: CodeUnknownVerb, Message: msg, Err: err}
	}
	return func(e *Engine, ctx context.Context, req Request) (*Result, error) {
		res, err := op.Run(ctx, e, req)
		if err == nil && res == nil {
			res = &Result{}
		}
		return res, err
	}, nil
}
