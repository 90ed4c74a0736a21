package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ToolInvocation is one tool call that act hands to an [Invoker]. Its JSON
// form is the data of a lionbus.tool.invoke event.
type ToolInvocation struct {
	// Function is the registered tool name.
	Function string `json:"function"`
	// Arguments are the call's named arguments (a JSON object); nil is
	// sent as {}.
	Arguments map[string]any `json:"arguments"`
	// IdempotencyKey identifies the call across redeliveries of its
	// request (see [ToolCallKey]); a tool with side effects uses it to
	// perform them once.
	IdempotencyKey string `json:"idempotency_key"`
	// RequestID is the id of the request that made the call.
	RequestID string `json:"request_id"`
	// BranchID is the branch the call is made for.
	BranchID string `json:"branch_id,omitempty"`
	// Deadline is when the caller stops waiting for the answer; zero means
	// the context's deadline alone applies.
	Deadline time.Time `json:"deadline,omitzero"`
}

// MarshalJSON writes nil Arguments as {}, since a tool's arguments are
// always an object on the wire.
func (c ToolInvocation) MarshalJSON() ([]byte, error) {
	type plain ToolInvocation
	if c.Arguments == nil {
		c.Arguments = map[string]any{}
	}
	return json.Marshal(plain(c))
}

// ToolCallKey returns the idempotency key of the index-th tool call (from 0,
// in the order the request makes its calls) of request requestID:
// "<requestID>/tool/<index>". Every delivery of a request computes the same
// keys for the same calls.
func ToolCallKey(requestID string, index int) string {
	return requestID + "/tool/" + strconv.Itoa(index)
}

// ToolError is a failure a tool reported about its own work (bad
// arguments, an exception in its code). It is a value of the outcome, not
// an invoker failure: act records it as the call's action response.
type ToolError struct {
	// Code is a short machine-readable reason chosen by the tool;
	// ToolErrorFailed when the tool gave none.
	Code string `json:"code"`
	// Message says what went wrong.
	Message string `json:"message"`
}

// ToolErrorFailed is the code of a [ToolError] a tool reported without a
// code of its own.
const ToolErrorFailed = "tool_failed"

// Error returns the code and message.
func (e *ToolError) Error() string { return fmt.Sprintf("tool error %s: %s", e.Code, e.Message) }

// ToolOutcome is a tool's answer: its output, or the error it reported.
// Its JSON form, {"output": ...} or {"error": {"code", "message"}}, is the
// data of a lionbus.tool.result event.
type ToolOutcome struct {
	// Output is the tool's result as a decoded JSON value (nil for null).
	Output any `json:"output,omitempty"`
	// Error is set when the tool reported a failure; Output is then nil.
	Error *ToolError `json:"error,omitempty"`
}

// ErrNoTool means the invoker knows no tool of the invocation's name.
var ErrNoTool = errors.New("ops: no such tool")

// ErrNoService means the tool is known but no service answered its
// invocation (no replica is running).
var ErrNoService = errors.New("ops: no service answers the tool")

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

// Decision is an [Authorizer]'s answer about one tool call.
type Decision struct {
	// Allow is true when the call may run.
	Allow bool
	// Reason says why a call is denied; act records it in the denial's
	// error value.
	Reason string
}

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

// roundTrip encodes v as JSON and decodes it into dst.
func roundTrip(v, dst any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}
