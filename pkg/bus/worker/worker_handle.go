package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/internal/connloss"
	"github.com/lionbus/lionbus/pkg/bus/internal/pending"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/tracing"
	"github.com/lionbus/lionbus/pkg/ops"
)

// errPanic wraps the value of a handler panic; the request is answered with
// ops.CodeInternal.
var errPanic = errors.New("worker: handler panicked")

// admit decodes a fetched request and, for a request on a branch, places
// it in the branch's lane. It runs on the dispatching goroutine, in
// delivery order.
//
// A request without a branch, or a parallel one (the branchorder
// attribute), enters a lane of its own id instead (see claimKey): with
// leases, copies of it delivered to several workers at once (published
// without a Nats-Msg-Id) then run one at a time, and each copy after the
// first finds the first one's stored answer.
func (w *Worker) admit(msg jetstream.Msg) (*protocol.Request, *ticket, error) {
	req, err := w.codec.DecodeRequestJS(msg)
	if err != nil || w.lanes == nil {
		return req, nil, err
	}
	seq := uint64(0)
	if meta, merr := msg.Metadata(); merr == nil {
		seq = meta.Sequence.Stream
	}
	if req.BranchID == "" || req.Parallel {
		// A parallel request waits for nothing of its branch; like a
		// request without a branch, it is ordered only with copies of
		// itself.
		if w.lanes.leaser == nil {
			return req, nil, nil
		}
		t := w.lanes.enter(claimKey(req.ID()), seq)
		t.claim = true
		return req, t, nil
	}
	return req, w.lanes.enter(req.BranchID, seq), nil
}

// claimKey is the lane, and lease, of the request id of a request without
// a branch. The dot keeps it apart from every branch id, which has none.
func claimKey(id string) string { return "_req." + id }

