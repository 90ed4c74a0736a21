package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gathered returns the metric of family name on reg whose labels are
// exactly labels (nil: none), or nil when there is none.
func gathered(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue metrics
				}
			}
			return m
		}
	}
	return nil
}

// counter returns the value of the counter of name with labels on reg,
// failing the test when there is none.
func counter(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	m := gathered(t, reg, name, labels)
	if m == nil {
		t.Fatalf("no %s%v", name, labels)
	}
	return m.GetCounter().GetValue()
}

// histCount is the sample count of the histogram of name with labels (0
// when there is none).
func histCount(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	return float64(gathered(t, reg, name, labels).GetHistogram().GetSampleCount())
}

// gauge is the value of the gauge of name with labels.
func gauge(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	m := gathered(t, reg, name, labels)
	if m == nil {
		t.Fatalf("no %s%v", name, labels)
	}
	return m.GetGauge().GetValue()
}
