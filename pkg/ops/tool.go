package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/lionbus/lionbus/pkg/wire"
)

// ToolInvocation is one tool call that act hands to an [Invoker]
// ([wire.ToolInvocation]).
type ToolInvocation = wire.ToolInvocation

// ToolCallKey returns the idempotency key of the index-th tool call of
// request requestID ([wire.ToolCallKey]).
func ToolCallKey(requestID string, index int) string { return wire.ToolCallKey(requestID, index) }

// ToolError is a failure a tool reported about its own work
// ([wire.ToolError]).
type ToolError = wire.ToolError

// ToolErrorFailed is the code of a [ToolError] a tool reported without a
// code of its own.
const ToolErrorFailed = wire.ToolErrorFailed

// ToolOutcome is a tool's answer: its output, or the error it reported
// ([wire.ToolOutcome]).
type ToolOutcome = wire.ToolOutcome

// ErrNoTool means the invoker knows no tool of the invocation's name.
var ErrNoTool = wire.ErrNoTool

// ErrNoService means the tool is known but no service answered its
// invocation (no replica is running).
var ErrNoService = wire.ErrNoService

// ToolDescriber is an optional interface of an [Invoker]: it describes
// tools by name (description and parameters schema) so that operate offers
// them to the model in full, in the instruction's tool schemas and as the
// provider's native tools. An unknown name is described by its name alone.
type ToolDescriber interface {
	DescribeTools(ctx context.Context, names []string) []ToolSpec
}

// Invoker runs tool calls for act. Implementations must be safe for
// concurrent use: the concurrent strategy of act invokes in parallel.
//
// Invoke returns the tool's outcome, including a [ToolError] the tool
// reported. Its error is for failures to get an outcome at all: an error
// wrapping ErrNoTool for an unknown tool, a context error when ctx ends or
// call.Deadline passes first, or a transport failure. act turns those into
// error-valued action responses too (ADR-0022 D4) when errors are
// suppressed.
type Invoker interface {
	Invoke(ctx context.Context, call ToolInvocation) (ToolOutcome, error)
}

// InvokerFunc adapts a function to an [Invoker].
type InvokerFunc func(ctx context.Context, call ToolInvocation) (ToolOutcome, error)

// Invoke calls f.
func (f InvokerFunc) Invoke(ctx context.Context, call ToolInvocation) (ToolOutcome, error) {
	return f(ctx, call)
}

// ToolFunc is an in-process tool: it receives the call's arguments and
// returns a JSON-encodable output. A returned *ToolError is reported as is;
// any other error becomes a ToolError with code ToolErrorFailed.
type ToolFunc func(ctx context.Context, args map[string]any) (any, error)

// ToolFuncs is an in-memory [Invoker]: a registry of [ToolFunc]s by tool
// name, for tests and demos. Arguments and output cross a JSON encoding, so
// a tool sees, and its caller gets, what a remote tool would. It counts the
// calls of each idempotency key. It is safe for concurrent use; the zero
// value has no tools.
type ToolFuncs struct {
	mu    sync.Mutex
	funcs map[string]ToolFunc
	calls map[string]int
}

// NewToolFuncs returns an invoker serving the given tools. It panics if a
// name is not a valid id or a func is nil, as that is a wiring mistake;
// use [ToolFuncs.Register] to get an error instead.
func NewToolFuncs(tools map[string]ToolFunc) *ToolFuncs {
	t := &ToolFuncs{}
	for name, fn := range tools {
		if err := t.Register(name, fn); err != nil {
			panic(err)
		}
	}
	return t
}

// Register serves fn as the tool name, replacing any tool of that name. The
// name must be a valid id ([ValidID]): tool names become subject tokens.
func (t *ToolFuncs) Register(name string, fn ToolFunc) error {
	if fn == nil || !ValidID(name) {
		return fmt.Errorf("ops: tool registration needs a valid name (1 to %d characters of [A-Za-z0-9_-]) and a func, got %q", MaxIDLength, name)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.funcs == nil {
		t.funcs = map[string]ToolFunc{}
	}
	t.funcs[name] = fn
	return nil
}

// Names returns the registered tool names, sorted.
func (t *ToolFuncs) Names() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Sorted(maps.Keys(t.funcs))
}

// Calls returns how many times a tool was started with idempotency key
// key. A call refused before it started (unknown tool, context already
// ended) is not counted.
func (t *ToolFuncs) Calls(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls[key]
}

