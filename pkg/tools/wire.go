package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Event types of the tool protocol (docs/tools.md).
const (
	// InvokeType is the type of the CloudEvent that invokes a tool.
	InvokeType = "lionbus.tool.invoke"
	// ResultType is the type of a tool's answer.
	ResultType = "lionbus.tool.result"
	// CancelType is the type of the event that tells a tool's service to
	// stop an invocation it is running.
	CancelType = "lionbus.tool.cancel"
)

// Error codes of the results the SDK answers for a tool, besides the
// tool's own codes.
const (
	// CodeInvalidArguments: the arguments do not match the tool's schema;
	// the handler did not run.
	CodeInvalidArguments = "invalid_arguments"
	// CodeBadInvocation: the invocation was not a lionbus.tool.invoke
	// event for this tool; the handler did not run.
	CodeBadInvocation = "bad_invocation"
	// CodeTimeout: the invocation's deadline passed while the handler ran.
	CodeTimeout = "timeout"
	// CodeCanceled: the caller cancelled the invocation while the handler
	// ran.
	CodeCanceled = "canceled"
	// CodeBusy: the service runs as many invocations as it may, or is
	// stopping; the handler did not run.
	CodeBusy = "busy"
)

// Invocation is the data of a lionbus.tool.invoke event: what a tool
// service receives.
type Invocation = wire.ToolInvocation

// cancelData is the data of a lionbus.tool.cancel event.
type cancelData struct {
	IdempotencyKey string `json:"idempotency_key"`
	RequestID      string `json:"request_id,omitempty"`
}

// newEvent builds a structured CloudEvent of typ with data as JSON.
func newEvent(source, typ, traceParent string, data any) (*event.Event, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("tools: encode %s data: %w", typ, err)
	}
	ev := event.New(event.CloudEventsVersionV1)
	ev.SetID(uuid.NewString())
	ev.SetSource(source)
	ev.SetType(typ)
	ev.SetTime(time.Now().UTC())
	ev.SetDataContentType(protocol.ContentTypeJSON)
	ev.DataEncoded = raw
	if protocol.ValidTraceParent(traceParent) {
		ev.SetExtension(protocol.ExtTraceParent, traceParent)
	}
	return &ev, nil
}

// encodeMsg builds a NATS message carrying a new event.
func encodeMsg(subject, source, typ, traceParent string, data any) (*nats.Msg, error) {
	ev, err := newEvent(source, typ, traceParent, data)
	if err != nil {
		return nil, err
	}
	msg, err := protocol.EncodeCore(subject, ev, protocol.Structured)
	if err != nil {
		return nil, err
	}
	if tp := traceOf(ev); tp != "" {
		msg.Header.Set(protocol.TraceParentHeader, tp)
	}
	return msg, nil
}

// traceOf returns ev's traceparent extension, "" when it has none.
func traceOf(ev *event.Event) string {
	if v, ok := ev.Extensions()[protocol.ExtTraceParent].(string); ok {
		return v
	}
	return ""
}

// decodeData decodes ev's data into dst. Unknown fields are ignored, so
// that a newer worker adding one does not break an older service.
func decodeData(ev *event.Event, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(ev.Data()))
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data holds more than one JSON value")
	}
	return nil
}

// decodeOutcome reads a lionbus.tool.result from a reply's headers and
// body. A reply that is not such an event is an error (the caller turns it
// into an invoker failure).
func decodeOutcome(codec *protocol.Codec, h nats.Header, body []byte) (wire.ToolOutcome, error) {
	var out wire.ToolOutcome
	ev, err := codec.DecodeEvent(h, body)
	if err != nil {
		return out, fmt.Errorf("tools: reply is not a CloudEvent: %w", err)
	}
	if ev.Type() != ResultType {
		return out, fmt.Errorf("tools: reply has type %q, want %s", wire.Truncate(ev.Type(), 80), ResultType)
	}
	var data struct {
		Output any             `json:"output"`
		Error  *wire.ToolError `json:"error"`
	}
	if err := json.Unmarshal(ev.Data(), &data); err != nil {
		return out, fmt.Errorf("tools: reply data: %w", err)
	}
	if data.Error != nil {
		if data.Error.Code == "" {
			data.Error.Code = wire.ToolErrorFailed
		}
		return wire.ToolOutcome{Error: data.Error}, nil
	}
	return wire.ToolOutcome{Output: data.Output}, nil
}
