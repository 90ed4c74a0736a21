package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/lionbus/lionbus/pkg/bus/internal/retry"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
)

// Middleware wraps a [Handler] in another, which runs around it: to count
// or time the requests it runs (metrics.Metrics.Handler is one), say. It
// must return a non-nil Handler.
type Middleware func(next Handler) Handler

// Handler runs one decoded request. *ops.Engine satisfies it.
//
// A Handler returns a result, or an error: an *ops.Error with Temporary set
// is retried with backoff; any other error is final and answered with a
// lionbus.error event carrying the error's code (see [protocol.ErrorCode]). The
// context is cancelled when the client cancels the request or the worker
// stops hard; a Handler must then return promptly.
type Handler interface {
	Do(ctx context.Context, req ops.Request) (*ops.Result, error)
}

// HandlerFunc adapts a function to [Handler].
type HandlerFunc func(ctx context.Context, req ops.Request) (*ops.Result, error)

// Do calls f.
func (f HandlerFunc) Do(ctx context.Context, req ops.Request) (*ops.Result, error) {
	return f(ctx, req)
}

// EventBatcher collects the acknowledgements of the events published on
// behalf of a request while its handler runs, so that they are published
// without waiting and awaited all at once; *events.Sink is one. Open
// begins the batch of request id; the returned wait closes it and waits,
// bounded by ctx, until each of its events is stored or failed, returning
// the failures. The worker calls wait once for each Open.
type EventBatcher interface {
	Open(id string) (wait func(ctx context.Context) error)
}

// Defaults of [Config].
const (
	DefaultDrainTimeout = 30 * time.Second
	DefaultFetchWait    = time.Second
	// DefaultMaxInFlight is sized for I/O-bound work: a request mostly
	// waits (on its model, its tools, its store), and a waiting request
	// costs a goroutine. On two cores with an instant model, 64 in flight
	// served 64 clients 1.45x faster than 8 did (make bench-bus); with
	// real models, which answer in seconds, the gap is far larger.
	DefaultMaxInFlight = 64
	// DefaultYieldedPerSlot sizes Config.MaxYielded: so many requests
	// waiting for a model's budget without a slot per request slot.
	DefaultYieldedPerSlot = 4
	// DefaultMaxRequestDuration bounds one request's run (see
	// Config.MaxRequestDuration).
	DefaultMaxRequestDuration = 15 * time.Minute
	// publishTimeout bounds publishing one answer and acknowledging the
	// request.
	publishTimeout = 10 * time.Second
)

// Bounds of the fetch loop's retries.
const (
	// FetchRetryFirst and FetchRetryMax bound the pause after a failed
	// fetch: FetchRetryFirst after the first failure in a row, doubling
	// with each further one up to FetchRetryMax, less up to half at
	// random; a fetch that succeeds starts over. A server that refuses
	// every fetch at once so gets one from a worker every few seconds.
	FetchRetryFirst = 100 * time.Millisecond
	FetchRetryMax   = 5 * time.Second
	// FetchLogInterval spaces out the warnings of failed fetches: the
	// first failure is logged, then at most one per FetchLogInterval, with
	// the number of failures left unlogged in between ("suppressed").
	FetchLogInterval = 10 * time.Second
)

// Sentinel errors of [Worker].
var (
	// ErrInvalidConfig is returned (wrapped) by New for unusable arguments
	// or a Config field out of range.
	ErrInvalidConfig = errors.New("worker: invalid config")
	// ErrWorkerStarted is returned by Start on a worker already started.
	ErrWorkerStarted = errors.New("worker: worker already started")
	// ErrDrainTimeout is returned (wrapped) by Stop when in-flight requests
	// did not finish within the drain timeout and were cancelled; they were
	// not acknowledged, so the server delivers them again.
	ErrDrainTimeout = errors.New("worker: drain timed out; in-flight requests were cancelled and will be redelivered")
	// ErrWorkerStopped is the cause of the context of a request cancelled
	// because its worker stopped hard.
	ErrWorkerStopped = errors.New("worker: worker stopped")
)

