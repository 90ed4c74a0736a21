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
	js   jetstream.JetStream
	cons jetstream.Consumer
	// answer stores the reply of a request (see handle); the same-messages
	// floor's also stores what a communicate stores besides it (see
	// sameFloor.answer).
	answer    func(ctx context.Context, msg jetstream.Msg) error
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
	w := newFloorWorker(js, cons, inFlight, fetchWait)
	w.answer = w.storeReply
	w.start()
	return w, nil
}

// newFloorWorker returns a floor worker on cons, not started; its answer
// is to be set.
func newFloorWorker(js jetstream.JetStream, cons jetstream.Consumer, inFlight int, fetchWait time.Duration) *floorWorker {
	return &floorWorker{
		js:        js,
		cons:      cons,
		fetchWait: fetchWait,
		slots:     make(chan struct{}, inFlight),
		stopping:  make(chan struct{}),
	}
}

// start starts the fetch loop.
func (w *floorWorker) start() {
	w.wg.Add(1)
	go w.loop()
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

// handle answers one request (w.answer), then double-acks it.
func (w *floorWorker) handle(msg jetstream.Msg) {
	defer w.wg.Done()
	defer func() { <-w.slots }()
	ctx, cancel := context.WithTimeout(context.Background(), floorPublishTimeout)
	defer cancel()
	if err := w.answer(ctx, msg); err != nil {
		w.fail(err)
		_ = msg.Nak()
		return
	}
	if err := msg.DoubleAck(ctx); err != nil {
		w.fail(fmt.Errorf("floor: ack: %w", err))
	}
}

// storeReply is the floor's answer: the reply (the request's body) is
// stored on floor.reply.<id>.
func (w *floorWorker) storeReply(ctx context.Context, msg jetstream.Msg) error {
	id := msg.Headers().Get(jetstream.MsgIDHeader)
	reply := nats.NewMsg(floorReplyPrefix + id)
	reply.Header.Set(jetstream.MsgIDHeader, "answer-"+id)
	reply.Data = msg.Data()
	if _, err := w.js.PublishMsg(ctx, reply, jetstream.WithExpectStream(floorResStream)); err != nil {
		return fmt.Errorf("floor: store reply: %w", err)
	}
	return nil
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
	// The subjects and stream of the floor it talks to.
	reqSubject, reqStream, replyPrefix string
	// sizes, when set (-same-bytes), size the request's payload and the
	// reply it expects; otherwise both are the body.
	sizes *payloadSizes
}

func newFloorClient(nc *nats.Conn) (*floorClient, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	return &floorClient{nc: nc, js: js, reqSubject: floorReqSubject, reqStream: floorReqStream, replyPrefix: floorReplyPrefix}, nil
}

// do sends one request and waits for its reply: it subscribes to
// floor.reply.<id>, publishes the request with a JetStream publish (the id
// as the message id) and waits for the PubAck and then for the reply.
//
// branch, when not empty, goes in the header floorBranchHeader (the
// same-messages floor appends to its history).
func (c *floorClient) do(ctx context.Context, branch string, body []byte) error {
	id := nuid.Next()
	ch := make(chan *nats.Msg, 1)
	sub, err := c.nc.ChanSubscribe(c.replyPrefix+id, ch)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	m := nats.NewMsg(c.reqSubject)
	m.Header.Set(jetstream.MsgIDHeader, id)
	if branch != "" {
		m.Header.Set(floorBranchHeader, branch)
	}
	m.Data = body
	want := body
	if c.sizes != nil {
		m.Data, want = sized(body, c.sizes.request), sized(sized(body, c.sizes.request), c.sizes.reply)
	}
	if _, err := c.js.PublishMsg(ctx, m, jetstream.WithExpectStream(c.reqStream)); err != nil {
		return fmt.Errorf("floor: publish request: %w", err)
	}
	select {
	case r := <-ch:
		if !bytes.Equal(r.Data, want) {
			return fmt.Errorf("floor: reply %q to request %q", r.Data, m.Data)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("floor: await reply %s: %w", id, ctx.Err())
	}
}