// Invoke runs the tool call.Function with call.Arguments. It returns an
// error wrapping ErrNoTool for an unknown tool, and a context error, without
// waiting for the tool, when ctx ends or call.Deadline passes first (the
// tool's ctx is cancelled then too). A tool that panics, or whose output
// cannot be encoded as JSON, gets a ToolError.
func (t *ToolFuncs) Invoke(ctx context.Context, call ToolInvocation) (ToolOutcome, error) {
	if !call.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, call.Deadline)
		defer cancel()
	}
	args := map[string]any{}
	if call.Arguments != nil {
		if err := roundTrip(call.Arguments, &args); err != nil {
			return ToolOutcome{}, fmt.Errorf("ops: tool %q: arguments are not a JSON object: %w", call.Function, err)
		}
	}
	t.mu.Lock()
	fn, ok := t.funcs[call.Function]
	if ok && ctx.Err() == nil {
		if t.calls == nil {
			t.calls = map[string]int{}
		}
		t.calls[call.IdempotencyKey]++
	}
	t.mu.Unlock()
	if !ok {
		return ToolOutcome{}, fmt.Errorf("%w %q", ErrNoTool, call.Function)
	}
	if err := ctx.Err(); err != nil {
		return ToolOutcome{}, fmt.Errorf("ops: tool %q not started: %w", call.Function, err)
	}

	type answer struct {
		out any
		err error
	}
	done := make(chan answer, 1) // buffered: a tool finishing late never blocks
	go func() {
		defer func() {
			if p := recover(); p != nil { // a crashing tool fails its call, not the worker
				done <- answer{err: fmt.Errorf("tool panicked: %v", p)}
			}
		}()
		out, err := fn(ctx, args)
		done <- answer{out, err}
	}()
	select {
	case <-ctx.Done():
		return ToolOutcome{}, fmt.Errorf("ops: tool %q: %w", call.Function, ctx.Err())
	case a := <-done:
		if a.err != nil {
			var te *ToolError
			if errors.As(a.err, &te) {
				return ToolOutcome{Error: &ToolError{Code: te.Code, Message: te.Message}}, nil
			}
			return ToolOutcome{Error: &ToolError{Code: ToolErrorFailed, Message: a.err.Error()}}, nil
		}
		var out any
		if err := roundTrip(a.out, &out); err != nil {
			return ToolOutcome{Error: &ToolError{Code: ToolErrorFailed, Message: fmt.Sprintf("output is not JSON-encodable: %v", err)}}, nil
		}
		return ToolOutcome{Output: out}, nil
	}
}

// roundTrip encodes v as JSON and decodes it into dst.
func roundTrip(v, dst any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}

// Decision is an [Authorizer]'s answer about one tool call
// ([wire.Decision]).
type Decision = wire.Decision

// Authorizer decides whether a tool call may run (the governance gate of
// ADR-0022 D4), before any hook fires or the invoker is called. A denial is
// not an error: act records it as an error-valued action response. A
// returned error means the decision could not be made (an approver was
// unreachable); act then fails closed and treats the call as denied.
// Implementations must be safe for concurrent use.
type Authorizer interface {
	Authorize(ctx context.Context, call ToolInvocation) (Decision, error)
}

// AuthorizerFunc adapts a function to an [Authorizer].
type AuthorizerFunc func(ctx context.Context, call ToolInvocation) (Decision, error)

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, call ToolInvocation) (Decision, error) {
	return f(ctx, call)
}

// AllowAll allows every call: the policy of a branch with no gate.
var AllowAll Authorizer = AuthorizerFunc(func(context.Context, ToolInvocation) (Decision, error) {
	return Decision{Allow: true}, nil
})

// AllowTools returns an [Authorizer] that allows calls of the named tools
// and denies every other call, saying which tool was not allowed. With no
// names it denies everything.
func AllowTools(names ...string) Authorizer {
	allowed := make(map[string]bool, len(names))
	for _, n := range names {
		allowed[n] = true
	}
	return AuthorizerFunc(func(_ context.Context, call ToolInvocation) (Decision, error) {
		if allowed[call.Function] {
			return Decision{Allow: true}, nil
		}
		return Decision{Reason: fmt.Sprintf("tool %q is not allowed on this branch", call.Function)}, nil
	})
}
