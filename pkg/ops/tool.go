package ops

import (
	"context"
	"encoding/json"
	"fmt"

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

// roundTrip encodes v as JSON and decodes it into dst.
func roundTrip(v, dst any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}
