package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/internal/retry"
	"github.com/lionbus/lionbus/pkg/bus/provision"
)

// Health checking (see health).
const (
	// DefaultHealthInterval is how often a worker checks, when nothing
	// made it check sooner, that JetStream answers and that every
	// stream, consumer and bucket it needs exists (Config.HealthInterval).
	DefaultHealthInterval = 5 * time.Second
	// healthRetryFirst and healthRetryMax bound the pause between checks
	// while the worker cannot serve.
	healthRetryFirst = 100 * time.Millisecond
	healthRetryMax   = 2 * time.Second
	// healthEcho is how long after the worker could serve again a failure
	// of a request is still taken for an echo of the trouble it had (a
	// request that failed during it and is retried, or redelivered once
	// its ack wait passed), and not logged: as long as the redeliveries of
	// the requests caught in an outage take to come through.
	healthEcho = 30 * time.Second
	// explainWait bounds how long a failure waits for the check it
	// started (see health.explain).
	explainWait = time.Second
	// explainReuse is how long the outcome of a check that found nothing
	// wrong answers for the failures that follow, without another check:
	// failures of the requests' own (a model refusing) do not make the
	// worker ask JetStream about every stream each time.
	explainReuse = time.Second
)

// ErrNotReady is returned (wrapped) by [Worker.Ready] when the worker
// cannot serve.
var ErrNotReady = errors.New("worker: not ready")

// health follows whether a worker can serve: its connection is up,
// JetStream answers, and every stream, consumer and bucket the worker
// needs exists. It notices trouble from the connection's status, from
// failures of the worker's requests (see explain), from a readiness probe
// (see ready), and by checking every HealthInterval; it creates a missing
// resource again with the configured settings (provision.Resources.Repair),
// from whichever worker notices first.
//
// It logs one line per change of state, not per request: a resource
// created again; the worker unable to serve (JetStream not answering, a
// resource it cannot create), and able to serve again, with how many
// warnings of requests it kept out of the log meanwhile. The loss of the
// connection is logged by the connection itself.
type health struct {
	res      *provision.Resources
	nc       *nats.Conn
	log      zerolog.Logger
	interval time.Duration
	poked    chan struct{}

	mu        sync.Mutex
	up        chan struct{} // closed when the worker can serve again
	back      chan struct{} // closed when the connection is back
	checked   chan struct{} // closed when the check under way (or next) ends
	started   uint64        // checks begun
	finished  uint64        // the last check ended
	problem   error         // why the worker cannot serve; nil: it can
	logged    bool          // the problem was logged
	deep      bool          // the next check looks for streams that do not answer
	clean     time.Time     // when a check looking closely last found nothing wrong
	since     time.Time     // when the problem began
	recovered time.Time     // when the worker could serve again
	quieted   int           // warnings not logged during the problem
	disabled  bool          // the resources cannot be checked (not from Ensure)
}

func newHealth(nc *nats.Conn, res *provision.Resources, interval time.Duration, log zerolog.Logger) *health {
	return &health{res: res, nc: nc, log: log, interval: interval,
		poked: make(chan struct{}, 1), checked: make(chan struct{}), up: make(chan struct{}), back: make(chan struct{})}
}

// run checks until ctx ends: at once, then when poked, when the connection
// comes back, and every interval (more often while there is a problem).
func (h *health) run(ctx context.Context) {
	status := h.nc.StatusChanged(nats.CONNECTED, nats.DISCONNECTED, nats.RECONNECTING, nats.CLOSED)
	defer h.nc.RemoveStatusListener(status)
	backoff := retry.Backoff{First: healthRetryFirst, Max: healthRetryMax}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case st := <-status:
			if st != nats.CONNECTED {
				h.set(fmt.Errorf("%w: connection to NATS %s", ErrNotReady, st), false)
				continue
			}
			h.mu.Lock()
			close(h.back)
			h.back = make(chan struct{})
			h.mu.Unlock()
		case <-h.poked:
		case <-timer.C:
		}
		h.check(ctx)
		if h.isDisabled() {
			return
		}
		next := h.interval
		if h.err() != nil {
			next = backoff.Next()
		} else {
			backoff.Reset()
		}
		if next > 0 {
			timer.Reset(next)
		}
	}
}

