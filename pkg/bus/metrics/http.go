package metrics

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ReadyTimeout bounds the check /readyz makes.
const ReadyTimeout = 2 * time.Second

// Ready reports whether the worker can serve: nil when it can, else why not.
type Ready func(ctx context.Context) error

// NewMux returns the HTTP handlers of a worker: /metrics from gatherer,
// /healthz answering 200 while the process runs, and /readyz answering 200
// when ready returns nil within ReadyTimeout, else 503 with the reason.
func NewMux(gatherer prometheus.Gatherer, ready Ready) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
		defer cancel()
		if err := ready(ctx); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}