// Config configures a [Worker]. The zero value of every field means
// its default.
type Config struct {
	// BranchOrder says how requests on one branch that are in flight at
	// the same time run. Default InOrder.
	BranchOrder BranchOrder

	// Backoff is the delay schedule for retrying temporary failures (see
	// [Backoff.Delay]): a request that failed temporarily on delivery n is
	// redelivered after Backoff[n-1]. Default DefaultBackoff. After the
	// consumer's MaxDeliver deliveries the last attempt answers with the
	// error instead. Likewise a request that a stopping worker abandons
	// on its last delivery is answered with ops.CodeUnavailable, since a
	// nak would leave it unanswered for good.
	Backoff Backoff

	// DrainTimeout bounds how long Stop waits for in-flight requests before
	// cancelling them. Default 30s.
	DrainTimeout time.Duration

	// Events, when set, batches the events each request's handler
	// publishes (bus.Start sets it to its signal sink): a batch is opened
	// before the handler runs and awaited while the answer is published,
	// and the request is acknowledged only once its events are stored (a
	// failure is logged: events never change an outcome). Nil: the
	// handler's publishes are its own affair.
	Events EventBatcher

	// FetchBatch is the most requests fetched at once; a fetch never asks
	// for more than the free slots. Default MaxInFlight.
	FetchBatch int

	// FetchWait is how long one fetch waits for requests to arrive. A stop
	// (graceful or hard) lets the current fetch end, so it also bounds how
	// long stopping waits for the fetch loop. Default 1s.
	FetchWait time.Duration

	// HealthInterval is how often the worker checks, when nothing made it
	// check sooner, that JetStream answers and that every stream,
	// consumer and bucket it needs exists, creating again what is
	// missing (see [Worker.Ready]). A failed request, a failed fetch, a
	// readiness probe and the connection coming back make it check at
	// once. Default DefaultHealthInterval; negative means only then.
	HealthInterval time.Duration

	// Logger receives the worker's logs. The zero value discards them.
	Logger zerolog.Logger

	// Middleware wraps the Handler given to New, the first one outermost:
	// the worker runs Middleware[0](Middleware[1](…(h))). Nil: the Handler
	// as it is.
	Middleware []Middleware

	// MaxRequestDuration bounds how long one request may run (and wait
	// for its branch's turn) on one delivery; past it, or past the
	// request's own deadline attribute when that is sooner, work on it
	// stops and it is answered timeout, not retried. Default
	// DefaultMaxRequestDuration; negative means no bound.
	MaxRequestDuration time.Duration

	// MaxInFlight bounds the requests the worker runs at the same time,
	// counting those waiting for their branch's turn. Default
	// DefaultMaxInFlight (64).
	MaxInFlight int

	// MaxYielded bounds the requests that gave up their slot while they
	// wait for a model's budget (ops.YieldSlot), on top of MaxInFlight:
	// past it a call waits holding its slot. Default MaxInFlight times
	// DefaultYieldedPerSlot; negative means no request gives up its slot.
	MaxYielded int

	// Tracer, when set, makes a span of every request run (see package
	// tracing), parented on its traceparent; the events and tool calls it
	// causes carry the span's traceparent. Nil: no spans, and the
	// request's own traceparent is passed on.
	Tracer trace.Tracer

	// RequestLogLevel is the level of the one log line of each answered
	// request (id, verb, branch, attempt, code, duration): "trace",
	// "debug", "info", "warn" or "disabled". Default "info".
	RequestLogLevel string

	// OnParked keeps a request the handler parked (ops.ErrParked) until
	// it is resumed: it must store it durably before it returns nil (the
	// request is then acknowledged without an answer). nil: a parked
	// request is answered with CodeInternal.
	OnParked func(ctx context.Context, req ParkedRequest) error

	// OnDeadLetter, when set, is called with the reason of every request
	// the worker records in the dead-letter stream (for metrics).
	OnDeadLetter func(reason ops.Code)

	// Name identifies the worker in logs and in the default Source.
	// Default "worker-" followed by a unique id.
	Name string

	// ProgressInterval is how often a running request is reported in
	// progress, which resets the server's ack wait. It must be shorter than
	// the ack wait. Default half the consumer's ack wait.
	ProgressInterval time.Duration

	// Source is the CloudEvents source of the answers the worker
	// publishes. Default "/lionbus/worker/<Name>".
	Source string

	// leasePoll, when set, replaces the first and the longest interval
	// at which a worker polls for a branch lease another worker holds
	// (tests: a poll that never comes shows that the release notice woke
	// the waiter).
	leasePoll time.Duration
}

