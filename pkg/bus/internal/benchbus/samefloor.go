package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The same-messages floor's resources: the floor's two streams and
// consumer, and a history and an events stream shaped like lionbus's
// LION_HISTORY and LION_EVENTS.
const (
	sameReqStream     = "SAME_REQ"
	sameReqSubject    = "same.req"
	sameResStream     = "SAME_RES"
	sameReplyPrefix   = "same.reply."
	sameHistStream    = "SAME_HIST"
	sameHistPrefix    = "same.history."
	sameEventsStream  = "SAME_EVENTS"
	sameEventsPrefix  = "same.events."
	sameConsumer      = "same-workers"
	floorBranchHeader = "Floor-Branch"

	// sameSignals is how many signal events a communicate publishes:
	// run.start, two message.added (instruction and answer), run.end.
	sameSignals = 4
)

// sameSignalTypes name the events the same-messages floor publishes, one
// subject token each.
var sameSignalTypes = [sameSignals]string{"run_start", "message_added", "message_added", "run_end"}

// sameFloor is the same-messages floor: the floor worker plus exactly what
// a lionbus communicate stores besides its request and answer. Its answer
// appends one message to the branch's history subject, expecting the
// subject's last sequence (known from its own previous append; read once
// after a conflict, as lionbus's store does); publishes four signal events
// without waiting; stores the reply while their acks are outstanding; and
// awaits the acks before the floor worker's double ack.
type sameFloor struct {
	js   jetstream.JetStream
	hist jetstream.Stream
	// sizes, when set (-same-bytes) before the first request, are the
	// payload sizes of what it stores; otherwise every payload is the
	// request's data.
	sizes *payloadSizes

	mu   sync.Mutex
	last map[string]uint64 // history subject → its last sequence
}

// provisionSame creates the same-messages floor's streams and consumer.
func provisionSame(ctx context.Context, js jetstream.JetStream) (jetstream.Consumer, error) {
	req, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: sameReqStream, Subjects: []string{sameReqSubject},
		Retention: jetstream.WorkQueuePolicy, Discard: jetstream.DiscardNew,
		Duplicates: floorDuplicates, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("same floor: create %s: %w", sameReqStream, err)
	}
	for _, cfg := range []jetstream.StreamConfig{
		{Name: sameResStream, Subjects: []string{sameReplyPrefix + ">"}, Retention: jetstream.LimitsPolicy,
			MaxMsgsPerSubject: 1, Duplicates: floorDuplicates, Storage: jetstream.FileStorage, AllowDirect: true},
		{Name: sameHistStream, Subjects: []string{sameHistPrefix + ">"}, Retention: jetstream.LimitsPolicy,
			Duplicates: floorDuplicates, Storage: jetstream.FileStorage, AllowDirect: true},
		{Name: sameEventsStream, Subjects: []string{sameEventsPrefix + ">"}, Retention: jetstream.LimitsPolicy,
			Storage: jetstream.FileStorage},
	} {
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			return nil, fmt.Errorf("same floor: create %s: %w", cfg.Name, err)
		}
	}
	cons, err := req.CreateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: sameConsumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: floorAckWait,
		MaxDeliver: floorMaxDeliver, MaxAckPending: 1000, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("same floor: create consumer: %w", err)
	}
	return cons, nil
}

// startSame provisions the same-messages floor on nc and starts its
// worker.
func startSame(ctx context.Context, nc *nats.Conn, inFlight int, fetchWait time.Duration) (*floorWorker, *sameFloor, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, nil, err
	}
	cons, err := provisionSame(ctx, js)
	if err != nil {
		return nil, nil, err
	}
	hist, err := js.Stream(ctx, sameHistStream)
	if err != nil {
		return nil, nil, err
	}
	s := &sameFloor{js: js, hist: hist, last: map[string]uint64{}}
	w := newFloorWorker(js, cons, inFlight, fetchWait)
	w.answer = s.answer
	w.start()
	return w, s, nil
}

// newSameClient returns a client of the same-messages floor.
func newSameClient(nc *nats.Conn) (*floorClient, error) {
	c, err := newFloorClient(nc)
	if err != nil {
		return nil, err
	}
	c.reqSubject, c.reqStream, c.replyPrefix = sameReqSubject, sameReqStream, sameReplyPrefix
	return c, nil
}

// answer stores what a communicate stores: the history append, the four
// signal events (acks awaited while the reply is stored) and the reply.
func (s *sameFloor) answer(ctx context.Context, msg jetstream.Msg) error {
	id := msg.Headers().Get(jetstream.MsgIDHeader)
	branch := msg.Headers().Get(floorBranchHeader)
	data := msg.Data()
	payload := func(size func(payloadSizes) int) []byte {
		if s.sizes == nil {
			return data
		}
		return sized(data, size(*s.sizes))
	}
	if err := s.appendHistory(ctx, branch, id, payload(func(p payloadSizes) int { return p.history })); err != nil {
		return err
	}
	acks := make([]jetstream.PubAckFuture, 0, sameSignals)
	for i, typ := range sameSignalTypes {
		ev := nats.NewMsg(sameEventsPrefix + branch + "." + typ)
		ev.Header.Set(jetstream.MsgIDHeader, id+"/"+typ+"/"+strconv.Itoa(i))
		ev.Data = payload(func(p payloadSizes) int { return p.events[i] })
		f, err := s.js.PublishMsgAsync(ev, jetstream.WithExpectStream(sameEventsStream))
		if err != nil {
			return fmt.Errorf("same floor: publish event: %w", err)
		}
		acks = append(acks, f)
	}
	reply := nats.NewMsg(sameReplyPrefix + id)
	reply.Header.Set(jetstream.MsgIDHeader, "answer-"+id)
	reply.Data = payload(func(p payloadSizes) int { return p.reply })
	if _, err := s.js.PublishMsg(ctx, reply, jetstream.WithExpectStream(sameResStream)); err != nil {
		return fmt.Errorf("same floor: store reply: %w", err)
	}
	for _, f := range acks {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("same floor: event: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("same floor: event: %w", ctx.Err())
		}
	}
	return nil
}

// appendHistory appends data to branch's history subject, expecting its
// last sequence; after a conflict it reads the subject's last sequence
// and tries once more.
func (s *sameFloor) appendHistory(ctx context.Context, branch, id string, data []byte) error {
	subject := sameHistPrefix + branch
	for try := 0; ; try++ {
		s.mu.Lock()
		last := s.last[subject]
		s.mu.Unlock()
		m := nats.NewMsg(subject)
		m.Header.Set(jetstream.MsgIDHeader, branch+"/"+id+"/append")
		m.Data = data
		ack, err := s.js.PublishMsg(ctx, m, jetstream.WithExpectStream(sameHistStream), jetstream.WithExpectLastSequencePerSubject(last))
		if err == nil {
			s.mu.Lock()
			s.last[subject] = ack.Sequence
			s.mu.Unlock()
			return nil
		}
		var apiErr *jetstream.APIError
		if try > 0 || !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence {
			return fmt.Errorf("same floor: append history: %w", err)
		}
		stored, err := s.hist.GetLastMsgForSubject(ctx, subject)
		if err != nil {
			return fmt.Errorf("same floor: read last sequence: %w", err)
		}
		s.mu.Lock()
		s.last[subject] = stored.Sequence
		s.mu.Unlock()
	}
}
