package bus

import (
	"errors"
	"fmt"
)

// Error codes of requests that the codec rejects. They appear as the code
// of lionbus.error events; clients match on them, so they never change
// meaning. Codes of failures inside an operation are the ops.Code values.
const (
	// CodeMalformedEvent: the message is not a decodable CloudEvent (the
	// body is not JSON, an attribute has the wrong JSON type, a header value
	// is not valid UTF-8 after percent-decoding, batch mode, ...).
	CodeMalformedEvent = "malformed_event"
	// CodeMissingAttribute: a required attribute (id, source, type,
	// specversion) is absent or empty; the message names which.
	CodeMissingAttribute = "missing_attribute"
	// CodeUnsupportedSpecVersion: specversion is not "1.0".
	CodeUnsupportedSpecVersion = "unsupported_specversion"
	// CodeUnknownType: the type is not lionbus.<verb>.request for a known
	// verb, or names another verb than the subject it was published on.
	CodeUnknownType = "unknown_type"
	// CodeInvalidData: data is not JSON or does not match the schema of the
	// type; the message gives the JSON pointer and the reason.
	CodeInvalidData = "invalid_data"
	// CodeInvalidBranchID: the branchid attribute is not a valid subject
	// token (1 to MaxTokenLength characters of [A-Za-z0-9_-]).
	CodeInvalidBranchID = "invalid_branch_id"
	// CodeMissingBranchID: a branch-scoped verb came without branchid.
	CodeMissingBranchID = "missing_branch_id"
	// CodeInvalidAttribute: an attribute other than branchid has a value
	// lionbus cannot use, such as a replyto that is not a literal subject
	// or points into the service's own streams.
	CodeInvalidAttribute = "invalid_attribute"
	// CodePayloadTooLarge: the message is larger than Config.MaxPayload;
	// the message says the limit.
	CodePayloadTooLarge = "payload_too_large"
)

// ErrBadEvent is matched (errors.Is) by every *EventError: the message is bad
// input, and retrying it cannot succeed.
var ErrBadEvent = errors.New("bus: bad event")

// EventError is why the codec rejected a message. It is permanent: the
// message should be answered with a lionbus.error event (when ReplyTo is
// known) and terminated, never retried.
type EventError struct {
	// Code is one of the Code* constants.
	Code string
	// Message explains the problem for a human.
	Message string
	// ID is the event id, when it could be read; "" otherwise.
	ID string
	// ReplyTo is where an error event about this message goes: the
	// replyto attribute, else the default reply subject of ID. It is ""
	// when neither could be read, and then the message cannot be answered.
	ReplyTo string
	// BranchID is the branchid attribute when it could be read and is valid.
	BranchID string
	// TraceParent is the request's valid traceparent, if any.
	TraceParent string
}

// Error returns "bus: <code>: <message>".
func (e *EventError) Error() string { return fmt.Sprintf("bus: %s: %s", e.Code, e.Message) }

// Is reports whether target is ErrBadEvent.
func (e *EventError) Is(target error) bool { return target == ErrBadEvent }

func eventErrorf(code, format string, args ...any) *EventError {
	return &EventError{Code: code, Message: fmt.Sprintf(format, args...)}
}
