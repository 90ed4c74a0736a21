package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/internal/connloss"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/ops"
)

// outcome is what settle makes of a delivery: the answer to publish, and
// what to say of it.
type outcome struct {
	ev      *event.Event
	failure *deadReason // the error answered, if any
	dead    *deadReason // failed temporarily on every delivery: a dead letter
}

// deadReason is why a request is dead-lettered.
type deadReason struct {
	code    ops.Code
	message string
}

// settle answers d with its result or final error, or schedules a retry of
// a temporary failure; the answer stored, it acknowledges the request.
//
// The events the handler published (d.events) are awaited while the
// answer is published, and all of them before the request is acknowledged
// (a failure is only logged: signals never change an outcome). The request
// log line (see Config.RequestLogLevel) gives the time since d.start.
func (w *Worker) settle(d *delivery) {
	eventsStored := w.awaitEvents(d)
	if d.err == nil && d.res != nil && d.res.Replayed {
		// Answered from history: a copy of a request that ran before.
		// The answer stored then is the one answer; send it again.
		eventsStored()
		if w.answerFromStore(d) {
			return
		}
	}
	out, ok := w.answer(d)
	if !ok {
		return
	}
	if !w.store(d, out) {
		return
	}
	// The request is acknowledged only once its events are stored.
	eventsStored()
	w.logAnswered(d, out)
	w.ack(d.msg, d.log)
	if out.dead != nil {
		w.deadLetterMsg(d.msg, d.req.ID(), out.dead.code, out.dead.message, d.attempt, true, d.log)
	}
}

// awaitEvents starts waiting for the events d's handler published and
// returns a function that waits for that wait to end (logging a failure),
// at once the second time.
func (w *Worker) awaitEvents(d *delivery) (stored func()) {
	if d.events == nil {
		return func() {}
	}
	wait := d.events
	d.events = nil
	done := make(chan error, 1)
	go func() {
		ctx, cancel := connloss.Bound(context.Background(), w.nc, publishTimeout)
		defer cancel()
		done <- wait(ctx)
	}()
	settled := false
	return func() {
		if settled {
			return
		}
		settled = true
		if err := <-done; err != nil {
			w.health.warn(d.log).Err(err).Msg("events of the request not stored")
		}
	}
}

// answer builds d's answer: its result, or the error event of its final
// failure. A temporary failure with deliveries left is retried instead;
// ok is false then, and when the error event cannot be built (the
// request is terminated).
func (w *Worker) answer(d *delivery) (out outcome, ok bool) {
	err := d.err
	if err == nil {
		res := d.res
		if res == nil {
			res = &ops.Result{}
		}
		if out.ev, err = w.builder.Result(d.req, res); err == nil {
			return out, true
		}
		err = &ops.Error{Code: ops.CodeInternal, Message: "the result could not be encoded", Err: err}
	}
	code, message, temporary := protocol.ErrorCode(err)
	if temporary && !w.lastDelivery(d.attempt) {
		delay := w.cfg.Backoff.Delay(d.attempt)
		w.health.warn(d.log).Err(err).Dur("retry_in", delay).Msg("temporary failure; request will be retried")
		if nerr := d.msg.NakWithDelay(delay); nerr != nil {
			w.health.warn(d.log).Err(nerr).Msg("nak")
		}
		return out, false
	}
	out.failure = &deadReason{code, message}
	if temporary {
		out.dead = &deadReason{code, fmt.Sprintf("failed on every one of its %d deliveries: %s", d.attempt, message)}
	}
	if out.ev, err = w.builder.Error(d.req, code, message); err != nil {
		d.log.Error().Err(err).Msg("build error event")
		_ = d.msg.TermWithReason(string(code))
		return out, false
	}
	return out, true
}

