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
//     first.
//
// Verbs are the served ones and "op" for every named operation, so the
// label's values are bounded.
package metrics

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

// Metrics are the collectors of one worker.
type Metrics struct {
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	inFlight   prometheus.Gauge
	redelivery *prometheus.CounterVec
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
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.inFlight, m.redelivery} {
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
	var oe *ops.Error
	if errors.As(err, &oe) && oe.Code != "" {
		return string(oe.Code)
	}
	return string(ops.CodeInternal)
}
