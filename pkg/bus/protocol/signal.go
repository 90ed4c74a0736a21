package protocol

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Event types of the signals an [EventSink] publishes: lionbus.<signal
// type>.
const (
	EventTypeRunStart     = EventTypePrefix + string(wire.SignalRunStart)     // lionbus.run.start
	EventTypeRunEnd       = EventTypePrefix + string(wire.SignalRunEnd)       // lionbus.run.end
	EventTypeRunFailed    = EventTypePrefix + string(wire.SignalRunFailed)    // lionbus.run.failed
	EventTypeMessageAdded = EventTypePrefix + string(wire.SignalMessageAdded) // lionbus.message.added
	EventTypeToolPre      = EventTypePrefix + string(wire.SignalToolPre)      // lionbus.tool.pre
	EventTypeToolPost     = EventTypePrefix + string(wire.SignalToolPost)     // lionbus.tool.post
	EventTypeToolError    = EventTypePrefix + string(wire.SignalToolError)    // lionbus.tool.error
	EventTypeLNDLRound    = EventTypePrefix + string(wire.SignalLNDLRound)    // lionbus.lndl.round
)

// ErrInvalidSignal is returned (wrapped) by [EventBuilder.Signal] for a signal
// that cannot be published: no or an invalid branch id, or a type that is
// not a dotted lower-case name.
var ErrInvalidSignal = errors.New("protocol: signal cannot be published")

// SignalData is the data of a signal event. Every signal carries Verb,
// BranchID, RequestID and Time; run.end adds Result, run.failed Error,
// message.added Message, the tool hooks of act Tool (tool.error with
// Error too), and lndl.round Round. Each type has a schema in package schemas
// (lionbus.run.start.json, ...).
type SignalData struct {
	// Verb is the verb of the request that caused the signal.
	Verb string `json:"verb"`
	// BranchID is the branch the request acts on.
	BranchID string `json:"branch_id"`
	// RequestID is the id of the request.
	RequestID string `json:"request_id"`
	// Time is when the signal was emitted.
	Time time.Time `json:"time"`
	// Message is the message as it was recorded (message.added).
	Message *wire.Message `json:"message,omitempty"`
	// Result is the request's result (run.end).
	Result *wire.Result `json:"result,omitempty"`
	// Error is why the request failed (run.failed), or why the tool call
	// failed (tool.error).
	Error *SignalError `json:"error,omitempty"`
	// Tool is the tool call of a tool hook (tool.pre, tool.post,
	// tool.error).
	Tool *wire.ToolSignal `json:"tool,omitempty"`
	// Round is what a round of the LNDL middle did (lndl.round).
	Round *wire.LNDLRound `json:"round,omitempty"`
}

// SignalError is the error of a run.failed or tool.error event.
type SignalError struct {
	// Code is the stable error code, as in a lionbus.error answer.
	Code wire.Code `json:"code"`
	// Message explains the failure for a human.
	Message string `json:"message"`
	// Temporary is true when the request will be retried: another
	// run.start of the same request may follow.
	Temporary bool `json:"temporary,omitempty"`
}

// EventToken returns the subject token of a signal type: its dots replaced
// by underscores ("run.start" -> "run_start").
func EventToken(t wire.SignalType) string {
	return strings.ReplaceAll(string(t), ".", "_")
}

// validSignalToken reports whether tok (a signal type with its dots made
// underscores) is a lower-case name usable as one subject token.
func validSignalToken(tok string) bool {
	if !ValidToken(tok) {
		return false
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// SignalID returns the CloudEvent id of signal s: a name-based UUID of its
// request id, its type and, for a message signal, the message id, for a
// tool hook the call id. A signal
// emitted again for the same request (a redelivery that replays a
// committed operation) has the same id, so the events stream stores it once
// within its duplicate window and an observer recognises it after. A
// signal without a request id gets a random id ("").
func SignalID(s wire.Signal) string {
	if s.RequestID == "" {
		return ""
	}
	name := s.RequestID + "/" + string(s.Type)
	if s.Message != nil {
		name += "/" + s.Message.ID
	}
	if s.Tool != nil {
		name += "/" + s.Tool.CallID
	}
	return uuid.NewSHA1(signalNamespace, []byte(name)).String()
}

// signalNamespace is the UUID namespace of signal event ids.
var signalNamespace = uuid.MustParse("9d3e7a41-5c2b-5f08-8e4d-6c696f6e7369")

// Signal builds the CloudEvent of signal s: type lionbus.<s.Type>, data a
// [SignalData], extensions branchid, requestid and the trace context
// (traceParent, or a new one when it is empty), time the signal's. It also
// returns the subject token of the type (see [EventToken]); the event goes to
// Subjects.Events(s.BranchID, token). A signal without a valid branch id or
// with a type that is not a dotted lower-case name is refused with
// ErrInvalidSignal.
func (b EventBuilder) Signal(s wire.Signal, traceParent, traceState string) (ev *event.Event, token string, err error) {
	if !ValidToken(s.BranchID) {
		return nil, "", fmt.Errorf("%w: %s signal of request %q: branch id %q is not a valid subject token", ErrInvalidSignal, s.Type, s.RequestID, wire.Truncate(s.BranchID, MaxTokenLength+8))
	}
	token = EventToken(s.Type)
	if !validSignalToken(token) {
		return nil, "", fmt.Errorf("%w: signal type %q is not a dotted lower-case name", ErrInvalidSignal, wire.Truncate(string(s.Type), MaxTokenLength+8))
	}
	data := SignalData{
		Verb:      s.Verb,
		BranchID:  s.BranchID,
		RequestID: s.RequestID,
		Time:      s.Time.UTC(),
		Message:   s.Message,
		Result:    s.Result,
		Tool:      s.Tool,
		Round:     s.Round,
	}
	if data.Time.IsZero() {
		data.Time = time.Now().UTC()
	}
	if s.Err != nil {
		msg := s.Err.Message
		if msg == "" {
			msg = s.Err.Error()
		}
		data.Error = &SignalError{Code: s.Err.Code, Message: msg, Temporary: s.Err.Temporary}
	}
	ev, err = b.newEvent(SignalID(s), EventTypePrefix+string(s.Type), data, data.Time,
		ext{ExtBranchID, s.BranchID}, ext{ExtRequestID, s.RequestID},
		ext{ExtTraceParent, traceOrNew(traceParent)}, ext{ExtTraceState, traceState})
	if err != nil {
		return nil, "", err
	}
	return ev, token, nil
}