// handle runs one fetched request to its end: answered and acknowledged,
// terminated, or handed back for redelivery. req and decodeErr are what
// admit decoded; t is the request's place in its branch's lane, if any.
func (w *Worker) handle(msg jetstream.Msg, req *protocol.Request, decodeErr error, t *ticket) {
	defer w.wg.Done()
	defer func() { <-w.slots }()
	if t != nil {
		// Left as soon as the handler returned (see below), so that the
		// next request of the branch runs while this one is answered;
		// leaving twice is harmless.
		defer w.lanes.leave(t)
	}

	attempt := deliveryAttempt(msg)
	if decodeErr != nil {
		var ee *protocol.EventError
		if !errors.As(decodeErr, &ee) {
			ee = &protocol.EventError{Code: protocol.CodeMalformedEvent, Message: decodeErr.Error()}
		}
		w.reject(msg, ee, attempt)
		return
	}
	start := time.Now()
	log := w.log.With().Str("request", req.ID()).Str("verb", req.Verb).Str("branch", req.BranchID).Int("attempt", attempt).Logger()

	hctx, cancel := context.WithCancelCause(w.hardCtx)
	defer cancel(nil)
	deadline := w.deadline(req)
	if !deadline.IsZero() {
		var cancelDeadline context.CancelFunc
		hctx, cancelDeadline = context.WithDeadline(hctx, deadline)
		defer cancelDeadline()
	}
	if t != nil {
		w.lanes.revocable(t, cancel)
	}
	remove, added := w.cancels.add(req.ID(), cancel)
	switch added {
	case wasCancelled:
		// A cancel that came after the request was answered (a late
		// Ctrl-C, say) must not replace that answer on a redelivery.
		if w.answerFromStore(msg, req, log) {
			return
		}
		w.finish(msg, req, nil, ops.Errorf(ops.CodeCanceled, "request %s was cancelled by the client", req.ID()), attempt, log, nil, start)
		return
	case alreadyRunning:
		// Another delivery of the same request (published twice without
		// a message id) runs here: come back when it has been answered.
		w.health.info(log).Msg("request already running in this worker; delivery postponed")
		_ = msg.NakWithDelay(w.cfg.Backoff.Delay(1))
		return
	}
	defer remove()
	defer w.keepAlive(msg, req.ID())()

	var res *ops.Result
	var err error
	var acks *pending.Acks // of the events published by the handler
	if t != nil {
		select {
		case <-t.ready:
		case <-hctx.Done():
			err = context.Cause(hctx)
		}
		if err == nil && w.lanes.leaser != nil {
			if lerr := w.lanes.hold(hctx, t); lerr != nil {
				err = lerr
				if hctx.Err() == nil {
					what := "branch " + req.BranchID
					if t.claim {
						what = "request " + req.ID()
					}
					err = &ops.Error{Code: ops.CodeUnavailable, Temporary: true, Err: lerr,
						Message: fmt.Sprintf("the lease of %s could not be taken: %v", what, lerr)}
				}
			}
		}
	}
	if err == nil && (attempt > 1 || req.BranchID == "" || (t != nil && t.claim)) && w.answerFromStore(msg, req, log) {
		// The first delivery of a request on a branch skips this lookup:
		// a request published again after it was answered (as another
		// message, past the duplicate window) is recognised by the
		// branch's commits, read with the branch, and answered from
		// history without a model call; a read-only verb reads again.
		return
	}
	if err == nil && !req.Deadline.IsZero() && !time.Now().Before(req.Deadline) {
		// Answered already (above) or not at all: too late to run.
		err = context.DeadlineExceeded
	}
	if err == nil {
		op := ops.Request{
			ID: req.ID(), Verb: req.Verb, BranchID: req.BranchID, Data: req.Data, TraceParent: req.TraceParent,
			Attempt: attempt, LastAttempt: w.lastDelivery(attempt),
		}
		acks = &pending.Acks{}
		var tctx context.Context
		var endSpan func(error)
		if w.cfg.Tracer != nil {
			tctx, endSpan = tracing.StartRequest(hctx, w.cfg.Tracer, op, req.TraceParent, req.TraceState)
		} else {
			tctx = protocol.ContextWithTraceParent(hctx, req.TraceParent, req.TraceState)
		}
		res, err = w.run(pending.NewContext(tctx, acks), op)
		if endSpan != nil {
			endSpan(err)
		}
		if t != nil && !t.claim {
			// A claim is kept until the answer is stored (the deferred
			// leave), so that a copy waiting for it finds the answer.
			w.lanes.leave(t)
		}
	}

	if err != nil {
		var handedBack bool
		if handedBack, err = w.handBack(hctx, msg, attempt, log, err); handedBack {
			return
		}
	}
	if err != nil && w.hardCtx.Err() != nil && !errors.Is(context.Cause(hctx), ErrCanceledByClient) {
		if !w.lastDelivery(attempt) {
			// The worker is stopping hard: hand the request back, to be
			// delivered again once this worker's open fetch has ended
			// (not into it).
			log.Warn().Err(err).Msg("request abandoned by a stopping worker; it will be redelivered")
			_ = msg.NakWithDelay(w.cfg.FetchWait)
			return
		}
		// No delivery is left after this one: a nak would leave the
		// request unanswered for good, so answer it instead.
		log.Warn().Err(err).Msg("request abandoned by a stopping worker on its last delivery; answered unavailable")
		// Temporary: on the last delivery that answers it and records it
		// as a dead letter.
		err = &ops.Error{
			Code:      ops.CodeUnavailable,
			Message:   fmt.Sprintf("request %s was abandoned by a stopping worker on its last allowed delivery (%d)", req.ID(), attempt),
			Err:       err,
			Temporary: true,
		}
	}
	if err != nil && errors.Is(context.Cause(hctx), ErrCanceledByClient) {
		err = &ops.Error{Code: ops.CodeCanceled, Message: fmt.Sprintf("request %s was cancelled by the client", req.ID()), Err: err}
	}
	if err != nil && !deadline.IsZero() && !time.Now().Before(deadline) && w.hardCtx.Err() == nil {
		// Past its deadline a request is not retried: answered timeout.
		err = &ops.Error{Code: ops.CodeTimeout, Err: err, Message: fmt.Sprintf(
			"request %s passed its deadline %s", req.ID(), deadline.UTC().Format(time.RFC3339Nano))}
	}
	w.finish(msg, req, res, err, attempt, log, acks, start)
}

// deadline returns when work on req must stop: its deadline attribute or
// MaxRequestDuration from now, whichever is sooner (zero: none).
func (w *Worker) deadline(req *protocol.Request) time.Time {
	d := req.Deadline
	if w.cfg.MaxRequestDuration > 0 {
		if limit := time.Now().Add(w.cfg.MaxRequestDuration); d.IsZero() || limit.Before(d) {
			d = limit
		}
	}
	return d
}

// deliveryAttempt returns msg's delivery count (1 for the first delivery).
func deliveryAttempt(msg jetstream.Msg) int {
	if meta, err := msg.Metadata(); err == nil && meta.NumDelivered > 0 {
		return int(meta.NumDelivered)
	}
	return 1
}

// lastDelivery reports whether delivery attempt is the last the consumer
// allows (MaxDeliver): a request nakked then is never delivered again.
func (w *Worker) lastDelivery(attempt int) bool {
	return w.maxDeliver > 0 && attempt >= w.maxDeliver
}

