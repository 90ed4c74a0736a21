package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/lionbus/lionbus/pkg/bus/batch"
	"github.com/lionbus/lionbus/pkg/bus/chunks"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/lionbus/lionbus/pkg/bus/events"
	"github.com/lionbus/lionbus/pkg/bus/internal/logs"
	"github.com/lionbus/lionbus/pkg/bus/internal/retry"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/retention"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/bus/tracing"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
	"github.com/lionbus/lionbus/schemas"
)

// Defaults of [Config].
const (
	// DefaultStartupTimeout bounds how long Start retries provisioning
	// while JetStream is not ready (a cluster still electing a leader).
	// Each attempt's API requests are bounded by provision.RequestTimeout,
	// so that one unanswered request costs an attempt, not the whole
	// startup timeout.
	DefaultStartupTimeout = 30 * time.Second

	// Bounds of the embedded server's max_payload when Config.Embedded
	// leaves it 0. Answers (a long branch.get, say) can be larger than
	// requests, and a request over the worker's limit must still reach a
	// worker to be answered with payload_too_large, so the server allows
	// twice what the worker accepts, within these bounds.
	embeddedMinMaxPayload = 8 << 20  // 8 MiB, the largest NATS recommends
	embeddedMaxMaxPayload = 64 << 20 // 64 MiB, the largest NATS allows

	// Backoff of provisioning retries: the pause doubles from the first
	// to the max delay, less up to half at random.
	provisionFirstDelay = 250 * time.Millisecond
	provisionMaxDelay   = 5 * time.Second
)

// Sentinel errors of [Start].
var (
	// ErrInvalidConfig is returned (wrapped) for a [Config] Start cannot
	// use.
	ErrInvalidConfig = errors.New("bus: invalid config")
	// ErrNotReady is returned (wrapped) when JetStream did not become
	// ready within Config.StartupTimeout.
	ErrNotReady = errors.New("JetStream not ready")
)

