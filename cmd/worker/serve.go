package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
)

// Bounds of the embedded server's max_payload. Answers (a long branch.get,
// say) can be larger than requests, and a request over the worker's limit
// must still reach a worker to be answered with payload_too_large, so the
// server allows more than the worker accepts.
const (
	embeddedMinMaxPayload = 8 << 20  // 8 MiB, the largest NATS recommends
	embeddedMaxMaxPayload = 64 << 20 // 64 MiB, the largest NATS allows
	maxRequestPayload     = 32 << 20 // bound of --max-payload
	shutdownGrace         = 5 * time.Second
	// Backoff of provisioning retries while JetStream is not ready.
	provisionFirstDelay = 250 * time.Millisecond
	provisionMaxDelay   = 5 * time.Second
)

// service is a running worker and what it runs on.
type service struct {
	url    string
	srv    *bus.Server // nil when joining a deployment
	nc     *nats.Conn
	res    *bus.Resources
	worker *bus.Worker
	log    zerolog.Logger
}

// serve runs the worker until ctx ends, then drains it.
func serve(ctx context.Context, cfg config, log zerolog.Logger, stdout io.Writer) error {
	svc, err := start(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer svc.close()

	where := "embedded NATS"
	if svc.srv == nil {
		where = "NATS"
	}
	fmt.Fprintf(stdout, "lionbus worker %q serving prefix %q on %s at %s\n", cfg.Name, cfg.Prefix, where, svc.url)

	if cfg.Demo {
		if err := runDemo(ctx, svc.nc, svc.res.Subjects, cfg.StoreDir != "" || cfg.NATSURL != "", stdout); err != nil {
			if ctx.Err() == nil {
				_ = svc.stop(cfg.DrainTimeout)
				return fmt.Errorf("demo: %w", err)
			}
		}
		if ctx.Err() == nil {
			printTryIt(stdout, svc.url, svc.res.Subjects)
		}
	}

	select {
	case <-ctx.Done():
		log.Info().Msg("shutting down: draining in-flight requests")
	case <-svc.worker.Stopped():
		return errors.New("worker stopped unexpectedly")
	}
	return svc.stop(cfg.DrainTimeout)
}

// start brings up (or joins) NATS, provisions the streams and buckets, and
// starts a worker over a store, an engine and the model providers.
func start(ctx context.Context, cfg config, log zerolog.Logger) (_ *service, err error) {
	svc := &service{log: log}
	defer func() {
		if err != nil {
			svc.close()
		}
	}()

	requestLimit := cfg.MaxPayload
	if requestLimit == 0 {
		requestLimit = bus.DefaultMaxPayload
	}
	svc.url = cfg.NATSURL
	if svc.url == "" {
		serverPayload := max(embeddedMinMaxPayload, min(2*requestLimit, embeddedMaxMaxPayload))
		srvLog := log.With().Str("component", "nats-server").Logger()
		if log.GetLevel() > zerolog.DebugLevel {
			srvLog = srvLog.Level(max(log.GetLevel(), zerolog.WarnLevel))
		}
		if err := portFree(cfg.Host, cfg.Port); err != nil {
			return nil, err
		}
		svc.srv, err = bus.StartServer(ctx, bus.ServerConfig{
			Host:       cfg.Host,
			Port:       cfg.Port,
			StoreDir:   cfg.StoreDir,
			MaxPayload: int32(serverPayload),
			Logger:     srvLog,
		})
		if err != nil {
			return nil, fmt.Errorf("start embedded NATS on %s:%d: %w", cfg.Host, cfg.Port, err)
		}
		svc.url = svc.srv.ClientURL()
	}

	cc := cfg.Credentials.ConnectConfig(svc.url, "lionbus-worker "+cfg.Name, cfg.ConnTimeout)
	cc.Logger = log.With().Str("component", "nats").Logger()
	svc.nc, err = bus.Connect(ctx, cc)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(svc.nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	svc.res, err = provision(ctx, js, bus.Config{
		Prefix:     cfg.Prefix,
		Replicas:   cfg.Replicas,
		MaxPayload: requestLimit,
	}, cfg.StartupTimeout, log)
	if err != nil {
		return nil, fmt.Errorf("provision streams and buckets: %w", err)
	}
	for _, d := range svc.res.Drift {
		log.Warn().Str("drift", d).Msg("existing resource differs in a tunable setting; left unchanged")
	}

	store, err := bus.NewStore(js, svc.res, bus.StoreConfig{Logger: log.With().Str("component", "store").Logger()})
	if err != nil {
		return nil, err
	}
	providers := ops.NewProviders(nil)
	if err := scripted.Register(providers); err != nil {
		return nil, err
	}
	// Lifecycle and message-added signals become CloudEvents on
	// <prefix>.events.<branch>.<type>, kept in the events stream.
	sink, err := bus.NewEventSink(js, svc.res, bus.EventBuilder{Source: workerSource(cfg.Name)}, log.With().Str("component", "events").Logger())
	if err != nil {
		return nil, err
	}
	engineLog := log.With().Str("component", "ops").Logger()
	engine, err := ops.NewEngine(ops.Config{Store: store, Providers: providers, Signals: sink, Logger: &engineLog})
	if err != nil {
		return nil, err
	}
	codec, err := bus.NewCodec(svc.res.Config)
	if err != nil {
		return nil, err
	}
	svc.worker, err = bus.NewWorker(svc.nc, svc.res, codec, engine, bus.WorkerConfig{
		Name:         cfg.Name,
		Source:       workerSource(cfg.Name),
		MaxInFlight:  cfg.Concurrency,
		DrainTimeout: cfg.DrainTimeout,
		Logger:       log,
	})
	if err != nil {
		return nil, err
	}
	// The worker outlives ctx: a signal stops it gracefully through stop,
	// not by cancelling its requests.
	if err := svc.worker.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, err
	}
	return svc, nil
}

// workerSource is the CloudEvents source of the worker's answers and
// signal events.
func workerSource(name string) string { return "/lionbus/worker/" + name }

// stop drains the worker: no new requests, in-flight ones finish within
// drainTimeout (then they are cancelled and left for redelivery).
func (s *service) stop(drainTimeout time.Duration) error {
	if s.worker == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout+shutdownGrace)
	defer cancel()
	err := s.worker.Stop(ctx)
	if errors.Is(err, bus.ErrDrainTimeout) {
		s.log.Warn().Err(err).Msg("drain timed out")
		return nil
	}
	if err == nil {
		s.log.Info().Msg("worker drained")
	}
	return err
}

// close releases the connection and the embedded server.
func (s *service) close() {
	if s.nc != nil {
		s.nc.Close()
	}
	if s.srv != nil {
		s.srv.Shutdown()
	}
}

// provision runs bus.Provision until it succeeds, retrying with backoff
// while JetStream is not ready (a cluster still electing its leader, say)
// for at most timeout. A conflicting or invalid configuration fails at once.
func provision(ctx context.Context, js jetstream.JetStream, bc bus.Config, timeout time.Duration, log zerolog.Logger) (*bus.Resources, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	delay := provisionFirstDelay
	for attempt := 1; ; attempt++ {
		res, err := bus.Provision(ctx, js, bc)
		if err == nil {
			return res, nil
		}
		if errors.Is(err, bus.ErrConfigConflict) || errors.Is(err, bus.ErrInvalidConfig) {
			return nil, err
		}
		log.Warn().Err(err).Int("attempt", attempt).Dur("retry_in", delay).Msg("JetStream not ready; retrying")
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("JetStream not ready after %s (--startup-timeout): %w", timeout, err)
		case <-time.After(delay):
		}
		delay = min(2*delay, provisionMaxDelay)
	}
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