// keepAlive reports msg in progress every ProgressInterval, which resets
// the server's ack wait, until the returned function is called.
func (w *Worker) keepAlive(msg jetstream.Msg, id string) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(w.cfg.ProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if err := msg.InProgress(); err != nil {
					w.log.Debug().Err(err).Str("request", id).Msg("report progress")
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// run calls the handler, turning a panic into an error.
func (w *Worker) run(ctx context.Context, op ops.Request) (res *ops.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			w.log.Error().Str("request", op.ID).Str("verb", op.Verb).Interface("panic", r).
				Bytes("stack", debug.Stack()).Msg("handler panicked")
			res, err = nil, &ops.Error{Code: ops.CodeInternal, Message: fmt.Sprintf("the %s handler failed unexpectedly", op.Verb), Err: fmt.Errorf("%w: %v", errPanic, r)}
		}
	}()
	return w.h.Do(ctx, op)
}

// finish answers req with its result or final error, or schedules a retry
// of a temporary failure.
//
// acks, when not nil, holds the acknowledgements of the events the handler
// published; they are awaited while the answer is published, and all of
// them before the request is acknowledged (a failure is only logged:
// signals never change an outcome).
//
// start is when the request's delivery began; the request log line (see
// Config.RequestLogLevel) gives the time since.
func (w *Worker) finish(msg jetstream.Msg, req *protocol.Request, res *ops.Result, err error, attempt int, log zerolog.Logger, acks *pending.Acks, start time.Time) {
	settle := func() {}
	if acks != nil {
		stored := make(chan error, 1)
		go func() {
			ctx, cancel := connloss.Bound(context.Background(), w.nc, publishTimeout)
			defer cancel()
			stored <- acks.Wait(ctx)
		}()
		settled := false
		settle = func() {
			if settled {
				return
			}
			settled = true
			if aerr := <-stored; aerr != nil {
				w.health.warn(log).Err(aerr).Msg("events of the request not stored")
			}
		}
	}
	var ev *event.Event
	var dead *deadReason    // failed temporarily on every delivery
	var failure *deadReason // the error answered, if any
	if err == nil && res != nil && res.Replayed {
		// Answered from history: a copy of a request that ran before.
		// The answer stored then is the one answer; send it again.
		settle()
		if w.answerFromStore(msg, req, log) {
			return
		}
	}
	if err == nil {
		if res == nil {
			res = &ops.Result{}
		}
		ev, err = w.builder.Result(req, res)
		if err != nil {
			err = &ops.Error{Code: ops.CodeInternal, Message: "the result could not be encoded", Err: err}
		}
	}
	if err != nil {
		code, message, temporary := protocol.ErrorCode(err)
		if temporary && (w.maxDeliver <= 0 || attempt < w.maxDeliver) {
			delay := w.cfg.Backoff.Delay(attempt)
			w.health.warn(log).Err(err).Dur("retry_in", delay).Msg("temporary failure; request will be retried")
			if nerr := msg.NakWithDelay(delay); nerr != nil {
				w.health.warn(log).Err(nerr).Msg("nak")
			}
			return
		}
		failure = &deadReason{code, message}
		if temporary {
			dead = &deadReason{code, fmt.Sprintf("failed on every one of its %d deliveries: %s", attempt, message)}
		}
		ev, err = w.builder.Error(req, code, message)
		if err != nil {
			log.Error().Err(err).Msg("build error event")
			_ = msg.TermWithReason(string(code))
			return
		}
	}
	if perr := w.publishAnswer(req.ID(), req.ReplyTo, ev); perr != nil {
		if w.lastDelivery(attempt) {
			// No delivery is left to answer it: leave a trace.
			if dead == nil {
				dead = &deadReason{ops.CodeUnavailable, "the answer could not be stored on the last delivery"}
			}
			w.deadLetterMsg(msg, req.ID(), dead.code, fmt.Sprintf("%s (and its answer could not be stored: %v)", dead.message, perr), attempt, false, log)
		}
		// Not stored: the request is retried, and a handler that already
		// committed its work answers from history then.
		delay := w.cfg.Backoff.Delay(attempt)
		w.health.warn(log).Err(perr).Dur("retry_in", delay).Msg("publish answer; request will be retried")
		_ = msg.NakWithDelay(delay)
		return
	}
	// The request is acknowledged only once its events are stored.
	settle()
	if e := log.WithLevel(w.requestLevel); e.Enabled() {
		e = e.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000)
		if failure != nil {
			e.Str("code", string(failure.code)).Str("error", failure.message).Msg("request failed")
		} else {
			e.Str("code", "ok").Msg("request answered")
		}
	}
	w.ack(msg, log)
	if dead != nil {
		w.deadLetterMsg(msg, req.ID(), dead.code, dead.message, attempt, true, log)
	}
}

// deadReason is why a request is dead-lettered.
type deadReason struct {
	code    ops.Code
	message string
}

