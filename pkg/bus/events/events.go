// Package events publishes the signals of the ops engine (lifecycle and
// message-added) as CloudEvents on <prefix>.events.<branch>.<token>, kept in
// the events stream. See [Sink].
package events

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/internal/pending"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
)

// DefaultTimeout bounds publishing one signal event (see [Sink]).
const DefaultTimeout = 5 * time.Second

// Sink publishes the lifecycle and message-added signals of the ops engine
// as CloudEvents and implements [ops.Signals]; pass it as
// ops.Config.Signals.
//
// A signal of type T (e.g. "run.start") about branch B becomes an event of
// type lionbus.T on the subject Subjects.Events(B, protocol.EventToken(T)),
// e.g. lion.events.B.run_start: the dots of the type become underscores so
// that the type stays one subject token, and observers can subscribe to
// lion.events.B.> or lion.events.*.run_failed. The events stream
// (<PREFIX>_EVENTS) keeps them for provision.Config.EventsMaxAge. The event
// carries the extensions branchid, requestid and traceparent (the request's,
// when the context carries one, see [protocol.ContextWithTraceParent]; else a
// new one), and its data is a [protocol.SignalData].
//
// While a batch is open for the signal's request (see [Sink.Open]; the
// worker opens one around every request's handler), Emit publishes without
// waiting and the batch collects the acknowledgement; the worker awaits
// them all, while it publishes the answer, before it acknowledges the
// request. Otherwise Emit waits for the stream's acknowledgement, bounded
// by DefaultTimeout and not cut short by the request's own cancellation (a
// run.failed of a cancelled request is still published). Either way the
// events of one request are stored in the order they were emitted: the
// publishes of one connection reach the stream in the order they were
// sent. Errors are returned to the engine, which logs them; they never
// change an operation's outcome.
type Sink struct {
	js      jetstream.JetStream
	subj    protocol.Subjects
	builder protocol.EventBuilder
	log     zerolog.Logger
	timeout time.Duration

	mu      sync.Mutex
	batches map[string]*batch // by request id: the requests in flight
}

// batch collects the acknowledgements of the events of one request id.
type batch struct {
	acks pending.Acks
	refs int // Opens not yet waited for
}

var _ ops.Signals = (*Sink)(nil)

// NewSink returns a sink publishing through js to the events stream of res
// (see [provision.Ensure]), with events built by b (its Source is the
// events' source). log receives debug records of what was published.
func NewSink(js jetstream.JetStream, res *provision.Resources, b protocol.EventBuilder, log zerolog.Logger) (*Sink, error) {
	if js == nil || res == nil || res.Events == nil {
		return nil, errors.New("events: NewSink needs a JetStream handle and provisioned provision.Resources")
	}
	return &Sink{js: js, subj: res.Subjects, builder: b, log: log, timeout: DefaultTimeout, batches: map[string]*batch{}}, nil
}

// Open opens a batch for request id: until the returned wait is called,
// the signals of the request (whose RequestID is id, or a stage of it:
// id followed by "/" and the stage's name) are published without waiting
// for the stream, and wait then waits until each of them is stored or
// failed, or ctx ends. wait returns the failures joined, nil when there
// were none; it is to be called once, and the batch is closed when it
// returns. A signal of the request emitted after that waits for its own
// acknowledgement again.
//
// The batches of one id opened at once share their acknowledgements;
// what a batch holds is bounded by the events its request emits, and
// the publishes not yet acknowledged by the JetStream handle's limit of
// pending asynchronous publishes (jetstream.WithPublishAsyncMaxPending).
func (k *Sink) Open(id string) (wait func(context.Context) error) {
	k.mu.Lock()
	b := k.batches[id]
	if b == nil {
		b = &batch{}
		k.batches[id] = b
	}
	b.refs++
	k.mu.Unlock()
	return func(ctx context.Context) error {
		k.mu.Lock()
		if b.refs--; b.refs == 0 {
			delete(k.batches, id)
		}
		k.mu.Unlock()
		return b.acks.Wait(ctx)
	}
}

// batchOf returns the open batch of the request a signal with request id
// id belongs to: id's own, or, for a stage id, that of the id before its
// last "/", and so on; nil when none is open.
func (k *Sink) batchOf(id string) *batch {
	k.mu.Lock()
	defer k.mu.Unlock()
	for {
		if b := k.batches[id]; b != nil {
			return b
		}
		i := strings.LastIndexByte(id, '/')
		if i < 0 {
			return nil
		}
		id = id[:i]
	}
}

// Emit publishes s; see [Sink]. A signal that cannot be published (no valid
// branch id, a type that is not a dotted lower-case name) is refused with
// protocol.ErrInvalidSignal.
func (k *Sink) Emit(ctx context.Context, s ops.Signal) error {
	tp, ts := protocol.TraceParentFromContext(ctx)
	ev, token, err := k.builder.Signal(s, tp, ts)
	if err != nil {
		return err
	}
	subject := k.subj.Events(s.BranchID, token)
	msg, err := protocol.Encode(subject, ev, protocol.Structured)
	if err != nil {
		return err
	}
	// Encode sets the Nats-Msg-Id to the event id, which is stable per
	// request, type and message (protocol.SignalID): a signal emitted
	// again within the stream's duplicate window is stored once.
	if b := k.batchOf(s.RequestID); b != nil {
		// Asynchronously: the publishes of one connection are stored in
		// the order they were sent, and the worker awaits every ack
		// before it acknowledges the request.
		f, err := k.js.PublishMsgAsync(msg, jetstream.WithExpectStream(k.subj.EventsStream()))
		if err != nil {
			return fmt.Errorf("events: publish %s event of request %s: %w", ev.Type(), s.RequestID, err)
		}
		b.acks.Add(f, ev.Type()+" event")
		return nil
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.timeout)
	defer cancel()
	if _, err := k.js.PublishMsg(pctx, msg, jetstream.WithExpectStream(k.subj.EventsStream())); err != nil {
		return fmt.Errorf("events: publish %s event of request %s: %w", ev.Type(), s.RequestID, err)
	}
	k.log.Debug().Str("subject", subject).Str("request", s.RequestID).Msg("signal published")
	return nil
}
