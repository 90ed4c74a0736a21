package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/ops"
)

// Dead letters.
//
// A request ends in the dead-letter stream (Subjects.DeadStream, one entry
// per request under Subjects.DeadLetter) when
//
//   - it failed temporarily on every one of the consumer's MaxDeliver
//     deliveries (its client is answered with the last error too);
//   - a stopping worker abandoned it on its last delivery (answered
//     unavailable);
//   - it could not be answered: unreadable, with neither a usable id, a
//     replyto nor a Nats-Msg-Id; or its error answer could not be stored on
//     its last delivery;
//   - it was delivered MaxDeliver times and never answered, because the
//     workers that took it died or were cut off each time (a poison
//     request): the server's max-deliveries advisory names it, a worker
//     answers it unavailable when it can, records it, and removes it from
//     the ops stream, where work-queue retention would otherwise keep it.
//
// The dead letter is the request message as published (body and headers)
// plus the reason in Lion-Dead-* headers (see protocol.DeadLetter). The
// stream keeps entries for provision.Config.DeadMaxAge and at most
// DeadMaxMsgs of them.

// deadLetterCode is the code a poison request is answered with.
const deadLetterCode = ops.CodeUnavailable

// deadLetter records the request message (subject, h, data; opsSeq in the
// ops stream) in the dead-letter stream. A failure is logged: the request
// was answered when it could be, and the record is best effort.
func (w *Worker) deadLetter(subject string, h nats.Header, data []byte, opsSeq uint64, id string, code ops.Code, message string, attempts int, answered bool, log zerolog.Logger) {
	key := protocol.DeadLetterKey(id, opsSeq)
	if !protocol.ValidToken(id) {
		id = ""
	}
	d := &protocol.DeadLetter{
		Key:       key,
		RequestID: id,
		Reason:    code,
		Error:     message,
		Subject:   subject,
		Attempts:  attempts,
		OpsSeq:    opsSeq,
		Time:      time.Now(),
		Answered:  answered,
		Header:    h,
		Data:      data,
	}
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	if _, err := w.js.PublishMsg(ctx, d.Message(w.subj.DeadLetter(key)), jetstream.WithExpectStream(w.subj.DeadStream())); err != nil {
		log.Error().Err(err).Str("dead_letter", key).Msg("record dead letter")
		return
	}
	log.Warn().Str("dead_letter", key).Str("code", string(code)).Int("attempts", attempts).Bool("answered", answered).Msg("request dead-lettered")
	if w.cfg.OnDeadLetter != nil {
		w.cfg.OnDeadLetter(code)
	}
}

// deadLetterMsg records a fetched request message.
func (w *Worker) deadLetterMsg(msg jetstream.Msg, id string, code ops.Code, message string, attempts int, answered bool, log zerolog.Logger) {
	seq := uint64(0)
	if meta, err := msg.Metadata(); err == nil {
		seq = meta.Sequence.Stream
	}
	w.deadLetter(msg.Subject(), msg.Headers(), msg.Data(), seq, id, code, message, attempts, answered, log)
}

// maxDeliveriesAdvisory is the part of the server's advisory
// (io.nats.jetstream.advisory.v1.max_deliver) the worker reads.
type maxDeliveriesAdvisory struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// maxDeliveriesSubject is where the server announces a request of the
// shared consumer that ran out of deliveries.
func (w *Worker) maxDeliveriesSubject() string {
	return "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + w.subj.OpsStream() + "." + w.subj.WorkersConsumer()
}

// subscribePoison makes the worker one of the queue group that handles the
// server's max-deliveries advisories of the shared consumer.
func (w *Worker) subscribePoison() (*nats.Subscription, error) {
	return w.nc.QueueSubscribe(w.maxDeliveriesSubject(), w.subj.Prefix+"-dead-letters", func(m *nats.Msg) {
		var adv maxDeliveriesAdvisory
		if err := json.Unmarshal(m.Data, &adv); err != nil || adv.StreamSeq == 0 {
			w.log.Warn().Err(err).Msg("unreadable max-deliveries advisory")
			return
		}
		w.poison(adv)
	})
}

// poison handles a request the server gave up delivering: answers it when
// it has a reply address and no stored answer, dead-letters it and deletes
// it from the ops stream.
func (w *Worker) poison(adv maxDeliveriesAdvisory) {
	log := w.log.With().Uint64("ops_seq", adv.StreamSeq).Uint64("deliveries", adv.Deliveries).Logger()
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	raw, err := w.res.Ops.GetMsg(ctx, adv.StreamSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return // acknowledged meanwhile
	}
	if err != nil {
		log.Error().Err(err).Msg("read request that ran out of deliveries")
		return
	}
	message := fmt.Sprintf("delivered %d times and never answered: the workers that took it stopped or lost their connection each time", adv.Deliveries)
	nm := &nats.Msg{Subject: raw.Subject, Header: raw.Header, Data: raw.Data}
	id, replyTo := "", ""
	if req, derr := w.codec.DecodeRequest(nm); derr == nil {
		id, replyTo = req.ID(), req.ReplyTo
		message = fmt.Sprintf("request %s was %s", id, message)
	} else {
		var ee *protocol.EventError
		if errors.As(derr, &ee) {
			id, replyTo = ee.ID, ee.ReplyTo
		}
	}
	if id == "" {
		if mid := raw.Header.Get(jetstream.MsgIDHeader); protocol.ValidToken(mid) {
			id, replyTo = mid, w.subj.Reply(mid)
		}
	}
	log = log.With().Str("request", id).Logger()
	answered := false
	if id != "" && replyTo != "" {
		if _, err := w.res.Results.GetLastMsgForSubject(ctx, w.subj.Reply(id)); err == nil {
			answered = true // answered on a delivery whose ack was lost
		} else if ev, berr := w.builder.Rejection(&protocol.EventError{ID: id, ReplyTo: replyTo, Code: deadLetterCode, Message: message}); berr == nil {
			answered = w.publishAnswer(id, replyTo, ev) == nil
		}
	}
	w.deadLetter(raw.Subject, raw.Header, raw.Data, adv.StreamSeq, id, deadLetterCode, message, int(adv.Deliveries), answered, log)
	if err := w.res.Ops.DeleteMsg(ctx, adv.StreamSeq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		log.Warn().Err(err).Msg("remove dead-lettered request from the ops stream")
	}
}
