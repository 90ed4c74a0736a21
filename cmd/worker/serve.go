package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nuid"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/lionbus/lionbus/pkg/bus/metrics"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/retention"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/bus/tracing"
	"github.com/lionbus/lionbus/pkg/bus/worker"
)

const (
	shutdownGrace     = 5 * time.Second
	maxRequestPayload = 32 << 20 // bound of --max-payload
)

// serve runs the worker until ctx ends, then drains it.
func serve(ctx context.Context, cfg config, log zerolog.Logger, stdout io.Writer) error {
	tracer, stopTracing, err := tracing.FromEnv(ctx, "lionbus-worker")
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := stopTracing(sctx); err != nil {
			log.Warn().Err(err).Msg("flush traces")
		}
	}()
	if tracer != nil {
		log.Info().Msg("tracing: exporting spans over OTLP/HTTP (OTEL_EXPORTER_OTLP_* set)")
	}
	svc, err := start(ctx, cfg, log, tracer)
	if err != nil {
		return err
	}
	defer svc.Close()

	where := "embedded NATS"
	if svc.Server() == nil {
		where = "NATS"
	}
	url := svc.URL()
	fmt.Fprintf(stdout, "lionbus worker %q serving prefix %q on %s at %s\n", cfg.Name, cfg.Prefix, where, url)

	if cfg.Demo {
		stopTools, err := startDemoTools(ctx, svc, cfg.Prefix, log)
		if err != nil {
			_ = stop(svc, cfg.DrainTimeout, log)
			return fmt.Errorf("demo: %w", err)
		}
		defer stopTools()
		fmt.Fprintf(stdout, "tool services   calculator (calculate, to_celsius) and notes (note_put, note_get, note_list) answer on %s, registered in %s\n",
			svc.Resources().Subjects.Tool("*"), svc.Resources().Subjects.ToolsBucket())
		if err := runDemo(ctx, svc.Conn(), svc.Resources().Subjects, cfg.StoreDir != "" || cfg.NATSURL != "", stdout); err != nil {
			if ctx.Err() == nil {
				_ = stop(svc, cfg.DrainTimeout, log)
				return fmt.Errorf("demo: %w", err)
			}
		}
		if ctx.Err() == nil {
			printTryIt(stdout, url, svc.Resources().Subjects)
		}
	}

	select {
	case <-ctx.Done():
		log.Info().Msg("shutting down: draining in-flight requests")
	case <-svc.Worker().Stopped():
		return errors.New("worker stopped unexpectedly")
	}
	return stop(svc, cfg.DrainTimeout, log)
}

// start brings up (or joins) NATS, provisions the streams and buckets, and
// starts a worker, all through bus.Start.
func start(ctx context.Context, cfg config, log zerolog.Logger, tracer trace.Tracer) (*bus.Service, error) {
	if cfg.NATSURL == "" {
		if err := portFree(cfg.Host, cfg.Port); err != nil {
			return nil, err
		}
	}
	bc, err := busConfig(cfg, log)
	if err != nil {
		return nil, err
	}
	providers, err := newProviders(cfg, log)
	if err != nil {
		return nil, err
	}
	wb, err := newWorkerBudgets(cfg, log)
	if err != nil {
		return nil, err
	}
	if err := wb.wrap(providers); err != nil {
		return nil, err
	}
	// The journal wraps the budget: a call answered from it waits for no
	// budget.
	wj := &workerJournal{log: log}
	if err := wj.wrap(providers, journaledProviders...); err != nil {
		return nil, err
	}
	bc.Providers = providers
	bc.Worker.Middleware = append(bc.Worker.Middleware, wb.annotate)
	bc.Tracer = tracer
	// Tools are the registry's, called over NATS (--demo serves two example
	// tool services beside the worker).
	wt := newWorkerTools(cfg)
	wt.configure(&bc, wj)
	var obs *observability
	if cfg.MetricsAddr != "" {
		if obs, err = newObservability(); err != nil {
			return nil, err
		}
		bc.Worker.Middleware = append(bc.Worker.Middleware, obs.metrics.Handler)
		bc.Store.Observer = obs.store
		bc.Worker.OnDeadLetter = obs.metrics.DeadLettered
		bc.Observer = obs.metrics
		if wb.metrics, err = metrics.Budget(obs.reg); err != nil {
			return nil, err
		}
	}
	svc, err := bus.Start(ctx, bc)
	if err == nil {
		wj.attach(svc)
		if err = wt.attach(ctx, svc, log); err != nil {
			svc.Close()
			return nil, fmt.Errorf("tool registry: %w", err)
		}
	}
	if err == nil {
		if err = wb.attach(ctx, svc, svc.Worker().Name()+"."+nuid.Next()); err != nil {
			svc.Close()
			return nil, fmt.Errorf("model budgets: %w", err)
		}
	}
	if err == nil && obs != nil {
		if err = obs.serve(cfg.MetricsAddr, svc, log); err != nil {
			svc.Close()
			return nil, err
		}
	}
	switch {
	case err == nil:
		return svc, nil
	case cfg.NATSURL == "" && errors.Is(err, embedded.ErrServerNotReady):
		return nil, fmt.Errorf("start embedded NATS on %s:%d: %w", cfg.Host, cfg.Port, err)
	case errors.Is(err, bus.ErrNotReady):
		return nil, fmt.Errorf("%w (--startup-timeout %s)", err, cfg.StartupTimeout)
	}
	return nil, err
}

