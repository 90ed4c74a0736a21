package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	opsbudget "github.com/lionbus/lionbus/pkg/ops/budget"
)

// BudgetMetrics are the model budget metrics, all prefixed lionbus_ and
// labelled by model (the budget's key):
//
//	budget_wait_seconds{model}       histogram: time a model call waited for budget
//	budget_tokens_total{model}       counter: tokens (input + output) the providers reported
//	model_cost_usd_total{model}      counter: cost of the model calls by the price table
//	budget_pauses_total{model}       counter: pauses learned from a provider's limit signals
//
// and, without a label:
//
//	budget_members                   gauge: the workers sharing the budgets, as last counted
type BudgetMetrics struct {
	wait    *prometheus.HistogramVec
	tokens  *prometheus.CounterVec
	cost    *prometheus.CounterVec
	pauses  *prometheus.CounterVec
	members prometheus.Gauge
}

// Budget registers the budget metrics with reg.
func Budget(reg prometheus.Registerer) (*BudgetMetrics, error) {
	m := &BudgetMetrics{
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "lionbus", Name: "budget_wait_seconds",
			Help:    "Time a model call waited for its model's budget.",
			Buckets: []float64{0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60},
		}, []string{"model"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "lionbus", Name: "budget_tokens_total",
			Help: "Tokens (input + output) of the metered model calls, by model.",
		}, []string{"model"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "lionbus", Name: "model_cost_usd_total",
			Help: "Cost of the model calls in US dollars by the price table.",
		}, []string{"model"}),
		pauses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "lionbus", Name: "budget_pauses_total",
			Help: "Pauses of a model's budget learned from the provider's rate-limit signals.",
		}, []string{"model"}),
		members: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "lionbus", Name: "budget_members",
			Help: "Workers sharing the fleet's model budgets (each has 1/members of every limit), as last counted.",
		}),
	}
	for _, c := range []prometheus.Collector{m.wait, m.tokens, m.cost, m.pauses, m.members} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Call records one metered model call; it is an ops/budget Config.OnCall.
func (m *BudgetMetrics) Call(r opsbudget.CallReport) {
	m.wait.WithLabelValues(r.Key).Observe(r.Waited.Seconds())
	if r.Used > 0 {
		m.tokens.WithLabelValues(r.Key).Add(float64(r.Used))
	}
	if r.CostUSD > 0 {
		m.cost.WithLabelValues(r.Key).Add(r.CostUSD)
	}
}

// Members records the member count of the fleet's budgets; it is a
// pkg/bus/budget Config.OnMembers.
func (m *BudgetMetrics) Members(n int) { m.members.Set(float64(n)) }

// Paused records a pause learned for model.
func (m *BudgetMetrics) Paused(model string) { m.pauses.WithLabelValues(model).Inc() }