// BranchOrder says how a worker runs the requests of one branch that are
// in flight at the same time.
type BranchOrder int

const (
	// InOrder runs them one at a time, in the order of their sequence in
	// the requests stream, each seeing what the previous one recorded:
	// what a conversation means, and no operation loses an append race and
	// has to fold messages it never saw. Requests of different branches
	// run in parallel. Across workers, a branch's lease (in the leases
	// stream) lets one worker at a time run its requests.
	InOrder BranchOrder = iota
	// Parallel runs them as they come. Each sees the branch as it was
	// when it started; their recorded exchanges are appended in the order
	// they finish. For independent requests that share a branch only as
	// a place to record (a batch fan-out, say).
	Parallel
)

// lanesFor returns the lanes of order (nil for Parallel), with leases
// across workers when res has the leases stream.
func lanesFor(order BranchOrder, js jetstream.JetStream, res *provision.Resources, cfg Config, h *health) *lanes {
	if order == Parallel {
		return nil
	}
	l := newLanes()
	if res.Leases != nil {
		// The stream's age limit is what ages a lease out, whatever this
		// worker's configuration says.
		ttl := res.Config.LeaseTTL
		if ci := res.Leases.CachedInfo(); ci != nil && ci.Config.MaxAge > 0 {
			ttl = ci.Config.MaxAge
		}
		if ttl <= 0 {
			ttl = provision.DefaultLeaseTTL
		}
		// The worker's name and this process's own token: a lease message
		// that says so was written by this process and no other.
		owner := cfg.Name + "/" + nuid.Next()
		l.leaser = &leaser{nc: js.Conn(), js: js, stream: res.Leases, subj: res.Subjects, ttl: ttl, owner: owner,
			pollFirst: leasePollFirst, pollMax: leasePollMax, linger: ttl / leaseRenewDiv, waiting: map[string][]chan struct{}{}, stale: map[string]uint64{},
			log: cfg.Logger.With().Str("worker", cfg.Name).Logger(), health: h}
		if cfg.leasePoll > 0 {
			l.leaser.pollFirst, l.leaser.pollMax = cfg.leasePoll, cfg.leasePoll
		}
	}
	return l
}

// WithIdentity returns c with its Name and Source defaults filled in: Name
// "worker-" followed by a unique id, Source "/lionbus/worker/<Name>". New
// applies it; code that publishes on the worker's behalf (its signal sink)
// applies it first, so that both use the same source.
func (c Config) WithIdentity() Config {
	if c.Name == "" {
		c.Name = "worker-" + nuid.Next()
	}
	if c.Source == "" {
		c.Source = "/lionbus/worker/" + c.Name
	}
	return c
}

