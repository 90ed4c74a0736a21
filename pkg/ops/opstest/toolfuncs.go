package opstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/lionbus/lionbus/pkg/ops"
)

// ToolFunc is an in-process tool: it receives the call's arguments and
// returns a JSON-encodable output. A returned *[ops.ToolError] is reported as is;
// any other error becomes an [ops.ToolError] with code [ops.ToolErrorFailed].
type ToolFunc func(ctx context.Context, args map[string]any) (any, error)

// ToolFuncs is an in-memory [ops.Invoker]: a registry of [ToolFunc]s by tool
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
// name must be a valid id ([ops.ValidID]): tool names become subject tokens.
func (t *ToolFuncs) Register(name string, fn ToolFunc) error {
	if fn == nil || !ops.ValidID(name) {
		return fmt.Errorf("ops: tool registration needs a valid name (1 to %d characters of [A-Za-z0-9_-]) and a func, got %q", ops.MaxIDLength, name)
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
// error wrapping [ops.ErrNoTool] for an unknown tool, and a context error, without
// waiting for the tool, when ctx ends or call.Deadline passes first (the
// tool's ctx is cancelled then too). A tool that panics, or whose output
// cannot be encoded as JSON, gets an [ops.ToolError].
func (t *ToolFuncs) Invoke(ctx context.Context, call ops.ToolInvocation) (ops.ToolOutcome, error) {
	if !call.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, call.Deadline)
		defer cancel()
	}
	args := map[string]any{}
	if call.Arguments != nil {
		if err := roundTrip(call.Arguments, &args); err != nil {
			return ops.ToolOutcome{}, fmt.Errorf("ops: tool %q: arguments are not a JSON object: %w", call.Function, err)
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
		return ops.ToolOutcome{}, fmt.Errorf("%w %q", ops.ErrNoTool, call.Function)
	}
	if err := ctx.Err(); err != nil {
		return ops.ToolOutcome{}, fmt.Errorf("ops: tool %q not started: %w", call.Function, err)
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
		return ops.ToolOutcome{}, fmt.Errorf("ops: tool %q: %w", call.Function, ctx.Err())
	case a := <-done:
		if a.err != nil {
			var te *ops.ToolError
			if errors.As(a.err, &te) {
				return ops.ToolOutcome{Error: &ops.ToolError{Code: te.Code, Message: te.Message}}, nil
			}
			return ops.ToolOutcome{Error: &ops.ToolError{Code: ops.ToolErrorFailed, Message: a.err.Error()}}, nil
		}
		var out any
		if err := roundTrip(a.out, &out); err != nil {
			return ops.ToolOutcome{Error: &ops.ToolError{Code: ops.ToolErrorFailed, Message: fmt.Sprintf("output is not JSON-encodable: %v", err)}}, nil
		}
		return ops.ToolOutcome{Output: out}, nil
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
