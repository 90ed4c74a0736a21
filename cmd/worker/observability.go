package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/metrics"
	"github.com/lionbus/lionbus/pkg/bus/store"
)

// observability is the worker's metrics registry and its HTTP endpoint
// (--metrics-addr): /metrics, /healthz and /readyz.
type observability struct {
	reg     *prometheus.Registry
	metrics *metrics.Metrics
	store   store.Observer
}

func newObservability() (*observability, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, err
	}
	m, err := metrics.New(reg)
	if err != nil {
		return nil, err
	}
	so, err := metrics.Store(reg)
	if err != nil {
		return nil, err
	}
	return &observability{reg: reg, metrics: m, store: so}, nil
}

// serve listens on addr and serves the endpoints until svc's worker stops.
func (o *observability) serve(addr string, svc *bus.Service, log zerolog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	srv := &http.Server{Handler: metrics.NewMux(o.reg, svc.Ready), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("metrics endpoint")
		}
	}()
	go func() {
		<-svc.Worker().Stopped()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	log.Info().Str("addr", ln.Addr().String()).Msg("metrics and health on /metrics, /healthz, /readyz")
	return nil
}