// Worker consumes requests from the shared durable consumer, runs them with
// a [Handler] and publishes their answers.
//
// For each request it: decodes and validates it (bad input is answered with
// a lionbus.error event and terminated, never retried); answers it from the
// results stream when it was answered before, without running it again;
// runs the handler, reporting progress to the server while it runs; then
// publishes the result or error to <prefix>.reply.<id> (kept in the results
// stream) and to the request's replyto if that differs, and acknowledges the
// request only after the server stored the answer. Temporary failures are
// retried with backoff; a handler panic is answered with an internal error.
//
// Several workers, in one process or many, share the consumer; each runs at
// most MaxInFlight requests and fetches no more than it has room for.
//
// Limitations, all on a request's last allowed delivery (the consumer's
// MaxDeliver): when its answer cannot be stored (the server unreachable for
// the whole publish timeout) it is logged and lost, since no delivery is
// left to retry it; and a delivery postponed because the same request id is
// already running in this worker is not delivered again, the running one
// answering for both.
type Worker struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	res     *provision.Resources
	subj    protocol.Subjects
	codec   *protocol.Codec
	h       Handler
	cfg     Config
	log     zerolog.Logger
	builder protocol.EventBuilder

	ackWait      time.Duration
	maxDeliver   int
	requestLevel zerolog.Level

	// consumer is the shared consumer fetched from: res.Workers, until the
	// fetch loop (its only user once started) obtains it again.
	consumer jetstream.Consumer
	fetches  atomic.Int64 // fetch requests sent

	slots   chan struct{}
	yielded atomic.Int64 // requests waiting with their slot given up (slotYield)
	debt    atomic.Int64 // requests running without a slot, each owed the next one freed
	cancels *cancels
	lanes   *lanes // nil: requests of one branch run in parallel
	health  *health

	mu        sync.Mutex // guards started, stopping and the fields set by Start
	started   bool
	stopping  bool                    // Stop was called
	fetchStop context.CancelFunc      // ends the fetch loop (graceful stop)
	hardStop  context.CancelCauseFunc // cancels running handlers
	hardCtx   context.Context         // parent of every handler context
	fetchCtx  context.Context         // ends with fetchStop or hardStop
	cancelSub *nats.Subscription
	wantSub   *nats.Subscription // other workers asking for a branch's lease
	deadSub   *nats.Subscription // the server's max-deliveries advisories

	wg        sync.WaitGroup // the loop and every handler
	stopped   chan struct{}  // closed when everything returned
	closeOnce sync.Once
}

