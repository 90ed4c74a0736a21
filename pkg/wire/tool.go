package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ToolInvocation is one tool call that act hands to an invoker. Its JSON
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

// Codes of the errors act itself puts in action responses. A tool's own
// failure keeps the code the tool gave ([ToolError]; ToolErrorFailed when
// it gave none).
const (
	// ActionErrorDenied: the call was not authorized; the message is the
	// reason. A denial is always a value.
	ActionErrorDenied = "denied"
	// ActionErrorNoTool: the invoker knows no tool of that name.
	ActionErrorNoTool = "no_such_tool"
	// ActionErrorNoService: the tool is known but no service answered.
	ActionErrorNoService = "no_service"
	// ActionErrorTimeout: the call's deadline passed before it answered.
	ActionErrorTimeout = "timeout"
	// ActionErrorCanceled: the call was cancelled, because the request
	// was, or because another call failed with errors not suppressed.
	ActionErrorCanceled = "canceled"
	// ActionErrorInvoker: the invoker failed to get an outcome (a
	// transport failure).
	ActionErrorInvoker = "invoker_failed"
)

// ActionRequest is one tool call act is asked to make: an item of the
// action_requests of its request data.
type ActionRequest struct {
	// ID is the caller's id of the request (a model's tool-call id, say);
	// optional, echoed in the response.
	ID string `json:"id,omitempty"`
	// Function is the tool name.
	Function string `json:"function"`
	// Arguments are the call's named arguments; nil is {}.
	Arguments map[string]any `json:"arguments,omitempty"`
}

// ActionResponse is the outcome of one action request: the items of act's
// result value, in the order of the requests. A call that answered null
// has no response.
type ActionResponse struct {
	// ID is the request's ID, when it had one.
	ID string `json:"id,omitempty"`
	// Function and Arguments are the request's.
	Function  string         `json:"function"`
	Arguments map[string]any `json:"arguments"`
	// Output is what the tool returned, as a decoded JSON value; absent
	// when Error is set.
	Output any `json:"output,omitempty"`
	// Error is why the call gave no output: a denial (ActionErrorDenied),
	// the tool's own failure, or the invoker's (the other ActionError*
	// codes).
	Error *ToolError `json:"error,omitempty"`
}

// ErrNoTool means the invoker knows no tool of the invocation's name.
var ErrNoTool = errors.New("ops: no such tool")

// ErrNoService means the tool is known but no service answered its
// invocation (no replica is running).
var ErrNoService = errors.New("ops: no service answers the tool")

// Decision is an authorizer's answer about one tool call.
type Decision struct {
	// Allow is true when the call may run.
	Allow bool
	// Reason says why a call is denied; act records it in the denial's
	// error value.
	Reason string
}

// ToolSpec describes a function tool offered to a model: its name,
// description and parameters schema, as the tool registry holds them.
type ToolSpec struct {
	// Name is the tool's name, as the model calls it.
	Name string `json:"name"`
	// Description says what the tool does; empty for none.
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the tool's arguments object; nil
	// for a tool that takes none.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}
