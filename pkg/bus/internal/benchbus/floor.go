package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// The floor's resources, shaped like lionbus's LION_OPS, LION_RESULTS and
// its workers consumer.
const (
	floorReqStream   = "FLOOR_REQ"
	floorReqSubject  = "floor.req"
	floorResStream   = "FLOOR_RES"
	floorReplyPrefix = "floor.reply."
	floorConsumer    = "floor-workers"

	floorAckWait    = 30 * time.Second
	floorMaxDeliver = 10
	floorDuplicates = 2 * time.Minute
	// floorPublishTimeout bounds the worker's reply publish and ack.
	floorPublishTimeout = 10 * time.Second
)

// floorWorker is the floor: the least a durable JetStream request service
// does. Requests are pulled from a durable consumer on a work-queue stream;
// each is answered by a JetStream publish of the reply into a results
// stream (waiting for its PubAck), and only then double-acked. At most
// inFlight requests run at once.
//
// It fetches the way lionbus's worker does: a fetch asks for every free
// slot (at least one), waits at most fetchWait, and runs in the background,
// so that a slot freed meanwhile is fetched for at once.
type floorWorker struct {
	js        jetstream.JetStream
	cons      jetstream.Consumer
	fetchWait time.Duration
	slots     chan struct{}
	stopping  chan struct{}
	wg        sync.WaitGroup
	mu        sync.Mutex
	firstErr  error
}

// provisionFloor creates the floor's streams and consumer.
func provisionFloor(ctx context.Context, js jetstream.JetStream) (jetstream.Consumer, error) {
	req, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:       floorReqStream,
		Subjects:   []string{floorReqSubject},
		Retention:  jetstream.WorkQueuePolicy,
		Discard:    jetstream.DiscardNew,
		Duplicates: floorDuplicates,
		Storage:    jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("floor: create %s: %w", floorReqStream, err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:              floorResStream,
		Subjects:          []string{floorReplyPrefix + ">"},
		Retention:         jetstream.LimitsPolicy,
		MaxAge:            24 * time.Hour,
		MaxMsgsPerSubject: 1,
		Duplicates:        floorDuplicates,
		Storage:           jetstream.FileStorage,
	}); err != nil {
		return nil, fmt.Errorf("floor: create %s: %w", floorResStream, err)
	}
	cons, err := req.CreateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       floorConsumer,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       floorAckWait,
		MaxDeliver:    floorMaxDeliver,
		MaxAckPending: 1000,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("floor: create consumer: %w", err)
	}
	return cons, nil
}

// startFloor provisions the floor on nc and starts its worker.
func startFloor(ctx context.Context, nc *nats.Conn, inFlight int, fetchWait time.Duration) (*floorWorker, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	cons, err := provisionFloor(ctx, js)
	if err != nil {
		return nil, err
	}
	w := &floorWorker{
		js:        js,
		cons:      cons,
		fetchWait: fetchWait,
		slots:     make(chan struct{}, inFlight),
		stopping:  make(chan struct{}),
	}
	w.wg.Add(1)
	go w.loop()
	return w, nil
}

// loop reserves the free slots (waiting for one) and fetches as many
// requests, until stop.
func (w *floorWorker) loop() {
	defer w.wg.Done()
	for {
		select {
		case w.slots <- struct{}{}:
		case <-w.stopping:
			return
		}
		n := 1
	take:
		for n < cap(w.slots) {
			select {
			case w.slots <- struct{}{}:
				n++
			default:
				break take
			}
		}
		batch, err := w.cons.Fetch(n, jetstream.FetchMaxWait(w.fetchWait))
		if err != nil {
			w.release(n)
			select {
			case <-w.stopping:
				return
			default:
			}
			w.fail(fmt.Errorf("floor: fetch: %w", err))
			time.Sleep(100 * time.Millisecond)
			continue
		}
		w.wg.Add(1)
		go w.dispatch(batch, n)
	}
}

// dispatch handles the requests of batch, which holds n slots, and frees
// the slots it did not use.
func (w *floorWorker) dispatch(batch jetstream.MessageBatch, n int) {
	defer w.wg.Done()
	used := 0
	for msg := range batch.Messages() {
		used++
		w.wg.Add(1)
		go w.handle(msg)
	}
	w.release(n - used)
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		w.fail(fmt.Errorf("floor: fetch: %w", err))
	}
}

// release frees n slots.
func (w *floorWorker) release(n int) {
	for range n {
		<-w.slots
	}
}

// handle answers one request: the reply (the request's body) is stored on
// floor.reply.<id>, then the request is double-acked.
func (w *floorWorker) handle(msg jetstream.Msg) {
	defer w.wg.Done()
	defer func() { <-w.slots }()
	ctx, cancel := context.WithTimeout(context.Background(), floorPublishTimeout)
	defer cancel()
	id := msg.Headers().Get(jetstream.MsgIDHeader)
	reply := nats.NewMsg(floorReplyPrefix + id)
	reply.Header.Set(jetstream.MsgIDHeader, "answer-"+id)
	reply.Data = msg.Data()
	if _, err := w.js.PublishMsg(ctx, reply, jetstream.WithExpectStream(floorResStream)); err != nil {
		w.fail(fmt.Errorf("floor: store reply: %w", err))
		_ = msg.Nak()
		return
	}
	if err := msg.DoubleAck(ctx); err != nil {
		w.fail(fmt.Errorf("floor: ack: %w", err))
	}
}

func (w *floorWorker) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.firstErr == nil {
		w.firstErr = err
	}
}

// err returns the worker's first failure, if any.
func (w *floorWorker) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.firstErr
}

// stop ends the fetching (within fetchWait) and waits for running
// requests.
func (w *floorWorker) stop() {
	close(w.stopping)
	w.wg.Wait()
}

// floorClient sends floor requests and waits for their replies.
type floorClient struct {
	nc *nats.Conn
	js jetstream.JetStream
}

func newFloorClient(nc *nats.Conn) (*floorClient, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	return &floorClient{nc: nc, js: js}, nil
}

// do sends one request and waits for its reply: it subscribes to
// floor.reply.<id>, publishes the request with a JetStream publish (the id
// as the message id) and waits for the PubAck and then for the reply.
func (c *floorClient) do(ctx context.Context, body []byte) error {
	id := nuid.Next()
	ch := make(chan *nats.Msg, 1)
	sub, err := c.nc.ChanSubscribe(floorReplyPrefix+id, ch)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	m := nats.NewMsg(floorReqSubject)
	m.Header.Set(jetstream.MsgIDHeader, id)
	m.Data = body
	if _, err := c.js.PublishMsg(ctx, m, jetstream.WithExpectStream(floorReqStream)); err != nil {
		return fmt.Errorf("floor: publish request: %w", err)
	}
	select {
	case r := <-ch:
		if !bytes.Equal(r.Data, body) {
			return fmt.Errorf("floor: reply %q to request %q", r.Data, body)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("floor: await reply %s: %w", id, ctx.Err())
	}
}