// NewWorker returns a worker consuming res.Workers with codec and h. It does
// not start it (see Start).
func New(nc *nats.Conn, res *provision.Resources, codec *protocol.Codec, h Handler, cfg Config) (*Worker, error) {
	if nc == nil || res == nil || res.Workers == nil || res.Results == nil || codec == nil || h == nil {
		return nil, fmt.Errorf("%w: New needs a connection, provisioned Resources, a Codec and a Handler", ErrInvalidConfig)
	}
	if cfg.MaxInFlight < 0 || cfg.FetchBatch < 0 || cfg.DrainTimeout < 0 || cfg.FetchWait < 0 || cfg.ProgressInterval < 0 {
		return nil, fmt.Errorf("%w: Config fields must not be negative", ErrInvalidConfig)
	}
	for _, d := range cfg.Backoff {
		if d < 0 {
			return nil, fmt.Errorf("%w: Config.Backoff has a negative delay", ErrInvalidConfig)
		}
	}
	for i := len(cfg.Middleware) - 1; i >= 0; i-- {
		if h = cfg.Middleware[i](h); h == nil {
			return nil, fmt.Errorf("%w: Config.Middleware[%d] returned no Handler", ErrInvalidConfig, i)
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("worker: jetstream: %w", err)
	}
	ci := res.Workers.CachedInfo()
	ackWait, maxDeliver := res.Config.AckWait, res.Config.MaxDeliver
	if ci != nil {
		ackWait, maxDeliver = ci.Config.AckWait, ci.Config.MaxDeliver
	}
	if ackWait <= 0 {
		ackWait = provision.DefaultAckWait
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.MaxYielded == 0 {
		cfg.MaxYielded = cfg.MaxInFlight * DefaultYieldedPerSlot
	}
	if cfg.MaxRequestDuration == 0 {
		cfg.MaxRequestDuration = DefaultMaxRequestDuration
	}
	if cfg.FetchBatch == 0 || cfg.FetchBatch > cfg.MaxInFlight {
		cfg.FetchBatch = cfg.MaxInFlight
	}
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = DefaultDrainTimeout
	}
	if cfg.FetchWait == 0 {
		cfg.FetchWait = DefaultFetchWait
	}
	if cfg.ProgressInterval == 0 {
		cfg.ProgressInterval = ackWait / 2
	}
	if cfg.ProgressInterval >= ackWait {
		return nil, fmt.Errorf("%w: ProgressInterval %s must be shorter than the consumer's ack wait %s",
			ErrInvalidConfig, cfg.ProgressInterval, ackWait)
	}
	if cfg.Backoff == nil {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.RequestLogLevel == "" {
		cfg.RequestLogLevel = "info"
	}
	requestLevel, err := zerolog.ParseLevel(cfg.RequestLogLevel)
	if err != nil || requestLevel > zerolog.WarnLevel && requestLevel != zerolog.Disabled {
		return nil, fmt.Errorf("%w: RequestLogLevel %q: want trace, debug, info, warn or disabled", ErrInvalidConfig, cfg.RequestLogLevel)
	}
	if cfg.HealthInterval == 0 {
		cfg.HealthInterval = DefaultHealthInterval
	}
	cfg = cfg.WithIdentity()
	log := cfg.Logger.With().Str("worker", cfg.Name).Logger()
	hl := newHealth(nc, res, cfg.HealthInterval, log)
	return &Worker{
		nc:           nc,
		js:           js,
		res:          res,
		subj:         res.Subjects,
		codec:        codec,
		h:            h,
		cfg:          cfg,
		log:          log,
		builder:      protocol.EventBuilder{Source: cfg.Source},
		ackWait:      ackWait,
		maxDeliver:   maxDeliver,
		requestLevel: requestLevel,
		consumer:     res.Workers,
		slots:        make(chan struct{}, cfg.MaxInFlight),
		cancels:      newCancels(),
		lanes:        lanesFor(cfg.BranchOrder, js, res, cfg, hl),
		health:       hl,
		stopped:      make(chan struct{}),
	}, nil
}

// Name returns the worker's name.
func (w *Worker) Name() string { return w.cfg.Name }

// Start starts consuming in the background and returns at once. Cancelling
// ctx stops the worker hard: no new fetches, and running handlers are
// cancelled without their requests being acknowledged, so that the server
// delivers them again (to another worker); a request on its last allowed
// delivery (MaxDeliver) is answered with ops.CodeUnavailable instead. It returns ErrWorkerStarted when
// called twice.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return ErrWorkerStarted
	}
	w.started = true
	sub, err := w.nc.Subscribe(w.subj.CancelWildcard(), func(m *nats.Msg) {
		if id, ok := strings.CutPrefix(m.Subject, w.subj.Cancel("")); ok && protocol.ValidToken(id) {
			w.cancels.cancel(id)
		}
	})
	if err != nil {
		w.closeStopped()
		return fmt.Errorf("worker: worker: subscribe to cancels: %w", err)
	}
	w.cancelSub = sub
	if w.lanes != nil && w.lanes.leaser != nil {
		wantPrefix := w.subj.LeaseWant("")
		if w.wantSub, err = w.nc.Subscribe(w.subj.LeaseWantWildcard(), func(m *nats.Msg) {
			rest, ok := strings.CutPrefix(m.Subject, wantPrefix)
			if !ok {
				return
			}
			// Both look the key up among this worker's own leases and
			// waits: a key that names none (or no lease at all) is a no-op.
			if key, free := strings.CutSuffix(rest, protocol.LeaseFreeSuffix); free {
				w.lanes.leaser.freed(key)
				return
			}
			w.lanes.wanted(rest)
		}); err != nil {
			_ = w.cancelSub.Unsubscribe()
			w.closeStopped()
			return fmt.Errorf("worker: subscribe to lease requests: %w", err)
		}
	}
	if w.res.Ops != nil {
		if w.deadSub, err = w.subscribePoison(); err != nil {
			_ = w.cancelSub.Unsubscribe()
			if w.wantSub != nil {
				_ = w.wantSub.Unsubscribe()
			}
			w.closeStopped()
			return fmt.Errorf("worker: subscribe to max-deliveries advisories: %w", err)
		}
	}
	w.hardCtx, w.hardStop = context.WithCancelCause(ctx)
	w.fetchCtx, w.fetchStop = context.WithCancel(w.hardCtx)
	healthCtx, stopHealth := context.WithCancel(w.hardCtx)
	healthDone := make(chan struct{})
	go func() {
		defer close(healthDone)
		w.health.run(healthCtx)
	}()
	w.wg.Add(1)
	go w.loop()
	go func() {
		w.wg.Wait()
		stopHealth()
		<-healthDone
		w.lanes.releaseAll()
		_ = w.cancelSub.Unsubscribe()
		if w.wantSub != nil {
			_ = w.wantSub.Unsubscribe()
		}
		if w.deadSub != nil {
			_ = w.deadSub.Unsubscribe()
		}
		w.hardStop(ErrWorkerStopped)
		w.closeStopped()
	}()
	w.log.Info().Int("max_in_flight", w.cfg.MaxInFlight).Dur("ack_wait", w.ackWait).Msg("worker started")
	return nil
}