// poke asks for a check soon.
func (h *health) poke() {
	select {
	case h.poked <- struct{}{}:
	default:
	}
}

// check looks at the connection, JetStream and the resources, creates
// again what is missing and records the outcome.
func (h *health) check(ctx context.Context) {
	h.mu.Lock()
	h.started++
	n := h.started
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.finished = n
		close(h.checked)
		h.checked = make(chan struct{})
		h.mu.Unlock()
	}()
	if st := h.nc.Status(); st != nats.CONNECTED {
		h.set(fmt.Errorf("%w: connection to NATS %s", ErrNotReady, st), false)
		return
	}
	h.mu.Lock()
	// A failure asked for this check, or the worker cannot serve: look
	// further, for streams that exist but do not answer.
	deep := h.deep || h.problem != nil
	h.deep = false
	h.mu.Unlock()
	missing, err := h.res.Missing(ctx)
	if errors.Is(err, provision.ErrInvalidConfig) {
		// Resources made by hand (tests): nothing to check against.
		h.mu.Lock()
		h.disabled = true
		h.mu.Unlock()
		return
	}
	if err != nil {
		if ctx.Err() == nil {
			h.set(fmt.Errorf("%w: JetStream does not answer: %w", ErrNotReady, err), true)
		}
		return
	}
	if len(missing) > 0 {
		created, err := h.res.Repair(ctx, missing, time.Now())
		for _, res := range created {
			h.logCreated(res)
		}
		if err != nil {
			if ctx.Err() == nil {
				h.set(fmt.Errorf("%w: %s missing and not created again: %w", ErrNotReady, names(missing), err), true)
			}
			return
		}
		h.noteTrouble()
	}
	if deep {
		silent, err := h.res.Unanswered(ctx)
		if err == nil && len(silent) > 0 {
			err = fmt.Errorf("%s do not answer", names(silent))
		}
		if err != nil {
			if ctx.Err() == nil {
				h.set(fmt.Errorf("%w: %w", ErrNotReady, err), true)
			}
			return
		}
		if len(missing) == 0 {
			h.mu.Lock()
			h.clean = time.Now()
			h.mu.Unlock()
		}
	}
	h.set(nil, false)
}

// logCreated logs that res was created again.
func (h *health) logCreated(res provision.Resource) {
	if res.Kind == provision.KindConsumer {
		// The message the fetch loop uses too (see Worker.loop).
		h.log.Warn().Str("consumer", res.Name).Msg("the workers consumer did not exist; created it again")
		return
	}
	h.log.Warn().Str(res.Kind.String(), res.Name).Msgf("the %s did not exist; created it again", res.Kind)
}

// names lists resources for a message.
func names(rs []provision.Resource) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.String()
	}
	return strings.Join(s, ", ")
}

// noteTrouble records that something was wrong just now and is fixed: the
// failures it caused are echoes (see explain).
func (h *health) noteTrouble() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recovered = time.Now()
}

// set records the outcome of a check: problem nil means the worker can
// serve. The first problem of an outage with logIt set is logged (the
// connection logs its own losses), and the end of the outage.
func (h *health) set(problem error, logIt bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	if problem == nil {
		if h.problem != nil {
			h.log.Info().Dur("down_ms", now.Sub(h.since)).Int("suppressed", h.quieted).AnErr("last_problem", h.problem).
				Msg("serving again: connected, JetStream answers, every stream, consumer and bucket is there")
			h.recovered = now
			close(h.up)
			h.up = make(chan struct{})
		}
		h.problem, h.quieted, h.logged = nil, 0, false
		return
	}
	if h.problem == nil {
		h.since = now
	}
	if logIt && !h.logged {
		// Once per outage: the connection logs its own losses, and a
		// change of reason meanwhile is kept for the line that ends it.
		h.log.Warn().Err(problem).Msg("cannot serve")
		h.logged = true
	}
	h.problem = problem
}