// store publishes d's answer and reports whether it was stored. When it
// was not, the request is retried, and a handler that already committed
// its work answers from history then; on the last delivery, which leaves
// no retry, the request is recorded as a dead letter.
func (w *Worker) store(d *delivery, out outcome) bool {
	err := w.publishAnswer(d.req.ID(), d.req.ReplyTo, out.ev)
	if err == nil {
		return true
	}
	if w.lastDelivery(d.attempt) {
		// No delivery is left to answer it: leave a trace.
		dead := out.dead
		if dead == nil {
			dead = &deadReason{ops.CodeUnavailable, "the answer could not be stored on the last delivery"}
		}
		w.deadLetterMsg(d.msg, d.req.ID(), dead.code, fmt.Sprintf("%s (and its answer could not be stored: %v)", dead.message, err), d.attempt, false, d.log)
	}
	delay := w.cfg.Backoff.Delay(d.attempt)
	w.health.warn(d.log).Err(err).Dur("retry_in", delay).Msg("publish answer; request will be retried")
	_ = d.msg.NakWithDelay(delay)
	return false
}

// logAnswered writes the request log line of an answered request (see
// Config.RequestLogLevel).
func (w *Worker) logAnswered(d *delivery, out outcome) {
	e := d.log.WithLevel(w.requestLevel)
	if !e.Enabled() {
		return
	}
	e = e.Float64("duration_ms", float64(time.Since(d.start).Microseconds())/1000)
	d.notes.apply(e)
	if out.failure != nil {
		e.Str("code", string(out.failure.code)).Str("error", out.failure.message).Msg("request failed")
		return
	}
	e.Str("code", "ok").Msg("request answered")
}

// reject answers a request the codec refused, then terminates it.
func (w *Worker) reject(d *delivery) {
	msg := d.msg
	var ee *protocol.EventError
	if !errors.As(d.decodeErr, &ee) {
		ee = &protocol.EventError{Code: protocol.CodeMalformedEvent, Message: d.decodeErr.Error()}
	}
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
		w.deadLetterMsg(msg, ee.ID, ee.Code, ee.Message, d.attempt, false, log)
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
		if !w.lastDelivery(d.attempt) {
			log.Warn().Err(err).Msg("publish error event; will retry")
			_ = msg.NakWithDelay(w.cfg.Backoff.Delay(d.attempt))
			return
		}
		log.Error().Err(err).Msg("publish error event; giving up")
		w.deadLetterMsg(msg, ee.ID, ee.Code, ee.Message, d.attempt, false, log)
	}
	log.Info().Str("error", ee.Message).Msg("bad request answered with an error event")
	_ = msg.TermWithReason(string(ee.Code))
}

// answerFromStore answers d with the answer stored for its request id, if
// any, and acknowledges it. It reports whether it did.
func (w *Worker) answerFromStore(d *delivery) bool {
	ctx, cancel := connloss.Bound(context.Background(), w.nc, publishTimeout)
	defer cancel()
	stored, err := w.res.Results.GetLastMsgForSubject(ctx, w.subj.Reply(d.req.ID()))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false
	}
	if err != nil {
		// Cannot tell: run it. A handler that committed before answers
		// from history.
		w.health.warn(d.log).Err(err).Msg("look up stored answer")
		return false
	}
	// Send it again to the reply subject, for a client waiting there. On
	// the default subject the results stream drops it as a duplicate (same
	// message id) or replaces the stored copy with itself.
	out := nats.NewMsg(d.req.ReplyTo)
	for k, v := range stored.Header {
		out.Header[k] = v
	}
	// A direct get adds the stored message's stream metadata; it describes
	// the stored copy, not the answer.
	protocol.DeleteStoredMetadata(out.Header)
	out.Data = stored.Data
	if err := w.nc.PublishMsg(out); err != nil {
		d.log.Warn().Err(err).Msg("republish stored answer")
		return false
	}
	w.health.info(d.log).Msg("request answered before; stored answer sent again, not run")
	w.ack(d.msg, d.log)
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
