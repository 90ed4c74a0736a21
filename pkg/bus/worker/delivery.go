package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/tracing"
	"github.com/lionbus/lionbus/pkg/ops"
)

// errPanic wraps the value of a handler panic; the request is answered with
// ops.CodeInternal.
var errPanic = errors.New("worker: handler panicked")

// delivery is one delivery of a request on its way through the worker:
// what was fetched and decoded, where its run stands, and what became of
// it. admit makes it on the dispatching goroutine; from then on the
// request's own goroutine (handle) owns it, and each phase reads what the
// earlier ones filled in.
type delivery struct {
	msg       jetstream.Msg
	req       *protocol.Request // nil when decodeErr is set
	decodeErr error             // why the codec refused the request
	ticket    *ticket           // its place in its lane; nil: none
	attempt   int               // the delivery count, from 1
	start     time.Time         // when handling began (the request log line)
	log       zerolog.Logger

	// ctx is the run's context: it ends when the client cancels the
	// request, the worker stops hard, the branch's lease is lost or the
	// deadline passes; cancel ends it with a cause.
	ctx      context.Context
	cancel   context.CancelCauseFunc
	deadline time.Time // when work on it must stop; zero: never

	// events, once the handler ran, waits for the events it published
	// (see Config.Events) and closes their batch; nil before, without
	// Config.Events, and once settle called it.
	events func(context.Context) error
	res    *ops.Result
	err    error // the failure so far; nil while all is well
	// notes are the fields the handler added to the request log line
	// (Annotate).
	notes annotations

	done []func() // run when the delivery is finished, last first

	// slot says whether the request gave up its slot (ops.YieldSlot).
	slot slotYield
}

// later has f run when d is finished, before what was added earlier.
func (d *delivery) later(f func()) { d.done = append(d.done, f) }

// finished runs what the phases added with later, last first.
func (d *delivery) finished() {
	for i := len(d.done) - 1; i >= 0; i-- {
		d.done[i]()
	}
}

// claim reports whether d waits for nothing of a branch: a request without
// a branch, or a parallel one, ordered only with copies of itself.
func (d *delivery) claim() bool { return d.ticket != nil && d.ticket.claim }

// admit decodes a fetched request and, for a request on a branch, places
// it in the branch's lane. It runs on the dispatching goroutine, in
// delivery order.
//
// A request without a branch, or a parallel one (the branchorder
// attribute), enters a lane of its own id instead (see claimKey): with
// leases, copies of it delivered to several workers at once (published
// without a Nats-Msg-Id) then run one at a time, and each copy after the
// first finds the first one's stored answer.
func (w *Worker) admit(msg jetstream.Msg) *delivery {
	d := &delivery{msg: msg, attempt: deliveryAttempt(msg)}
	d.slot.w = w
	d.req, d.decodeErr = w.codec.DecodeRequestJS(msg)
	if d.decodeErr != nil || w.lanes == nil {
		return d
	}
	seq := uint64(0)
	if meta, err := msg.Metadata(); err == nil {
		seq = meta.Sequence.Stream
	}
	switch {
	case d.req.BranchID != "" && !d.req.Parallel:
		d.ticket = w.lanes.enter(d.req.BranchID, seq)
	case w.lanes.leaser != nil:
		// A parallel request waits for nothing of its branch; like a
		// request without a branch, it is ordered only with copies of
		// itself.
		d.ticket = w.lanes.enter(claimKey(d.req.ID()), seq)
		d.ticket.claim = true
	}
	return d
}

// claimKey is the lane, and lease, of the request id of a request without
// a branch. The dot keeps it apart from every branch id, which has none.
func claimKey(id string) string { return "_req." + id }