// Config says how [Start] builds a worker service. The zero value runs an
// embedded NATS server on the default port with the scripted model provider.
type Config struct {
	// Conn is an existing connection to use. When nil, Start connects with
	// Connect, or, when Connect.URL is "", starts an embedded server with
	// Embedded and connects to it. A connection passed in is not closed by
	// [Service.Close].
	Conn *nats.Conn

	// Connect says how to reach a NATS server. Connect.URL "" means the
	// embedded server. Connect.Name defaults to "lionbus-worker <name>".
	Connect client.ConnectConfig

	// Embedded configures the embedded server (used when Conn is nil and
	// Connect.URL is ""). Embedded.MaxPayload 0 means twice
	// Provision.MaxPayload, at least 8 MiB and at most 64 MiB.
	Embedded embedded.Config

	// Provision configures the streams, consumer and buckets, and the
	// request size limit of the codec.
	Provision provision.Config

	// StartupTimeout bounds the provisioning retries while JetStream is not
	// ready: provision.Ensure is run again, after a pause growing from
	// 250ms to 5s, until it succeeds or StartupTimeout has passed; each of
	// its API requests gives up after provision.RequestTimeout. Default
	// DefaultStartupTimeout.
	StartupTimeout time.Duration

	// Store configures the JetStream store of branches. A zero Logger
	// means Logger with component=store.
	Store store.Config

	// Providers resolves model references. Nil means a registry holding
	// the scripted provider only; a registry passed in is used as it is.
	Providers *ops.Providers

	// Operations are the named operations served as op.NAME (see
	// [ops.Operations]). Nil means none; operations may be registered
	// after Start too.
	Operations *ops.Operations

	// Middles are the operate middles beyond the built-in ones (see
	// [ops.Middles]). Nil means the built-in ones only.
	Middles *ops.Middles

	// Observer is told about every model and tool call (metrics); see
	// ops.Config.Observer.
	Observer ops.Observer

	// Tracer, when set, makes OpenTelemetry spans of every request, model
	// call, tool call and store operation (see package tracing); nil
	// means no tracing. It is also the worker's Config.Tracer unless that
	// is set.
	Tracer trace.Tracer

	// Tools runs the tool calls of act (see [ops.Config]); nil means no
	// tools, so every call is answered as an unknown tool.
	// [ops.ToolFuncs] serves Go functions in the worker's process.
	Tools ops.Invoker

	// Authorizer gates act's tool calls once the branch's list of tools
	// allowed them; nil means no further gate.
	Authorizer ops.Authorizer

	// MaxConcurrentTools bounds how many tool calls one act request runs
	// at once; 0 means ops.DefaultMaxConcurrentTools.
	MaxConcurrentTools int

	// ContextProviders are offered the action responses of every operate
	// (see [ops.ContextProvider]).
	ContextProviders []ops.ContextProvider

	// RunLogDir is the run log directory of runs with stream_persist that
	// name none: their logs go to
	// <prefix>.runlog.<RunLogDir>.<id>.chunks and .snapshot. "" means
	// ops.DefaultRunLogDir; see ops.Config.RunLogDir.
	RunLogDir string

	// Clock is the engine's clock; nil means time.Now.
	Clock func() time.Time

	// Sleep is the engine's wait (between the reformat rounds of parsing);
	// nil means a timer. See [ops.Config].
	Sleep func(ctx context.Context, d time.Duration) error

	// Worker configures the worker loop; its Middleware wraps the engine.
	// A zero Logger means Logger. Its Events is set by Start (the signal
	// sink).
	Worker worker.Config

	// Batches configures the batch driver the service runs beside its
	// worker (package batch); its Name defaults to the worker's name and
	// its Logger to Logger with component=batch.
	Batches batch.Config

	// NoBatches runs no batch driver: the worker still serves the
	// requests of batch items, but drives no batch.
	NoBatches bool

	// Retention, with a positive DeletedAfter, runs a sweeper beside the
	// worker that purges the history of branches deleted longer ago
	// (package retention); its Logger defaults to Logger with
	// component=retention. The zero value keeps deleted branches'
	// events until a branch.delete with purge.
	Retention retention.Config

	// LiveRetention, with a positive KeepEvents or MaxAge, runs a
	// compactor beside the worker that trims the history of branches that
	// are not deleted (package retention, docs/history.md#retention);
	// its Logger defaults as Retention's. The zero value keeps every
	// event of a live branch.
	LiveRetention retention.LiveConfig

	// WorkerContext is the context the worker runs under: cancelling it
	// stops the worker hard (in-flight requests are cancelled and left for
	// redelivery). Nil means a context that only Stop ends.
	WorkerContext context.Context

	// Logger receives the logs of every part, each with a component
	// field. The zero value discards them.
	Logger zerolog.Logger
}

// Service is a running worker and everything it runs on: the connection
// (and the embedded server, if Start started one), the provisioned
// resources, the store, the signal sink, the engine and the worker. Build it
// with [Start]; end it with [Service.Stop] and [Service.Close].
type Service struct {
	srv    *embedded.Server // nil when joining a server
	nc     *nats.Conn
	ownsNC bool
	js     jetstream.JetStream
	res    *provision.Resources
	store  *store.Store
	engine *ops.Engine
	worker *worker.Worker
	driver *batch.Driver
	sweep  *retention.Sweeper
	trim   *retention.Compactor
	log    zerolog.Logger
}