// awaitStopped waits until w has stopped (nil) or ctx ends (its error,
// wrapped), whichever comes first; stopped wins when both have.
func (w *Worker) awaitStopped(ctx context.Context) error {
	select {
	case <-w.stopped:
		return nil
	default:
	}
	select {
	case <-w.stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("worker: worker stop: %w", ctx.Err())
	}
}

func (w *Worker) closeStopped() { w.closeOnce.Do(func() { close(w.stopped) }) }

// Stopped returns a channel that is closed when the worker has stopped:
// its fetch loop and every handler have returned. Besides Stop and the
// cancellation of Start's context, a worker stops by itself when its
// connection is closed (a connection that is only disconnected is waited
// for).
func (w *Worker) Stopped() <-chan struct{} { return w.stopped }

// Stop stops the worker gracefully: it fetches no more requests and waits
// for the running ones to finish and be answered. When they have not
// finished after DrainTimeout, or when ctx ends first, it cancels them (they
// are not acknowledged and will be redelivered) and waits for their
// handlers to return, until ctx ends.
//
// It returns nil when every running request finished, ErrDrainTimeout
// (wrapped) when some had to be cancelled, or ctx's error when ctx ended
// before the handlers returned. Stop on a worker never started returns nil.
//
// Stop follows lionbus's Stop convention (docs/architecture.md, "Stopping
// and logging"): it may be called any number of times, from any
// goroutine. The first call stops the worker and reports how that went; a
// later one, during that stop or after it, does nothing more: it waits
// until the worker has stopped and returns nil, or ctx's error (wrapped)
// when ctx ends first.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	if !w.started {
		// Never started: there is nothing to drain, and it cannot start.
		w.started, w.stopping = true, true
		w.mu.Unlock()
		w.closeStopped()
		return nil
	}
	first := !w.stopping
	w.stopping = true
	fetchStop, hardStop := w.fetchStop, w.hardStop
	w.mu.Unlock()
	if !first || fetchStop == nil { // stopping already, or Start failed
		return w.awaitStopped(ctx)
	}

	fetchStop()
	timer := time.NewTimer(w.cfg.DrainTimeout)
	defer timer.Stop()
	select {
	case <-w.stopped:
		return nil
	case <-timer.C:
	case <-ctx.Done():
	}
	running := len(w.slots)
	hardStop(ErrWorkerStopped)
	select {
	case <-w.stopped:
		return fmt.Errorf("%w (%d requests)", ErrDrainTimeout, running)
	case <-ctx.Done():
		return fmt.Errorf("worker: worker stop: %w", ctx.Err())
	}
}

