// Package metrics exposes a worker's Prometheus metrics and its health
// over HTTP: /metrics, /healthz (the process is alive) and /readyz (it is
// connected and its consumer answers).
//
// Metrics, all prefixed lionbus_:
//
//   - requests_total{verb,code}: requests run to an outcome, code "ok"
//     for a result, else the error code;
//   - request_duration_seconds{verb}: how long running a request took;
//   - requests_in_flight: requests running now;
//   - redeliveries_total{verb}: runs of a request on a delivery after its
//     first;
//   - model_call_duration_seconds{provider,outcome}: model calls, outcome
//     "ok" or "error" ([Metrics.ModelCall], an ops.Observer);
//   - model_tokens_total{provider,direction}: tokens the providers
//     reported, direction "input" or "output";
//   - tool_call_duration_seconds{tool,outcome}: tool invocations, outcome
//     "ok", "tool_error" (the tool answered an error), "timeout",
//     "no_service" or "error";
//   - dead_letters_total{reason}: requests this worker recorded in the
//     dead-letter stream, by error code ([Metrics.DeadLettered]);
//   - store_append_conflicts_total, store_snapshots_total,
//     store_snapshot_bytes, store_rebuilds_total: see [Store].
//
// Verbs are the served ones and "op" for every named operation, so the
// label's values are bounded; providers are the registered ones, and tools
// those of the registry.
package metrics

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

// Metrics are the collectors of one worker.
type Metrics struct {
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	inFlight   prometheus.Gauge
	redelivery *prometheus.CounterVec
	dead       *prometheus.CounterVec
	modelCalls *prometheus.HistogramVec
	tokens     *prometheus.CounterVec
	toolCalls  *prometheus.HistogramVec
}

// New creates the collectors and registers them with reg.
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "lionbus", Name: "requests_total",
			Help: "Requests run to an outcome, by verb and outcome code (ok for a result).",
		}, []string{"verb", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "lionbus", Name: "request_duration_seconds",
			Help:    "Time running a request took, by verb.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"verb"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "lionbus", Name: "requests_in_flight",
			Help: "Requests running now.",
		}),
		redelivery: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "lionbus", Name: "redeliveries_total",
			Help: "Runs of a request on a delivery after its first, by verb.",
		}, []string{"verb"}),
		dead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "lionbus", Name: "dead_letters_total",
			Help: "Requests recorded in the dead-letter stream, by error code.",
		}, []string{"reason"}),
	}
	m.modelCalls = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "lionbus", Name: "model_call_duration_seconds",
		Help:    "Time model calls took, by provider and outcome (ok or error).",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
	}, []string{"provider", "outcome"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "lionbus", Name: "model_tokens_total",
		Help: "Tokens reported by model providers, by provider and direction (input or output).",
	}, []string{"provider", "direction"})
	m.toolCalls = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "lionbus", Name: "tool_call_duration_seconds",
		Help:    "Time tool invocations took, by tool and outcome (ok, tool_error, timeout, no_service, error).",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"tool", "outcome"})
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.inFlight, m.redelivery, m.dead, m.modelCalls, m.tokens, m.toolCalls} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Handler wraps h, counting and timing every request it runs.
func (m *Metrics) Handler(h worker.Handler) worker.Handler {
	return worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		verb := verbLabel(req.Verb)
		if req.Attempt > 1 {
			m.redelivery.WithLabelValues(verb).Inc()
		}
		m.inFlight.Inc()
		start := time.Now()
		res, err := h.Do(ctx, req)
		m.duration.WithLabelValues(verb).Observe(time.Since(start).Seconds())
		m.inFlight.Dec()
		m.requests.WithLabelValues(verb, outcome(err)).Inc()
		return res, err
	})
}

// DeadLettered counts a dead letter; it is a worker.Config.OnDeadLetter.
// Codes are a fixed set, so the label's values are bounded.
func (m *Metrics) DeadLettered(reason ops.Code) { m.dead.WithLabelValues(string(reason)).Inc() }

