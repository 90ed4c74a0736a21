package protocol

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Error codes of requests that the codec rejects. They appear as the code
// of lionbus.error events; clients match on them, so they never change
// meaning. Codes of failures inside an operation are the wire.Code values.
const (
	// CodeMalformedEvent: the message is not a decodable CloudEvent (the
	// body is not JSON, an attribute has the wrong JSON type, a header value
	// is not valid UTF-8 after percent-decoding, batch mode, ...).
	CodeMalformedEvent wire.Code = "malformed_event"
	// CodeMissingAttribute: a required attribute (id, source, type,
	// specversion) is absent or empty; the message names which.
	CodeMissingAttribute wire.Code = "missing_attribute"
	// CodeUnsupportedSpecVersion: specversion is not "1.0".
	CodeUnsupportedSpecVersion wire.Code = "unsupported_specversion"
	// CodeUnknownType: the type is not lionbus.<verb>.request for a known
	// verb, or names another verb than the subject it was published on.
	CodeUnknownType wire.Code = "unknown_type"
	// CodeInvalidData: data is not JSON or does not match the schema of the
	// type; the message gives the JSON pointer and the reason.
	CodeInvalidData wire.Code = "invalid_data"
	// CodeInvalidBranchID: the branchid attribute is not a valid subject
	// token (1 to MaxTokenLength characters of [A-Za-z0-9_-]).
	CodeInvalidBranchID wire.Code = "invalid_branch_id"
	// CodeMissingBranchID: a branch-scoped verb came without branchid.
	CodeMissingBranchID wire.Code = "missing_branch_id"
	// CodeInvalidAttribute: an attribute other than branchid has a value
	// lionbus cannot use, such as a replyto that is not a literal subject
	// or points into the service's own streams.
	CodeInvalidAttribute wire.Code = "invalid_attribute"
	// CodePayloadTooLarge: the message is larger than Config.MaxPayload;
	// the message says the limit.
	CodePayloadTooLarge wire.Code = "payload_too_large"
)

// ErrBadEvent is matched (errors.Is) by every *EventError: the message is bad
// input, and retrying it cannot succeed.
var ErrBadEvent = errors.New("protocol: bad event")

// EventError is why the codec rejected a message. It is permanent: the
// message should be answered with a lionbus.error event (when ReplyTo is
// known) and terminated, never retried.
type EventError struct {
	// Code is one of the Code* constants of this package.
	Code wire.Code
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

// Error returns "protocol: <code>: <message>".
func (e *EventError) Error() string { return fmt.Sprintf("protocol: %s: %s", e.Code, e.Message) }

// Is reports whether target is ErrBadEvent.
func (e *EventError) Is(target error) bool { return target == ErrBadEvent }

func eventErrorf(code wire.Code, format string, args ...any) *EventError {
	return &EventError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// rejectionCodes are the codes of requests the codec rejects.
var rejectionCodes = []wire.Code{
	CodeMalformedEvent, CodeMissingAttribute, CodeUnsupportedSpecVersion,
	CodeUnknownType, CodeInvalidData, CodeInvalidBranchID,
	CodeMissingBranchID, CodeInvalidAttribute, CodePayloadTooLarge,
}

// IsRejectionCode reports whether code is one of the codec's: the request
// was bad input, and sending it again unchanged cannot succeed.
func IsRejectionCode(code wire.Code) bool { return slices.Contains(rejectionCodes, code) }

// Codes returns every error code a lionbus.error event can carry: the
// codec's and the ops layer's ([wire.Codes]).
func Codes() []wire.Code {
	return append(slices.Clone(rejectionCodes), wire.Codes()...)
}

// ErrorCode classifies err for a lionbus.error answer: the code and message
// of an *wire.Error or an *EventError, the codes of the ops sentinels and of
// context errors, else internal. temporary is an *wire.Error's Temporary.
func ErrorCode(err error) (code wire.Code, message string, temporary bool) {
	var oe *wire.Error
	var ee *EventError
	switch {
	case errors.As(err, &oe):
		msg := oe.Message
		if msg == "" {
			msg = oe.Error()
		}
		return oe.Code, msg, oe.Temporary
	case errors.As(err, &ee):
		return ee.Code, ee.Message, false
	case errors.Is(err, wire.ErrBranchNotFound):
		return wire.CodeBranchNotFound, err.Error(), false
	case errors.Is(err, wire.ErrBranchExists):
		return wire.CodeBranchExists, err.Error(), false
	case errors.Is(err, context.DeadlineExceeded):
		return wire.CodeTimeout, err.Error(), false
	case errors.Is(err, context.Canceled):
		return wire.CodeCanceled, err.Error(), false
	}
	return wire.CodeInternal, err.Error(), false
}