// loop fetches requests while there are free slots and starts a handler
// goroutine for each. A fetch reserves the slots it asks for, and the next
// fetch starts when it ended (it ends as soon as it holds what it asked
// for), so requests are admitted in the order the server delivers them.
//
// A failed fetch is retried after a pause that grows with each failure in
// a row (see FetchRetryFirst), and logged at most once per
// FetchLogInterval. When the failure says that the consumer is gone
// (deleted, or no server answers for it), the loop provisions it again
// (see [provision.Resources.EnsureWorkers]) and, when it had to create it,
// fetches from it at once.
func (w *Worker) loop() {
	defer w.wg.Done()
	failures := fetchFailures{
		backoff: retry.Backoff{First: FetchRetryFirst, Max: FetchRetryMax},
		log:     w.log,
	}
	for {
		// Wait for one free slot, then take every other free one, up to
		// FetchBatch.
		select {
		case w.slots <- struct{}{}:
		case <-w.fetchCtx.Done():
			return
		}
		n := 1
	take:
		for n < w.cfg.FetchBatch {
			select {
			case w.slots <- struct{}{}:
				n++
			default:
				break take
			}
		}
		// The fetch is never cut short, not even by a hard stop: the
		// server ends it after FetchWait, and a message it delivered just
		// before that must not be dropped unseen (it would wait a whole
		// ack wait for its redelivery). So a stop takes effect within
		// FetchWait.
		w.fetches.Add(1)
		batch, err := w.consumer.Fetch(n, jetstream.FetchMaxWait(w.cfg.FetchWait))
		if err != nil {
			w.release(n)
		} else {
			// One fetch at a time, dispatched here: requests enter their
			// branch's lane in delivery order. Nothing waits for it:
			// while the batch is open, the server sends it every new
			// request until it holds n, and then it ends at once.
			err = w.dispatch(batch, n)
		}
		if w.fetchCtx.Err() != nil {
			return
		}
		if err == nil {
			failures.succeeded()
			continue
		}
		if w.nc.IsClosed() {
			// A closed connection never comes back (a disconnected one
			// does, and is retried below): stop instead of retrying
			// forever.
			w.log.Error().Err(err).Msg("connection closed; worker stops")
			return
		}
		delay := failures.failed()
		var ensureErr error
		if consumerGone(err) {
			var created bool
			if created, ensureErr = w.ensureConsumer(); created {
				w.log.Warn().Err(err).Str("consumer", w.res.Subjects.WorkersConsumer()).
					Msg("the workers consumer did not exist; created it again")
				w.health.noteTrouble()
				continue
			}
		}
		// A failure the health check explains (the connection lost, a
		// stream missing) is its to log, once.
		ev := w.log.Debug()
		if !w.health.explain() {
			ev = failures.warn(time.Now())
		}
		ev.Err(err).AnErr("ensure_consumer", ensureErr).Dur("retry_in", delay).Msg("fetch requests")
		w.pause(delay)
	}
}

// consumerGone reports whether err, from a fetch, may mean that the
// consumer does not exist. A fetch from a deleted consumer ends with
// jetstream.ErrConsumerDeleted; later fetches find no one to answer them
// (nats.ErrNoResponders), as they do while a consumer in a cluster has no
// leader.
func consumerGone(err error) bool {
	return errors.Is(err, jetstream.ErrConsumerDeleted) ||
		errors.Is(err, jetstream.ErrConsumerNotFound) ||
		errors.Is(err, nats.ErrNoResponders)
}