// handle runs one admitted delivery to its end: answered and acknowledged,
// terminated, or handed back for redelivery. It runs the phases in turn;
// a phase that settles the delivery (answers, terminates or hands it back)
// reports so, and the later ones do not run. A phase that fails records
// the error in d.err: the phases that would run the request then pass,
// and the error is answered (or retried) by settle.
func (w *Worker) handle(d *delivery) {
	defer w.wg.Done()
	defer d.slot.done()
	defer d.finished()
	if d.ticket != nil {
		// Left as soon as the handler returned (see execute), so that the
		// next request of the branch runs while this one is answered;
		// leaving twice is harmless.
		d.later(func() { w.lanes.leave(d.ticket) })
	}
	if d.decodeErr != nil {
		w.reject(d)
		return
	}
	w.open(d)
	for _, phase := range [...]func(*delivery) (settled bool){
		w.register,       // one run of an id at a time in this worker
		w.awaitTurn,      // the branch's turn and its lease
		w.answeredBefore, // a copy of a request answered before
		w.execute,        // the handler
		w.park,           // a request the handler parked
		w.judge,          // what a failure becomes
	} {
		if phase(d) {
			return
		}
	}
	w.settle(d)
}

// open gives d its log and its run's context, bounded by its deadline.
func (w *Worker) open(d *delivery) {
	d.start = time.Now()
	d.log = w.log.With().Str("request", d.req.ID()).Str("verb", d.req.Verb).Str("branch", d.req.BranchID).Int("attempt", d.attempt).Logger()
	ctx, cancel := context.WithCancelCause(w.hardCtx)
	d.later(func() { cancel(nil) })
	if d.deadline = w.deadline(d.req); !d.deadline.IsZero() {
		var cancelDeadline context.CancelFunc
		ctx, cancelDeadline = context.WithDeadline(ctx, d.deadline)
		d.later(cancelDeadline)
	}
	d.ctx, d.cancel = ctx, cancel
	if d.ticket != nil {
		w.lanes.revocable(d.ticket, cancel)
	}
}

// register makes d's request cancellable by its client, and keeps it in
// progress with the server while it is handled. A request the client
// cancelled before it started is answered canceled (or with its stored
// answer); a second delivery of an id already running here is postponed.
func (w *Worker) register(d *delivery) (settled bool) {
	remove, added := w.cancels.add(d.req.ID(), d.cancel)
	switch added {
	case wasCancelled:
		if !w.cancelledBefore(d, nil) {
			w.settle(d)
		}
		return true
	case alreadyRunning:
		// Another delivery of the same request (published twice without
		// a message id) runs here: come back when it has been answered.
		w.health.info(d.log).Msg("request already running in this worker; delivery postponed")
		_ = d.msg.NakWithDelay(w.cfg.Backoff.Delay(1))
		return true
	}
	d.later(remove)
	d.later(w.keepAlive(d.msg, d.req.ID()))
	return false
}

// cancelledBefore settles d, a request its client cancelled, with its
// stored answer when it was answered before and reports true: a cancel
// that came after the answer (a late Ctrl-C), whether this delivery
// learned of it on arrival or while it waited for its turn behind the
// delivery that answered, does not replace that answer. Otherwise d.err
// becomes canceled, wrapping cause, for settle to answer.
func (w *Worker) cancelledBefore(d *delivery, cause error) bool {
	if w.answerFromStore(d) {
		return true
	}
	d.err = &ops.Error{Code: ops.CodeCanceled, Message: fmt.Sprintf("request %s was cancelled by the client", d.req.ID()), Err: cause}
	return false
}

// awaitTurn waits for d's turn in its lane and, across workers, takes the
// lane's lease.
func (w *Worker) awaitTurn(d *delivery) (settled bool) {
	t := d.ticket
	if t == nil {
		return false
	}
	select {
	case <-t.ready:
	case <-d.ctx.Done():
		d.err = context.Cause(d.ctx)
		return false
	}
	if w.lanes.leaser == nil {
		return false
	}
	if err := w.lanes.hold(d.ctx, t); err != nil {
		d.err = err
		if d.ctx.Err() == nil {
			what := "branch " + d.req.BranchID
			if t.claim {
				what = "request " + d.req.ID()
			}
			d.err = &ops.Error{Code: ops.CodeUnavailable, Temporary: true, Err: err,
				Message: fmt.Sprintf("the lease of %s could not be taken: %v", what, err)}
		}
	}
	return false
}

// answeredBefore answers d from the results stream when its request was
// answered before: a redelivery, or a request without a branch of its own
// to remember it by.
//
// The first delivery of a request on a branch skips this lookup: a
// request published again after it was answered (as another message, past
// the duplicate window) is recognised by the branch's commits, read with
// the branch, and answered from history without a model call; a read-only
// verb reads again.
func (w *Worker) answeredBefore(d *delivery) (settled bool) {
	if d.err != nil || (d.attempt == 1 && d.req.BranchID != "" && !d.claim()) {
		return false
	}
	return w.answerFromStore(d)
}

