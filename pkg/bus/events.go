package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/ops"
)

// Event types of the signals an [EventSink] publishes: lionbus.<signal
// type>.
const (
	EventTypeRunStart     = EventTypePrefix + string(ops.SignalRunStart)     // lionbus.run.start
	EventTypeRunEnd       = EventTypePrefix + string(ops.SignalRunEnd)       // lionbus.run.end
	EventTypeRunFailed    = EventTypePrefix + string(ops.SignalRunFailed)    // lionbus.run.failed
	EventTypeMessageAdded = EventTypePrefix + string(ops.SignalMessageAdded) // lionbus.message.added
)

// DefaultEventTimeout bounds publishing one signal event (see
// [EventSink]).
const DefaultEventTimeout = 5 * time.Second

// ErrInvalidSignal is returned (wrapped) by [EventSink.Emit] for a signal
// that cannot be published: no or an invalid branch id, or a type that is
// not a dotted lower-case name.
var ErrInvalidSignal = errors.New("bus: signal cannot be published")

// SignalData is the data of a signal event. Every signal carries Verb,
// BranchID, RequestID and Time; run.end adds Result, run.failed Error and
// message.added Message. Each type has a schema in package schemas
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
	Message *ops.Message `json:"message,omitempty"`
	// Result is the request's result (run.end).
	Result *ops.Result `json:"result,omitempty"`
	// Error is why the request failed (run.failed).
	Error *SignalError `json:"error,omitempty"`
}

// SignalError is the error of a run.failed event.
type SignalError struct {
	// Code is the stable error code, as in a lionbus.error answer.
	Code string `json:"code"`
	// Message explains the failure for a human.
	Message string `json:"message"`
	// Temporary is true when the request will be retried: another
	// run.start of the same request may follow.
	Temporary bool `json:"temporary,omitempty"`
}

// EventSink publishes the lifecycle and message-added signals of the ops
// engine as CloudEvents and implements [ops.Signals]; pass it as
// ops.Config.Signals.
//
// A signal of type T (e.g. "run.start") about branch B becomes an event of
// type lionbus.T on the subject Subjects.Events(B, EventToken(T)), e.g.
// lion.events.B.run_start: the dots of the type become underscores so that
// the type stays one subject token, and observers can subscribe to
// lion.events.B.> or lion.events.*.run_failed. The events stream
// (<PREFIX>_EVENTS) keeps them for Config.EventsMaxAge. The event carries the
// extensions branchid, requestid and traceparent (the request's, when the
// context carries one, see [ContextWithTraceParent]; else a new one), and
// its data is a [SignalData].
//
// Emit publishes synchronously and waits for the stream's acknowledgement,
// so the events of one request are stored in the order they were emitted.
// Each publish is bounded by DefaultEventTimeout and is not cut short by
// the request's own cancellation (a run.failed of a cancelled request is
// still published). Errors are returned to the engine, which logs them;
// they never change an operation's outcome.
type EventSink struct {
	js      jetstream.JetStream
	subj    Subjects
	builder EventBuilder
	log     zerolog.Logger
	timeout time.Duration
}

var _ ops.Signals = (*EventSink)(nil)

// NewEventSink returns a sink publishing through js to the events stream of
// res (see [Provision]), with events built by b (its Source is the events'
// source). log receives debug records of what was published.
func NewEventSink(js jetstream.JetStream, res *Resources, b EventBuilder, log zerolog.Logger) (*EventSink, error) {
	if js == nil || res == nil || res.Events == nil {
		return nil, errors.New("bus: NewEventSink needs a JetStream handle and provisioned Resources")
	}
	return &EventSink{js: js, subj: res.Subjects, builder: b, log: log, timeout: DefaultEventTimeout}, nil
}

// EventToken returns the subject token of a signal type: its dots replaced
// by underscores ("run.start" -> "run_start").
func EventToken(t ops.SignalType) string {
	return strings.ReplaceAll(string(t), ".", "_")
}

// Emit publishes s; see [EventSink].
func (k *EventSink) Emit(ctx context.Context, s ops.Signal) error {
	if !ValidToken(s.BranchID) {
		return fmt.Errorf("%w: %s signal of request %q: branch id %q is not a valid subject token", ErrInvalidSignal, s.Type, s.RequestID, truncate(s.BranchID, MaxTokenLength+8))
	}
	token := EventToken(s.Type)
	if !validSignalToken(token) {
		return fmt.Errorf("%w: signal type %q is not a dotted lower-case name", ErrInvalidSignal, truncate(string(s.Type), MaxTokenLength+8))
	}
	data := SignalData{
		Verb:      s.Verb,
		BranchID:  s.BranchID,
		RequestID: s.RequestID,
		Time:      s.Time.UTC(),
		Message:   s.Message,
		Result:    s.Result,
	}
	if data.Time.IsZero() {
		data.Time = time.Now().UTC()
	}
	if s.Err != nil {
		msg := s.Err.Message
		if msg == "" {
			msg = s.Err.Error()
		}
		data.Error = &SignalError{Code: string(s.Err.Code), Message: msg, Temporary: s.Err.Temporary}
	}
	tp, ts := TraceParentFromContext(ctx)
	ev, err := k.builder.newEvent(EventTypePrefix+string(s.Type), data, map[string]string{
		ExtBranchID:    s.BranchID,
		ExtRequestID:   s.RequestID,
		ExtTraceParent: traceOrNew(tp),
		ExtTraceState:  ts,
	})
	if err != nil {
		return err
	}
	ev.SetTime(data.Time)
	subject := k.subj.Events(s.BranchID, token)
	msg, err := Encode(subject, ev, Structured)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.timeout)
	defer cancel()
	if _, err := k.js.PublishMsg(pctx, msg, jetstream.WithExpectStream(k.subj.EventsStream())); err != nil {
		return fmt.Errorf("bus: publish %s event of request %s: %w", ev.Type(), s.RequestID, err)
	}
	k.log.Debug().Str("subject", subject).Str("request", s.RequestID).Msg("signal published")
	return nil
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