// Start builds and starts a worker service from cfg: it connects (or starts
// the embedded server and connects to it), provisions the streams, consumer
// and buckets (retrying while JetStream is not ready, for at most
// cfg.StartupTimeout), and starts a worker that runs an ops.Engine over the
// JetStream store, publishing the engine's signals as events. It is the one
// place that wires lionbus's parts together; cmd/worker and the test
// harnesses use it.
//
// The worker runs until [Service.Stop]; cancelling ctx only bounds the
// start itself. On error everything started so far is released.
func Start(ctx context.Context, cfg Config) (_ *Service, err error) {
	if cfg.StartupTimeout < 0 {
		return nil, fmt.Errorf("%w: StartupTimeout must not be negative", ErrInvalidConfig)
	}
	if cfg.StartupTimeout == 0 {
		cfg.StartupTimeout = DefaultStartupTimeout
	}
	pcfg, err := cfg.Provision.WithDefaults()
	if err != nil {
		return nil, err
	}
	// The worker's name and source are settled first: the connection name
	// and the signal events use them too.
	cfg.Worker = cfg.Worker.WithIdentity()
	s := &Service{log: cfg.Logger}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err := s.connect(ctx, cfg, pcfg.MaxPayload); err != nil {
		return nil, err
	}
	if s.js, err = jetstream.New(s.nc); err != nil {
		return nil, fmt.Errorf("bus: jetstream: %w", err)
	}
	if s.res, err = ensure(ctx, s.js, pcfg, cfg.StartupTimeout, s.log); err != nil {
		return nil, fmt.Errorf("bus: provision streams and buckets: %w", err)
	}
	for _, d := range s.res.Drift {
		s.log.Warn().Str("drift", d).Msg("existing resource differs in a tunable setting; left unchanged")
	}
	if err := s.build(cfg); err != nil {
		return nil, err
	}
	// The worker outlives ctx: Stop ends it gracefully, rather than the
	// start context cancelling its requests.
	wctx := cfg.WorkerContext
	if wctx == nil {
		wctx = context.WithoutCancel(ctx)
	}
	if err := s.worker.Start(wctx); err != nil {
		return nil, err
	}
	if !cfg.NoBatches {
		bcfg := cfg.Batches
		if bcfg.Name == "" {
			bcfg.Name = cfg.Worker.Name
		}
		if logs.Discards(bcfg.Logger) {
			bcfg.Logger = s.log.With().Str("component", "batch").Logger()
		}
		if s.driver, err = batch.New(s.nc, s.res, bcfg); err != nil {
			return nil, err
		}
		if err := s.driver.Start(wctx); err != nil {
			return nil, err
		}
	}
	if cfg.Retention.DeletedAfter > 0 {
		rcfg := cfg.Retention
		if logs.Discards(rcfg.Logger) {
			rcfg.Logger = s.log.With().Str("component", "retention").Logger()
		}
		if s.sweep, err = retention.New(s.js, s.res, s.store, rcfg); err != nil {
			return nil, err
		}
		if err := s.sweep.Start(wctx); err != nil {
			return nil, err
		}
	}
	if cfg.LiveRetention.KeepEvents > 0 || cfg.LiveRetention.MaxAge > 0 {
		lcfg := cfg.LiveRetention
		if logs.Discards(lcfg.Logger) {
			lcfg.Logger = s.log.With().Str("component", "retention").Logger()
		}
		if s.trim, err = retention.NewCompactor(s.js, s.res, s.store, lcfg); err != nil {
			return nil, err
		}
		if err := s.trim.Start(wctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// connect sets s.nc (and s.srv) from cfg.
func (s *Service) connect(ctx context.Context, cfg Config, requestLimit int) error {
	if cfg.Conn != nil {
		s.nc = cfg.Conn
		return nil
	}
	cc := cfg.Connect
	if cc.URL == "" {
		ecfg := cfg.Embedded
		if ecfg.MaxPayload == 0 {
			ecfg.MaxPayload = int32(max(embeddedMinMaxPayload, min(2*requestLimit, embeddedMaxMaxPayload)))
		}
		if logs.Discards(ecfg.Logger) {
			ecfg.Logger = s.log.With().Str("component", "nats-server").Logger()
			if s.log.GetLevel() > zerolog.DebugLevel {
				ecfg.Logger = ecfg.Logger.Level(max(s.log.GetLevel(), zerolog.WarnLevel))
			}
		}
		srv, err := embedded.Start(ctx, ecfg)
		if err != nil {
			return fmt.Errorf("bus: start embedded NATS: %w", err)
		}
		s.srv = srv
		cc.URL = srv.ClientURL()
	}
	if cc.Name == "" {
		cc.Name = "lionbus-worker " + cfg.Worker.Name
	}
	if logs.Discards(cc.Logger) {
		cc.Logger = s.log.With().Str("component", "nats").Logger()
	}
	nc, err := client.Connect(ctx, cc)
	if err != nil {
		return err
	}
	s.nc, s.ownsNC = nc, true
	return nil
}

// build makes the store, the signal sink, the engine and the worker.
func (s *Service) build(cfg Config) error {
	wcfg := cfg.Worker
	if logs.Discards(wcfg.Logger) {
		wcfg.Logger = s.log
	}
	scfg := cfg.Store
	if logs.Discards(scfg.Logger) {
		scfg.Logger = s.log.With().Str("component", "store").Logger()
	}
	var err error
	if s.store, err = store.New(s.js, s.res, scfg); err != nil {
		return err
	}
	providers := cfg.Providers
	if providers == nil {
		providers = ops.NewProviders(nil)
		if err := scripted.Register(providers); err != nil {
			return err
		}
	}
	// Lifecycle and message-added signals become CloudEvents on
	// <prefix>.events.<branch>.<type>, kept in the events stream.
	sink, err := events.NewSink(s.js, s.res, protocol.EventBuilder{Source: wcfg.Source}, s.log.With().Str("component", "events").Logger())
	if err != nil {
		return err
	}
	// The worker batches each request's events: published without
	// waiting, all stored before the request is acknowledged.
	wcfg.Events = sink
	// Chunks of runs and streamed calls become CloudEvents on
	// <prefix>.chunk.<request id>, kept in the chunk stream.
	outlet, err := chunks.NewOutlet(s.js, s.res, protocol.EventBuilder{Source: wcfg.Source})
	if err != nil {
		return err
	}
	runLog, err := chunks.NewRunLog(s.js, s.res, protocol.EventBuilder{Source: wcfg.Source})
	if err != nil {
		return err
	}
	engineLog := s.log.With().Str("component", "ops").Logger()
	var st history.Store = s.store
	observer := cfg.Observer
	if cfg.Tracer != nil {
		st = tracing.Store(st, cfg.Tracer)
		observer = ops.Observers(tracing.Observer{Tracer: cfg.Tracer}, observer)
		if wcfg.Tracer == nil {
			wcfg.Tracer = cfg.Tracer
		}
	}
	s.engine, err = ops.NewEngine(ops.Config{
		Store:      st,
		Observer:   observer,
		Providers:  providers,
		Operations: cfg.Operations,
		Middles:    cfg.Middles,
		Tools:      cfg.Tools,
		Authorizer: cfg.Authorizer,
		Signals:    sink,
		Logger:     engineLog,
		Clock:      cfg.Clock,
		Sleep:      cfg.Sleep,

		MaxConcurrentTools: cfg.MaxConcurrentTools,
		ContextProviders:   cfg.ContextProviders,
		Chunks:             outlet,
		RunLog:             runLog,
		RunLogDir:          cfg.RunLogDir,
	})
	if err != nil {
		return err
	}
	// A broken embedded schema stops the start, before any request.
	if err := schemas.Compile(); err != nil {
		return err
	}
	codec, err := protocol.NewCodec(protocol.CodecConfig{Prefix: s.res.Config.Prefix, MaxPayload: s.res.Config.MaxPayload, Validator: schemas.Validator{}})
	if err != nil {
		return err
	}
	s.worker, err = worker.New(s.nc, s.res, codec, s.engine, wcfg)
	return err
}

// ensure runs provision.Ensure until it succeeds, retrying with backoff
// (jittered) while JetStream is not ready, for at most timeout. Each attempt
// is cut short by an API request unanswered for provision.RequestTimeout,
// not only by the timeout. A conflicting or invalid configuration fails at
// once.
func ensure(ctx context.Context, js jetstream.JetStream, cfg provision.Config, timeout time.Duration, log zerolog.Logger) (*provision.Resources, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	backoff := retry.Backoff{First: provisionFirstDelay, Max: provisionMaxDelay}
	for {
		res, err := provision.Ensure(ctx, js, cfg)
		if err == nil {
			return res, nil
		}
		if errors.Is(err, provision.ErrConfigConflict) || errors.Is(err, provision.ErrInvalidConfig) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w after %s: %w", ErrNotReady, timeout, err)
		}
		delay := backoff.Next()
		log.Warn().Err(err).Int("attempt", backoff.Failures()).Dur("retry_in", delay).Msg("JetStream not ready; retrying")
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w after %s: %w", ErrNotReady, timeout, err)
		case <-t.C:
		}
	}
}

// URL returns the URL of the NATS server the service is connected to,
// credentials redacted ([client.RedactURL]).
func (s *Service) URL() string { return client.RedactURL(s.nc.ConnectedUrl()) }

// Server returns the embedded server, or nil when the service joined one.
func (s *Service) Server() *embedded.Server { return s.srv }

// Conn returns the service's NATS connection.
func (s *Service) Conn() *nats.Conn { return s.nc }

// JetStream returns the service's JetStream handle.
func (s *Service) JetStream() jetstream.JetStream { return s.js }

// Resources returns the provisioned streams, consumer and buckets.
func (s *Service) Resources() *provision.Resources { return s.res }

// Store returns the branch store.
func (s *Service) Store() *store.Store { return s.store }

// Engine returns the ops engine the worker runs.
func (s *Service) Engine() *ops.Engine { return s.engine }

// Worker returns the worker.
func (s *Service) Worker() *worker.Worker { return s.worker }

// Ready reports whether the service can serve: nil when its connection is
// up, its worker runs, JetStream answers and every stream, consumer and
// bucket exists (see [worker.Worker.Ready]), else why not. A missing one
// is created again by the worker.
func (s *Service) Ready(ctx context.Context) error {
	if st := s.nc.Status(); st != nats.CONNECTED {
		return fmt.Errorf("bus: connection %s", st)
	}
	select {
	case <-s.worker.Stopped():
		return errors.New("bus: worker stopped")
	default:
	}
	if err := s.worker.Ready(ctx); err != nil {
		return fmt.Errorf("bus: %w", err)
	}
	return nil
}

// Stop drains the worker: no new requests; in-flight ones finish, or are
// cancelled and left for redelivery when ctx ends first (see
// [worker.Worker.Stop]).
//
// Stop follows lionbus's Stop convention (docs/architecture.md, "Stopping
// and logging"): the first call stops and reports how that went; a later
// one waits until the worker has stopped and returns nil, or ctx's error
// when ctx ends first. Close, after it, may be called more than once too.
func (s *Service) Stop(ctx context.Context) error {
	if s.worker == nil {
		return nil
	}
	if s.driver != nil {
		// The batches are let go first, for another worker to drive.
		_ = s.driver.Stop(ctx)
	}
	if s.trim != nil {
		_ = s.trim.Stop(ctx)
	}
	if s.sweep != nil {
		_ = s.sweep.Stop(ctx)
	}
	return s.worker.Stop(ctx)
}

// Close releases the connection (when Start made it) and shuts the embedded
// server down. Call it after Stop.
func (s *Service) Close() {
	if s.nc != nil && s.ownsNC {
		s.nc.Close()
	}
	if s.srv != nil {
		s.srv.Shutdown()
	}
}