// execute runs the handler on d's request, unless d failed already or its
// deadline attribute has passed, with d's events batched (Config.Events).
func (w *Worker) execute(d *delivery) (settled bool) {
	if d.err != nil {
		return false
	}
	if !d.req.Deadline.IsZero() && !time.Now().Before(d.req.Deadline) {
		// Answered already (answeredBefore) or not at all: too late to run.
		d.err = context.DeadlineExceeded
		return false
	}
	req := d.req
	op := ops.Request{
		ID: req.ID(), Verb: req.Verb, BranchID: req.BranchID, Data: req.Data, TraceParent: req.TraceParent,
		Source: req.Event.Source(), Attempt: d.attempt, LastAttempt: w.lastDelivery(d.attempt),
		Resume: d.msg.Headers().Get(ResumeHeader),
	}
	if w.cfg.Events != nil {
		d.events = w.cfg.Events.Open(d.req.ID())
		d.later(func() {
			if d.events != nil {
				// Not awaited (handed back): close the batch at once.
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				_ = d.events(ctx)
			}
		})
	}
	var ctx context.Context
	var endSpan func(error)
	if w.cfg.Tracer != nil {
		ctx, endSpan = tracing.StartRequest(d.ctx, w.cfg.Tracer, op, d.req.TraceParent, d.req.TraceState)
	} else {
		ctx = protocol.ContextWithTraceParent(d.ctx, d.req.TraceParent, d.req.TraceState)
	}
	ctx = withAnnotations(ctx, &d.notes)
	if w.cfg.MaxYielded > 0 {
		ctx = ops.WithSlotYield(ctx, d.slot.yield)
	}
	d.res, d.err = w.run(ctx, op)
	if endSpan != nil {
		endSpan(d.err)
	}
	if d.ticket != nil && !d.ticket.claim {
		// A claim is kept until the answer is stored (the deferred
		// leave), so that a copy waiting for it finds the answer.
		w.lanes.leave(d.ticket)
	}
	return false
}

// judge decides what d's failure, if any, becomes: a request whose lease
// was lost, or that a stopping worker abandons, is handed back for
// redelivery; a cancelled one is answered canceled; one past its deadline
// is answered timeout; any other error is answered (or retried) as it is.
func (w *Worker) judge(d *delivery) (settled bool) {
	if d.err == nil {
		return false
	}
	var handedBack bool
	if handedBack, d.err = w.handBack(d.ctx, d.msg, d.attempt, d.log, d.err); handedBack {
		return true
	}
	byClient := errors.Is(context.Cause(d.ctx), ErrCanceledByClient)
	if w.hardCtx.Err() != nil && !byClient {
		if !w.lastDelivery(d.attempt) {
			// The worker is stopping hard: hand the request back, to be
			// delivered again once this worker's open fetch has ended
			// (not into it).
			d.log.Warn().Err(d.err).Msg("request abandoned by a stopping worker; it will be redelivered")
			_ = d.msg.NakWithDelay(w.cfg.FetchWait)
			return true
		}
		// No delivery is left after this one: a nak would leave the
		// request unanswered for good, so answer it instead.
		d.log.Warn().Err(d.err).Msg("request abandoned by a stopping worker on its last delivery; answered unavailable")
		// Temporary: on the last delivery that answers it and records it
		// as a dead letter.
		d.err = &ops.Error{
			Code:      ops.CodeUnavailable,
			Message:   fmt.Sprintf("request %s was abandoned by a stopping worker on its last allowed delivery (%d)", d.req.ID(), d.attempt),
			Err:       d.err,
			Temporary: true,
		}
	}
	if byClient && w.cancelledBefore(d, d.err) {
		return true
	}
	if !d.deadline.IsZero() && !time.Now().Before(d.deadline) && w.hardCtx.Err() == nil {
		// Past its deadline a request is not retried: answered timeout.
		d.err = &ops.Error{Code: ops.CodeTimeout, Err: d.err, Message: fmt.Sprintf(
			"request %s passed its deadline %s", d.req.ID(), d.deadline.UTC().Format(time.RFC3339Nano))}
	}
	return false
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
