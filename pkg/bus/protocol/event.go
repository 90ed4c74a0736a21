package protocol

import (
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/google/uuid"

	"github.com/lionbus/lionbus/pkg/wire"
)

// EventTypeError is the type of the event that answers a failed request.
const EventTypeError = "lionbus.error"

// DefaultSource is the source attribute of events built by a zero
// EventBuilder.
const DefaultSource = "/lionbus"

// RequestType returns the event type of a request for verb,
// "lionbus.<verb>.request".
func RequestType(verb string) string { return EventTypePrefix + verb + ".request" }

// ResultType returns the event type of the result of verb,
// "lionbus.<verb>.result".
func ResultType(verb string) string { return EventTypePrefix + verb + ".result" }

// ErrorData is the data of a lionbus.error event.
type ErrorData struct {
	// Code is a stable machine-readable code: one of [Codes].
	Code wire.Code `json:"code"`
	// Message explains the failure for a human.
	Message string `json:"message"`
	// RequestID is the id of the failed request ("" if it could not be read).
	RequestID string `json:"request_id"`
}

// EventBuilder builds the events lionbus publishes. Every event gets a new
// UUID id, the current UTC time, datacontenttype application/json, the
// builder's source, and the traceparent of the request it follows from. A
// request that arrived without a valid traceparent got one when it was
// decoded (see Request.TraceParent); an EventError without one gets a new
// one here, so every answer carries a trace context.
type EventBuilder struct {
	// Source is the source attribute, e.g. "/lionbus/worker/<name>".
	// Default DefaultSource.
	Source string
}

func (b EventBuilder) source() string {
	if b.Source == "" {
		return DefaultSource
	}
	return b.Source
}

// ext is one extension attribute of an event the builder makes.
type ext struct{ name, value string }

// newEvent returns an event of typ with data encoded as JSON (a
// json.RawMessage is used as is), the time at (now when zero) and the
// given extensions ("" values are left out). It fills the event's
// context directly rather than through the SDK's setters, which would
// check and convert what is known to be valid here; [EncodeCore]
// validates every event it encodes.
func (b EventBuilder) newEvent(id, typ string, data any, at time.Time, exts ...ext) (*event.Event, error) {
	if id == "" {
		id = uuid.NewString()
	}
	src, err := url.Parse(b.source())
	if err != nil {
		return nil, fmt.Errorf("protocol: build %s event: source %q: %w", typ, b.source(), err)
	}
	if at.IsZero() {
		at = time.Now()
	}
	raw, ok := data.(json.RawMessage)
	if !ok {
		if raw, err = json.Marshal(data); err != nil {
			return nil, fmt.Errorf("protocol: encode %s data: %w", typ, err)
		}
	}
	ct := ContentTypeJSON
	ec := &event.EventContextV1{
		ID:              id,
		Source:          types.URIRef{URL: *src},
		Type:            typ,
		DataContentType: &ct,
		Time:            &types.Timestamp{Time: at.UTC()},
		Extensions:      make(map[string]any, len(exts)),
	}
	for _, x := range exts {
		if x.value != "" {
			ec.Extensions[x.name] = x.value
		}
	}
	return &event.Event{Context: ec, DataEncoded: raw}, nil
}

// answerNamespace is the UUID namespace of answer event ids.
var answerNamespace = uuid.MustParse("4f1b2c9e-2a0d-5b7e-9c61-6c696f6e6275")

// AnswerID returns the CloudEvent id of every answer to the request of id
// requestID: a name-based (SHA-1) UUID of it, so that whichever worker
// answers, on whichever delivery, the answer event has the same id, and a
// client that sees an answer twice recognises it. An empty requestID
// (a message that could not be read) gets a random id ("" is returned, and
// the builder draws one).
func AnswerID(requestID string) string {
	if requestID == "" {
		return ""
	}
	return uuid.NewSHA1(answerNamespace, []byte(requestID)).String()
}

// Request builds a request event for verb (type lionbus.<verb>.request)
// with data encoded as JSON (a json.RawMessage is used as is; nil data is
// left out). branchID, replyTo and traceParent are set as extensions when
// not empty; a new traceparent is generated when traceParent is "".
func (b EventBuilder) Request(verb, branchID, replyTo, traceParent string, data any) (*event.Event, error) {
	if traceParent == "" {
		traceParent = NewTraceParent()
	}
	if data == nil {
		data = json.RawMessage("{}")
	}
	return b.newEvent("", RequestType(verb), data, time.Time{},
		ext{ExtBranchID, branchID}, ext{ExtReplyTo, replyTo}, ext{ExtTraceParent, traceParent})
}

// Result builds the lionbus.<verb>.result event answering req; its data is
// res as JSON. The branchid is res.BranchID, else req.BranchID.
func (b EventBuilder) Result(req *Request, res *wire.Result) (*event.Event, error) {
	branch := res.BranchID
	if branch == "" {
		branch = req.BranchID
	}
	return b.newEvent(AnswerID(req.ID()), ResultType(req.Verb), res, time.Time{},
		ext{ExtRequestID, req.ID()}, ext{ExtBranchID, branch},
		ext{ExtTraceParent, traceOrNew(req.TraceParent)}, ext{ExtTraceState, req.TraceState})
}

// Error builds the lionbus.error event answering req.
func (b EventBuilder) Error(req *Request, code wire.Code, message string) (*event.Event, error) {
	return b.newEvent(AnswerID(req.ID()), EventTypeError, ErrorData{Code: code, Message: message, RequestID: req.ID()}, time.Time{},
		ext{ExtRequestID, req.ID()}, ext{ExtBranchID, req.BranchID},
		ext{ExtTraceParent, traceOrNew(req.TraceParent)}, ext{ExtTraceState, req.TraceState})
}

// Rejection builds the lionbus.error event answering a message the codec
// rejected, from what could be read of it. Publish it to ee.ReplyTo; when
// that is "" the message cannot be answered.
func (b EventBuilder) Rejection(ee *EventError) (*event.Event, error) {
	return b.newEvent(AnswerID(ee.ID), EventTypeError, ErrorData{Code: ee.Code, Message: ee.Message, RequestID: ee.ID}, time.Time{},
		ext{ExtRequestID, ee.ID}, ext{ExtBranchID, ee.BranchID}, ext{ExtTraceParent, traceOrNew(ee.TraceParent)})
}

func traceOrNew(tp string) string {
	if ValidTraceParent(tp) {
		return tp
	}
	return NewTraceParent()
}