// ensureConsumer provisions the shared consumer again, creating it when it
// does not exist, fetches from it from now on, and reports whether it
// created it. A stop cuts it short.
func (w *Worker) ensureConsumer() (bool, error) {
	c, created, err := w.res.EnsureWorkers(w.fetchCtx)
	if err != nil {
		return false, err
	}
	w.consumer = c
	return created, nil
}

// fetchFailures follows the failed fetches of a worker's loop: how long to
// pause after each, and which to log.
type fetchFailures struct {
	backoff    retry.Backoff
	log        zerolog.Logger
	lastLog    time.Time // of the last warning
	suppressed int       // failures not logged since the last warning
	logged     bool      // a failure of the current run was logged
}

// failed records a failed fetch and returns how long to pause.
func (f *fetchFailures) failed() time.Duration { return f.backoff.Next() }

// warn returns the warning event for the failure just recorded: a real one
// when no warning was logged for FetchLogInterval, else a nil event, which
// logs nothing, and the failure is counted as suppressed.
func (f *fetchFailures) warn(now time.Time) *zerolog.Event {
	if !f.lastLog.IsZero() && now.Sub(f.lastLog) < FetchLogInterval {
		f.suppressed++
		return nil
	}
	ev := f.log.Warn().Int("failures", f.backoff.Failures()).Int("suppressed", f.suppressed)
	f.lastLog, f.suppressed, f.logged = now, 0, true
	return ev
}

// succeeded ends a run of failed fetches, saying so when one of them was
// logged.
func (f *fetchFailures) succeeded() {
	if f.backoff.Failures() == 0 {
		return
	}
	if f.logged {
		f.log.Info().Int("failures", f.backoff.Failures()).Int("suppressed", f.suppressed).Msg("fetching requests again")
		f.suppressed = 0
	}
	f.backoff.Reset()
	f.logged = false
}

// dispatch admits each request of batch (see admit) and starts its
// handler; batch holds n reserved slots, and the ones it did not use are
// freed when it ends. It returns the error the batch ended with, unless
// the batch merely expired or the worker is stopping.
func (w *Worker) dispatch(batch jetstream.MessageBatch, n int) error {
	used := 0
	for msg := range batch.Messages() {
		if w.fetchCtx.Err() != nil && !w.lastDelivery(deliveryAttempt(msg)) {
			// Stopping: hand it back for another worker, delayed past
			// this worker's open fetch (which the server would otherwise
			// fill with it again, each time a delivery spent). A request
			// on its last delivery would never come back, so it runs here
			// (a graceful stop drains it; a hard stop answers it
			// unavailable).
			_ = msg.NakWithDelay(w.cfg.FetchWait)
			continue
		}
		used++
		d := w.admit(msg)
		w.wg.Add(1)
		go w.handle(d)
	}
	w.release(n - used)
	if err := batch.Error(); err != nil && w.fetchCtx.Err() == nil &&
		!errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// release frees n slots (each pays a debt first, see freeSlot).
func (w *Worker) release(n int) {
	for range n {
		w.freeSlot()
	}
}

// pause waits d, or until the fetch loop is to end, or the connection is
// back after it was lost, or the worker can serve again after it could
// not.
func (w *Worker) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.health.connectionBack():
	case <-w.health.servingAgain():
	case <-w.fetchCtx.Done():
	}
}

// Ready reports whether the worker can serve: nil when it runs, its
// connection is up, JetStream answers and every stream, consumer and
// bucket it needs exists; else an error wrapping ErrNotReady (or
// ErrWorkerStopped) that says why. It asks JetStream (two API requests,
// each bounded by ctx and provision.RequestTimeout), for a readiness
// probe; a missing resource it finds is created again at once, by the
// worker's health check.
func (w *Worker) Ready(ctx context.Context) error {
	select {
	case <-w.stopped:
		return ErrWorkerStopped
	default:
	}
	return w.health.ready(ctx)
}