// reject answers a request the codec refused, then terminates it.
func (w *Worker) reject(msg jetstream.Msg, ee *protocol.EventError, attempt int) {
	if ee.ID == "" && ee.ReplyTo == "" {
		// The event id could not be read, but a publisher that used it as
		// the JetStream message id (as the Client does) can still be
		// answered under it.
		if id := msg.Headers().Get(jetstream.MsgIDHeader); protocol.ValidToken(id) {
			ee.ID, ee.ReplyTo = id, w.subj.Reply(id)
		}
	}
	log := w.log.With().Str("request", ee.ID).Str("subject", msg.Subject()).Str("code", string(ee.Code)).Logger()
	if ee.ReplyTo == "" {
		log.Warn().Str("error", ee.Message).Msg("bad request without a reply address; dead-lettered")
		w.deadLetterMsg(msg, ee.ID, ee.Code, ee.Message, attempt, false, log)
		_ = msg.TermWithReason(string(ee.Code))
		return
	}
	ev, err := w.builder.Rejection(ee)
	if err != nil {
		log.Error().Err(err).Msg("build error event")
		_ = msg.TermWithReason(string(ee.Code))
		return
	}
	if err := w.publishAnswer(ee.ID, ee.ReplyTo, ev); err != nil {
		if w.maxDeliver <= 0 || attempt < w.maxDeliver {
			log.Warn().Err(err).Msg("publish error event; will retry")
			_ = msg.NakWithDelay(w.cfg.Backoff.Delay(attempt))
			return
		}
		log.Error().Err(err).Msg("publish error event; giving up")
		w.deadLetterMsg(msg, ee.ID, ee.Code, ee.Message, attempt, false, log)
	}
	log.Info().Str("error", ee.Message).Msg("bad request answered with an error event")
	_ = msg.TermWithReason(string(ee.Code))
}

// answerFromStore answers req with the answer stored for its id, if any,
// and acknowledges it. It reports whether it did.
func (w *Worker) answerFromStore(msg jetstream.Msg, req *protocol.Request, log zerolog.Logger) bool {
	ctx, cancel := connloss.Bound(context.Background(), w.nc, publishTimeout)
	defer cancel()
	stored, err := w.res.Results.GetLastMsgForSubject(ctx, w.subj.Reply(req.ID()))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false
	}
	if err != nil {
		// Cannot tell: run it. A handler that committed before answers
		// from history.
		w.health.warn(log).Err(err).Msg("look up stored answer")
		return false
	}
	// Send it again to the reply subject, for a client waiting there. On
	// the default subject the results stream drops it as a duplicate (same
	// message id) or replaces the stored copy with itself.
	out := nats.NewMsg(req.ReplyTo)
	for k, v := range stored.Header {
		out.Header[k] = v
	}
	// A direct get adds the stored message's stream metadata; it describes
	// the stored copy, not the answer.
	protocol.DeleteStoredMetadata(out.Header)
	out.Data = stored.Data
	if err := w.nc.PublishMsg(out); err != nil {
		log.Warn().Err(err).Msg("republish stored answer")
		return false
	}
	w.health.info(log).Msg("request answered before; stored answer sent again, not run")
	w.ack(msg, log)
	return true
}

// publishAnswer stores ev on the default reply subject of id (when id is
// known) and sends it to replyTo when that is another subject.
func (w *Worker) publishAnswer(id, replyTo string, ev *event.Event) error {
	ctx, cancel := connloss.Bound(context.Background(), w.nc, publishTimeout)
	defer cancel()
	stored := ""
	if id != "" {
		stored = w.subj.Reply(id)
		m, err := protocol.Encode(stored, ev, protocol.Structured)
		if err != nil {
			return err
		}
		// One answer per request id, whichever worker publishes it.
		m.Header.Set(jetstream.MsgIDHeader, "answer-"+id)
		if _, err := w.js.PublishMsg(ctx, m, jetstream.WithExpectStream(w.subj.ResultsStream())); err != nil {
			return fmt.Errorf("store answer: %w", connloss.Err(ctx, err))
		}
	}
	if replyTo != "" && replyTo != stored {
		m, err := protocol.Encode(replyTo, ev, protocol.Structured)
		if err != nil {
			return err
		}
		if err := w.nc.PublishMsg(m); err != nil {
			return fmt.Errorf("send answer to %s: %w", replyTo, err)
		}
	}
	return nil
}

// ack acknowledges msg without waiting for the server to confirm: the
// answer is stored, so should the ack be lost, the redelivery is answered
// from the stored answer (the same event) without running again.
func (w *Worker) ack(msg jetstream.Msg, log zerolog.Logger) {
	if err := msg.Ack(); err != nil {
		w.health.warn(log).Err(err).Msg("ack")
	}
}