// ModelCall times a model call and counts its tokens (ops.Observer).
func (m *Metrics) ModelCall(ctx context.Context, call ops.Call) (context.Context, func(*ops.Completion, error)) {
	start := time.Now()
	return ctx, func(c *ops.Completion, err error) {
		outcome := "ok"
		if err != nil {
			outcome = "error"
		}
		m.modelCalls.WithLabelValues(call.Model.Provider, outcome).Observe(time.Since(start).Seconds())
		if c != nil && c.Usage != nil {
			m.tokens.WithLabelValues(call.Model.Provider, "input").Add(float64(max(c.Usage.InputTokens, 0)))
			m.tokens.WithLabelValues(call.Model.Provider, "output").Add(float64(max(c.Usage.OutputTokens, 0)))
		}
	}
}

// ToolCall times a tool invocation by its outcome (ops.Observer).
func (m *Metrics) ToolCall(ctx context.Context, call ops.ToolInvocation) (context.Context, func(ops.ToolOutcome, error)) {
	start := time.Now()
	return ctx, func(out ops.ToolOutcome, err error) {
		outcome := "ok"
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			outcome = "timeout"
		case errors.Is(err, ops.ErrNoTool), errors.Is(err, ops.ErrNoService):
			outcome = "no_service"
		case err != nil:
			outcome = "error"
		case out.Error != nil:
			outcome = "tool_error"
		}
		m.toolCalls.WithLabelValues(call.Function, outcome).Observe(time.Since(start).Seconds())
	}
}

// verbLabel bounds the verb label: every named operation is "op".
func verbLabel(verb string) string {
	if strings.HasPrefix(verb, "op.") {
		return "op"
	}
	return verb
}

// outcome is "ok" or the error's code.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	if errors.Is(err, ops.ErrParked) {
		return "parked" // waits for an approval; answered when resumed
	}
	var oe *ops.Error
	if errors.As(err, &oe) && oe.Code != "" {
		return string(oe.Code)
	}
	return string(ops.CodeInternal)
}

// storeObserver counts a store's events (see store.Observer).
type storeObserver struct {
	conflicts prometheus.Counter
	snapshots prometheus.Counter
	snapBytes prometheus.Histogram
	rebuilds  prometheus.Counter
	misses    prometheus.Counter
}

func (o *storeObserver) AppendConflict(string) { o.conflicts.Inc() }

func (o *storeObserver) SnapshotWritten(_ string, bytes int) {
	o.snapshots.Inc()
	o.snapBytes.Observe(float64(bytes))
}

func (o *storeObserver) Rebuilt(string) { o.rebuilds.Inc() }

func (o *storeObserver) CacheMiss(string) { o.misses.Inc() }

// Store returns a store.Observer counting, on reg:
// lionbus_store_append_conflicts_total (appends that found another
// writer first), lionbus_store_snapshots_total and
// lionbus_store_snapshot_bytes (snapshots written and their size),
// lionbus_store_rebuilds_total (branches loaded by folding their whole
// history), and lionbus_store_cache_misses_total (branches read from the
// stream because the worker did not keep them in memory).
func Store(reg prometheus.Registerer) (store.Observer, error) {
	o := &storeObserver{
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "lionbus", Subsystem: "store", Name: "append_conflicts_total",
			Help: "Appends that found another writer had appended first."}),
		snapshots: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "lionbus", Subsystem: "store", Name: "snapshots_total",
			Help: "Branch snapshots written."}),
		snapBytes: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "lionbus", Subsystem: "store", Name: "snapshot_bytes",
			Help: "Size of the branch snapshots written (their segments not counted).", Buckets: prometheus.ExponentialBuckets(512, 4, 8)}),
		rebuilds: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "lionbus", Subsystem: "store", Name: "rebuilds_total",
			Help: "Branches loaded without a usable snapshot, by folding their whole history."}),
		misses: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "lionbus", Subsystem: "store", Name: "cache_misses_total",
			Help: "Branches read from the stream because they were not kept in memory (--cache-bytes, --cache-branches)."}),
	}
	for _, c := range []prometheus.Collector{o.conflicts, o.snapshots, o.snapBytes, o.rebuilds, o.misses} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return o, nil
}