// busConfig is the service configuration the worker's flags in cfg say:
// the embedded server, or the deployment at --nats, and the worker. With
// the embedded server, --user/--password or --token (or their files) are
// what its clients must present, the worker included.
func busConfig(cfg config, log zerolog.Logger) (bus.Config, error) {
	bc := bus.Config{
		Provision: provision.Config{
			Prefix:        cfg.Prefix,
			Replicas:      cfg.Replicas,
			MaxPayload:    cfg.MaxPayload,
			AckWait:       cfg.AckWait,
			LeaseTTL:      cfg.LeaseTTL,
			MaxAckPending: cfg.MaxAckPending,
			LeaseStorage:  cfg.LeaseStorage,
		},
		Store:          store.Config{CacheBranches: cfg.CacheBranches, CacheBytes: cfg.CacheBytes},
		StartupTimeout: cfg.StartupTimeout,
		RunLogDir:      cfg.RunLogDir,
		Retention:      retention.Config{DeletedAfter: cfg.DeletedHistoryRetention},
		LiveRetention:  retention.LiveConfig{KeepEvents: cfg.HistoryKeepEvents, MaxAge: cfg.HistoryMaxAge},
		Worker: worker.Config{
			Name:            cfg.Name,
			MaxInFlight:     cfg.Concurrency,
			DrainTimeout:    cfg.DrainTimeout,
			RequestLogLevel: cfg.RequestLogLevel,
			HealthInterval:  cfg.HealthInterval,
		},
		Logger: log,
	}
	if cfg.NATSURL != "" {
		bc.Connect = cfg.Credentials.ConnectConfig(cfg.NATSURL, "lionbus-worker "+cfg.Name, cfg.ConnTimeout)
		return bc, nil
	}
	password, token, err := cfg.Credentials.Secrets()
	if err != nil {
		return bc, err
	}
	bc.Embedded = embedded.Config{Host: cfg.Host, Port: cfg.Port, StoreDir: cfg.StoreDir,
		User: cfg.User, Password: password, Token: token}
	bc.Connect = client.ConnectConfig{User: cfg.User, Password: password, Token: token}
	return bc, nil
}

// stop drains the worker: no new requests, in-flight ones finish within
// drainTimeout (then they are cancelled and left for redelivery).
func stop(svc *bus.Service, drainTimeout time.Duration, log zerolog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout+shutdownGrace)
	defer cancel()
	err := svc.Stop(ctx)
	if errors.Is(err, worker.ErrDrainTimeout) {
		log.Warn().Err(err).Msg("drain timed out: in-flight requests were abandoned (cancelled, left for redelivery to another worker); exiting 0")
		return nil
	}
	if err == nil {
		log.Info().Msg("worker drained")
	}
	return err
}

// portFree fails fast, with advice, when the embedded server's port is
// taken (the server itself would only time out).
func portFree(host string, port int) error {
	if port <= 0 {
		return nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("embedded NATS cannot listen on %s:%d (%w): is another NATS server or worker running? Use --port N, or --port -1 for a free port", host, port, err)
	}
	return l.Close()
}