// err returns why the worker cannot serve, nil when it can.
func (h *health) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.problem
}

func (h *health) isDisabled() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.disabled
}

// explain reports whether a failure of a request (or a fetch) that just
// happened is explained by trouble the health check knows of: the worker
// cannot serve, or could not a moment ago (healthEcho), or its connection
// is down right now. When it knows of
// none, it checks at once and waits (at most explainWait) for the outcome:
// a check that found something missing, or could not finish in time,
// explains it too. Explained failures are counted, not logged: the check
// logs the trouble once.
func (h *health) explain() bool {
	if h.quiet() {
		return true
	}
	if h.nc.Status() != nats.CONNECTED {
		// The connection is down, and logs that itself: the failure is
		// its echo, even before the check has seen the loss (a wait cut
		// short by the loss can end first).
		return h.count()
	}
	h.mu.Lock()
	if h.disabled || !h.clean.IsZero() && time.Since(h.clean) < explainReuse {
		h.mu.Unlock()
		return false
	}
	// A check under way may have looked before the failure: wait for one
	// that begins after it, and looks closely.
	want := h.started + 1
	h.deep = true
	h.mu.Unlock()
	h.poke()
	timeout := time.NewTimer(explainWait)
	defer timeout.Stop()
	for {
		h.mu.Lock()
		done, ch := h.finished >= want, h.checked
		h.mu.Unlock()
		if done {
			return h.quiet()
		}
		select {
		case <-ch:
		case <-timeout.C:
			return h.count()
		}
	}
}

// quiet reports whether warnings of requests are kept out of the log now,
// counting the one asked about.
func (h *health) quiet() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.problem != nil || !h.recovered.IsZero() && time.Since(h.recovered) < healthEcho {
		h.quieted++
		return true
	}
	return false
}

// count counts a warning kept out of the log and reports true.
func (h *health) count() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.quieted++
	return true
}

// warn returns log's warning event for a failure, or a debug one when the
// failure is explained (see explain).
func (h *health) warn(log zerolog.Logger) *zerolog.Event {
	if h.explain() {
		return log.Debug()
	}
	return log.Warn()
}

// info returns log's info event for a request's notice (a redelivery
// answered from the stored answer, say), or a debug one while the worker
// cannot serve or just could not: then such notices are echoes of the
// trouble, counted, not logged.
func (h *health) info(log zerolog.Logger) *zerolog.Event {
	if h.quiet() {
		return log.Debug()
	}
	return log.Info()
}

// servingAgain returns a channel closed when the worker, unable to serve
// now or later, can serve again.
func (h *health) servingAgain() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.up
}

// connectionBack returns a channel closed when the connection, lost now or
// later, is back (before the worker may know it can serve: in a cluster
// some streams may still be electing their leaders).
func (h *health) connectionBack() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.back
}

// ready reports whether the worker can serve right now, checking the
// connection, JetStream and the resources itself (a readiness probe must
// not wait for the next check); a missing resource makes the worker check
// (and create it again) at once.
func (h *health) ready(ctx context.Context) error {
	if st := h.nc.Status(); st != nats.CONNECTED {
		return fmt.Errorf("%w: connection to NATS %s", ErrNotReady, st)
	}
	if h.isDisabled() {
		return nil
	}
	missing, err := h.res.Missing(ctx)
	if err != nil {
		return fmt.Errorf("%w: JetStream does not answer: %w", ErrNotReady, err)
	}
	if len(missing) > 0 {
		h.poke()
		return fmt.Errorf("%w: %s missing", ErrNotReady, names(missing))
	}
	return h.err()
}
