package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Defaults of a [ServiceConfig].
const (
	// DefaultToolTimeout bounds an invocation that carries no deadline.
	DefaultToolTimeout = 30 * time.Second
	// DefaultHeartbeat is how often a service checks its registry entries
	// and writes back any that is missing or changed.
	DefaultHeartbeat = 5 * time.Second
	// DefaultMaxConcurrent is how many handlers one service runs at once.
	DefaultMaxConcurrent = 64
	// DefaultPrefix is the subject prefix of lionbus.
	DefaultPrefix = "lion"
)

// ErrInvalidConfig is matched (errors.Is) by every error of [Serve] about
// its [ServiceConfig] or a [Tool].
var ErrInvalidConfig = errors.New("tools: invalid service config")

// Handler runs one invocation of a tool: args are the invocation's
// arguments, already checked against the tool's schema. Its output must be
// JSON-encodable. A returned *wire.ToolError (see [Errorf]) is answered with
// its code; any other error with code wire.ToolErrorFailed. ctx ends when the
// invocation's deadline passes, the caller cancels it, or the service is
// stopped hard.
type Handler func(ctx context.Context, args map[string]any) (any, error)

// Errorf returns a tool error with a code of the tool's own, for a
// [Handler] to return.
func Errorf(code, format string, args ...any) *wire.ToolError {
	return &wire.ToolError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Tool declares one tool of a service.
type Tool struct {
	// Description tells a model what the tool does.
	Description string
	// Handler runs an invocation. Required.
	Handler Handler
	// Name is the tool's name, 1 to MaxNameLength characters of
	// [A-Za-z0-9_-]. Required.
	Name string
	// Parameters is the JSON Schema (2020-12) of the arguments object.
	// Nil means {"type": "object"}.
	Parameters json.RawMessage
	// Timeout bounds an invocation that carries no deadline. 0 means
	// DefaultToolTimeout.
	Timeout time.Duration
	// Version is the tool's version in its registry entry; "" means the
	// service's version.
	Version string
}

// ServiceConfig configures a tool service.
type ServiceConfig struct {
	// Description describes the service (micro's INFO).
	Description string
	// Heartbeat is how often the service writes back its registry entries
	// when they are missing or changed (another replica that stopped
	// removed them). 0 means DefaultHeartbeat.
	Heartbeat time.Duration
	// Logger receives the service's log records. The zero value discards
	// them.
	Logger zerolog.Logger
	// MaxConcurrent bounds how many handlers run at once; an invocation
	// waits for a free slot until its deadline, then is answered
	// CodeBusy. 0 means DefaultMaxConcurrent.
	MaxConcurrent int
	// Name is the micro service name (shown by `nats micro ls`), of
	// [A-Za-z0-9_-]. Required.
	Name string
	// Prefix is the lionbus subject prefix. "" means DefaultPrefix.
	Prefix string
	// ResultWindow is how long results are remembered by idempotency key
	// when the service creates the results bucket (an existing bucket
	// keeps its own). 0 means DefaultResultWindow; a negative value turns
	// remembering off: every invocation runs the handler.
	ResultWindow time.Duration
	// StartupTimeout bounds how long Serve keeps trying to open the
	// registry and results buckets, and to write the registry entries,
	// while JetStream does not answer (a cluster still forming, a leader
	// being elected): each try gives up after 5s, the next follows after
	// a pause of 250ms doubling to 5s. Serve's ctx bounds it too. 0 means
	// DefaultStartupTimeout.
	StartupTimeout time.Duration
	// Tools are the tools the service serves. At least one.
	Tools []Tool
	// Compile compiles each tool's parameters schema at Serve, which
	// refuses a schema it cannot compile; every invocation's arguments
	// are then checked against it before the handler runs (code
	// invalid_arguments otherwise). Set it to toolschema.Compile (package
	// pkg/tools/toolschema, JSON Schema 2020-12). nil: the schemas are
	// checked for their shape only and handlers get the arguments object
	// unchecked, so that a service links no schema compiler.
	Compile Compiler
	// Version is the service's semantic version, e.g. "1.0.0". Required.
	Version string
}

// tool is a declared tool, ready to serve.
type tool struct {
	Tool
	entry   Entry
	check   func(args map[string]any) error // nil: no schema check
	subject string
	stats   toolStats
}

// Service serves tools over NATS: each tool is an endpoint of a nats.go
// micro service on "<prefix>.tool.<name>" in the queue group named after
// the tool, so replicas share the load, and has an entry in the registry
// bucket "<prefix>_tools". Create one with [Serve].
type Service struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	svc     micro.Service
	tools   map[string]*tool
	reg     jetstream.KeyValue
	results *resultStore // nil: remembering off
	log     zerolog.Logger
	cfg     ServiceConfig
	source  string
	sem     chan struct{}
	codec   *protocol.Codec

	ctx       context.Context // ends on a hard stop
	cancel    context.CancelFunc
	gate      sync.Mutex     // orders running.Add after a stop check before Stop's Wait
	running   sync.WaitGroup // the invocations being answered
	stopped   atomic.Bool
	done      chan struct{}
	hbStop    chan struct{}
	hbDone    chan struct{}
	hbFailing bool // the last heartbeat failed (heartbeat goroutine only)
	cancels   []*nats.Subscription

	mu       sync.Mutex
	inflight map[string]map[*context.CancelFunc]struct{} // idempotency key -> handler cancels
}

// Serve starts serving cfg's tools on nc: it validates the config (an
// error wraps ErrInvalidConfig), opens the registry and results buckets
// (creating the results bucket when missing; the registry bucket is
// created by the worker's provisioning, or here when missing), writes the
// registry entries and adds the micro service. Opening the buckets and
// writing the entries are tried again while JetStream does not answer, for
// at most cfg.StartupTimeout. It returns once serving; the service runs until
// [Service.Stop]. ctx bounds the start only.
func Serve(ctx context.Context, nc *nats.Conn, cfg ServiceConfig) (*Service, error) {
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.MaxConcurrent == 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.ResultWindow == 0 {
		cfg.ResultWindow = DefaultResultWindow
	}
	if cfg.StartupTimeout == 0 {
		cfg.StartupTimeout = DefaultStartupTimeout
	}
	switch {
	case nc == nil:
		return nil, fmt.Errorf("%w: no connection", ErrInvalidConfig)
	case !nameRE.MatchString(cfg.Name):
		return nil, fmt.Errorf("%w: Name %q must be [A-Za-z0-9_-]+", ErrInvalidConfig, cfg.Name)
	case len(cfg.Tools) == 0:
		return nil, fmt.Errorf("%w: %s serves no tools", ErrInvalidConfig, cfg.Name)
	case cfg.Heartbeat < 0 || cfg.MaxConcurrent < 0 || cfg.StartupTimeout < 0:
		return nil, fmt.Errorf("%w: Heartbeat, MaxConcurrent and StartupTimeout must not be negative", ErrInvalidConfig)
	}
	subj, err := protocol.NewSubjects(cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	codec, err := protocol.NewCodec(protocol.CodecConfig{Prefix: cfg.Prefix})
	if err != nil {
		return nil, err
	}
	s := &Service{
		nc: nc, tools: map[string]*tool{}, cfg: cfg, codec: codec,
		source: "/lionbus/tool/" + cfg.Name, sem: make(chan struct{}, cfg.MaxConcurrent),
		done: make(chan struct{}), hbStop: make(chan struct{}), hbDone: make(chan struct{}),
		inflight: map[string]map[*context.CancelFunc]struct{}{},
	}
	s.log = cfg.Logger.With().Str("service", cfg.Name).Logger()
	for _, t := range cfg.Tools {
		tt, err := prepareTool(t, cfg, subj)
		if err != nil {
			return nil, err
		}
		if _, dup := s.tools[t.Name]; dup {
			return nil, fmt.Errorf("%w: tool %q declared twice", ErrInvalidConfig, t.Name)
		}
		s.tools[t.Name] = tt
	}

	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	s.js = js
	sctx, cancel := context.WithTimeout(ctx, cfg.StartupTimeout)
	defer cancel()
	if err := s.untilReady(sctx, "open the registry bucket", func(ctx context.Context) (err error) {
		s.reg, err = openRegistryBucket(ctx, js, subj.ToolsBucket())
		return err
	}); err != nil {
		return nil, err
	}
	if cfg.ResultWindow > 0 {
		if err := s.untilReady(sctx, "open the results bucket", func(ctx context.Context) (err error) {
			s.results, err = openResults(ctx, js, ResultsBucket(cfg.Prefix), cfg.ResultWindow)
			return err
		}); err != nil {
			return nil, err
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())

	svc, err := micro.AddService(nc, micro.Config{Name: cfg.Name, Version: cfg.Version, Description: cfg.Description, StatsHandler: s.endpointData})
	if err != nil {
		s.cancel()
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	s.svc = svc
	for _, t := range s.tools {
		err := svc.AddEndpoint(t.Name, micro.HandlerFunc(func(r micro.Request) { s.receive(t, r) }),
			micro.WithEndpointSubject(t.subject), micro.WithEndpointQueueGroup(t.Name),
			micro.WithEndpointMetadata(map[string]string{"description": wire.Truncate(t.Description, 256)}))
		if err == nil {
			var sub *nats.Subscription
			sub, err = nc.Subscribe(CancelSubject(t.subject), s.receiveCancel)
			s.cancels = append(s.cancels, sub)
		}
		if err != nil {
			s.abort()
			return nil, fmt.Errorf("tools: serve %s: %w", t.Name, err)
		}
	}
	if err := s.untilReady(sctx, "write the registry entries", s.register); err != nil {
		s.abort()
		return nil, err
	}
	go s.heartbeat()
	s.log.Info().Int("tools", len(s.tools)).Msg("tool service started")
	return s, nil
}

// CancelSubject returns the subject on which a tool answering subject is
// told to stop an invocation: "<subject>.cancel".
func CancelSubject(subject string) string { return subject + ".cancel" }

// prepareTool checks t and compiles its schema with cfg.Compile.
func prepareTool(t Tool, cfg ServiceConfig, subj protocol.Subjects) (*tool, error) {
	if t.Handler == nil {
		return nil, fmt.Errorf("%w: tool %q has no handler", ErrInvalidConfig, t.Name)
	}
	if t.Timeout < 0 {
		return nil, fmt.Errorf("%w: tool %q: Timeout must not be negative", ErrInvalidConfig, t.Name)
	}
	if t.Timeout == 0 {
		t.Timeout = DefaultToolTimeout
	}
	if t.Parameters == nil {
		t.Parameters = json.RawMessage(`{"type":"object"}`)
	}
	version := t.Version
	if version == "" {
		version = cfg.Version
	}
	e := Entry{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Subject: subj.Tool(t.Name), Version: version}
	check, err := e.check(cfg.Compile)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &tool{Tool: t, entry: e, check: check, subject: e.Subject}, nil
}

// register writes every tool's registry entry that is missing or differs.
func (s *Service) register(ctx context.Context) error {
	for _, t := range s.tools {
		want, err := json.Marshal(t.entry)
		if err != nil {
			return err
		}
		if cur, err := s.reg.Get(ctx, t.Name); err == nil && string(cur.Value()) == string(want) {
			continue
		}
		if _, err := s.reg.Put(ctx, t.Name, want); err != nil {
			return fmt.Errorf("tools: register %s: %w", t.Name, err)
		}
	}
	return nil
}

// heartbeat keeps the registry entries in place until the service stops.
func (s *Service) heartbeat() {
	defer close(s.hbDone)
	tick := time.NewTicker(s.cfg.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-s.hbStop:
			return
		case <-tick.C:
			// Bounded like a start's request: a bucket may have to be
			// created again.
			ctx, cancel := context.WithTimeout(s.ctx, max(s.cfg.Heartbeat, startTryTimeout))
			s.heartbeatOnce(ctx)
			cancel()
		}
	}
}

// abort undoes a start that failed half-way.
func (s *Service) abort() {
	for _, sub := range s.cancels {
		if sub != nil {
			_ = sub.Unsubscribe()
		}
	}
	if s.svc != nil {
		_ = s.svc.Stop()
	}
	s.cancel()
}

// Stop stops the service: it stops taking invocations, waits for the
// running handlers until ctx ends (then cancels their contexts and waits
// for them to return), and removes the registry entries of its tools unless
// another replica of the service still answers. It returns the failures
// to unsubscribe, stop the micro service or remove an entry, joined.
//
// Stop follows lionbus's Stop convention (docs/architecture.md, "Stopping
// and logging"): it may be called any number of times, from any
// goroutine. The first call stops the service and reports how that went;
// a later one, during that stop or after it, does nothing more: it waits
// until the service has stopped and returns nil, or ctx's error (wrapped)
// when ctx ends first.
func (s *Service) Stop(ctx context.Context) error {
	s.gate.Lock()
	first := s.stopped.CompareAndSwap(false, true)
	s.gate.Unlock()
	if !first {
		select {
		case <-s.done:
			return nil
		default:
		}
		select {
		case <-s.done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("tools: stop: %w", ctx.Err())
		}
	}
	defer close(s.done)
	close(s.hbStop)
	<-s.hbDone
	var errs []error
	for _, sub := range s.cancels {
		errs = append(errs, sub.Unsubscribe())
	}
	errs = append(errs, s.svc.Stop())
	waited := make(chan struct{})
	go func() { s.running.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
		s.cancel()
		<-waited
	}
	s.cancel()
	if !s.peerAlive() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		for _, t := range s.tools {
			if err := s.reg.Delete(dctx, t.Name); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
				errs = append(errs, fmt.Errorf("tools: unregister %s: %w", t.Name, err))
			}
		}
		cancel()
	}
	s.log.Info().Msg("tool service stopped")
	return errors.Join(errs...)
}

// peerAlive reports whether another instance of the service answers a
// micro PING.
func (s *Service) peerAlive() bool {
	subject, err := micro.ControlSubject(micro.PingVerb, s.cfg.Name, "")
	if err != nil {
		return false
	}
	_, err = s.nc.Request(subject, nil, 250*time.Millisecond)
	return err == nil
}

// Stopped returns a channel closed once Stop has returned.
func (s *Service) Stopped() <-chan struct{} { return s.done }

// Stats returns the micro service's statistics (what `nats micro stats`
// shows): per tool, the invocations received, whether or not they ran the
// handler.
func (s *Service) Stats() micro.Stats { return s.svc.Stats() }

// endpointData is the micro StatsHandler: a tool's EndpointData.
func (s *Service) endpointData(e *micro.Endpoint) any {
	t := s.tools[e.Name]
	if t == nil {
		return nil
	}
	return t.stats.data()
}

// Info returns the micro service's description (what `nats micro info`
// shows).
func (s *Service) Info() micro.Info { return s.svc.Info() }

// receive handles one message on a tool's subject, in its own goroutine.
func (s *Service) receive(t *tool, r micro.Request) {
	s.gate.Lock()
	if s.stopped.Load() {
		s.gate.Unlock()
		s.respond(t, r, "", wire.ToolOutcome{Error: Errorf(CodeBusy, "tool service %s is stopping", s.cfg.Name)})
		return
	}
	s.running.Add(1)
	s.gate.Unlock()
	go func() {
		defer s.running.Done()
		t0 := time.Now()
		s.serve(t, r)
		t.stats.took(time.Since(t0))
	}()
}

// serve answers one invocation of t.
func (s *Service) serve(t *tool, r micro.Request) {
	ev, err := s.codec.DecodeEvent(nats.Header(r.Headers()), r.Data())
	if err != nil {
		s.respond(t, r, "", wire.ToolOutcome{Error: Errorf(CodeBadInvocation, "not a CloudEvent: %v", err)})
		return
	}
	trace := traceOf(ev)
	var inv Invocation
	switch {
	case ev.Type() != InvokeType:
		err = fmt.Errorf("type is %q, want %s", wire.Truncate(ev.Type(), 80), InvokeType)
	default:
		if err = decodeData(ev, &inv); err == nil && inv.Function != t.Name {
			err = fmt.Errorf("function is %q, this is tool %s", wire.Truncate(inv.Function, 80), t.Name)
		}
	}
	if err != nil {
		s.respond(t, r, trace, wire.ToolOutcome{Error: Errorf(CodeBadInvocation, "%v", err)})
		return
	}
	if inv.Arguments == nil {
		inv.Arguments = map[string]any{}
	}
	deadline := time.Now().Add(t.Timeout)
	if !inv.Deadline.IsZero() {
		deadline = inv.Deadline
	}
	ctx, cancel := context.WithDeadline(s.ctx, deadline)
	defer cancel()
	log := s.log.With().Str("tool", t.Name).Str("key", inv.IdempotencyKey).Logger()

	// Arguments are checked before anything else happens (no claim, no
	// handler): a repeated invalid call gets the same answer anyway.
	if t.check == nil {
		// No compiler: the arguments are an object, nothing more is known.
	} else if err := t.check(inv.Arguments); err != nil {
		s.respond(t, r, trace, wire.ToolOutcome{Error: Errorf(CodeInvalidArguments, "arguments do not match the schema of %s: %v", t.Name, err)})
		return
	}
	var cl *claim
	if s.results != nil && inv.IdempotencyKey != "" {
		var first *wire.ToolOutcome
		first, cl, err = s.results.begin(ctx, resultKey(t.Name, inv.IdempotencyKey), deadline.Add(claimGrace))
		if err != nil && bucketGone(err) && s.reopenResults(ctx) == nil {
			// Deleted, or lost with the server's store: created again.
			first, cl, err = s.results.begin(ctx, resultKey(t.Name, inv.IdempotencyKey), deadline.Add(claimGrace))
		}
		switch {
		case first != nil:
			log.Debug().Msg("answered from the results bucket")
			s.respond(t, r, trace, *first)
			return
		case err != nil:
			s.respond(t, r, trace, ctxOutcome(ctx, fmt.Errorf("remembered results unavailable: %w", err)))
			return
		}
	}
	out, ran := s.run(ctx, t, inv)
	if cl != nil {
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if ran {
			err = s.results.finish(sctx, cl, out)
		} else {
			err = s.results.abandon(sctx, cl)
		}
		scancel()
		if err != nil {
			log.Warn().Err(err).Msg("could not store the result")
		}
	}
	s.respond(t, r, trace, out)
}

// run runs t's handler once a slot is free. ran is false when the handler
// was not run or ctx ended before it returned: nothing is remembered then.
func (s *Service) run(ctx context.Context, t *tool, inv Invocation) (out wire.ToolOutcome, ran bool) {
	select {
	case s.sem <- struct{}{}:
		defer func() { <-s.sem }()
	case <-ctx.Done():
		return ctxOutcome(ctx, errors.New("no free handler slot")), false
	}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	untrack := s.track(inv.IdempotencyKey, &cancel)
	defer untrack()
	res, err := safeCall(hctx, t.Handler, inv.Arguments)
	if err != nil && hctx.Err() != nil {
		// Stopped by its deadline or a cancel: the effect is unknown, so
		// nothing is remembered and a repeated invocation runs again.
		return ctxOutcome(hctx, err), false
	}
	if err != nil {
		var te *wire.ToolError
		if errors.As(err, &te) {
			code := te.Code
			if code == "" {
				code = wire.ToolErrorFailed
			}
			return wire.ToolOutcome{Error: &wire.ToolError{Code: code, Message: te.Message}}, true
		}
		return wire.ToolOutcome{Error: Errorf(wire.ToolErrorFailed, "%v", err)}, true
	}
	var v any
	b, err := json.Marshal(res)
	if err == nil {
		err = json.Unmarshal(b, &v)
	}
	if err != nil {
		return wire.ToolOutcome{Error: Errorf(wire.ToolErrorFailed, "output is not JSON-encodable: %v", err)}, true
	}
	return wire.ToolOutcome{Output: v}, true
}

// safeCall runs h, turning a panic into an error.
func safeCall(ctx context.Context, h Handler, args map[string]any) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("tool panicked: %v", p)
		}
	}()
	return h(ctx, args)
}

// ctxOutcome is the error result of an invocation whose context ended
// (timeout or canceled), else of cause.
func ctxOutcome(ctx context.Context, cause error) wire.ToolOutcome {
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return wire.ToolOutcome{Error: Errorf(CodeCanceled, "the invocation was cancelled")}
	case ctx.Err() != nil:
		return wire.ToolOutcome{Error: Errorf(CodeTimeout, "the invocation's deadline passed")}
	}
	return wire.ToolOutcome{Error: Errorf(wire.ToolErrorFailed, "%v", cause)}
}

// track registers the cancel of a running handler under its key.
func (s *Service) track(key string, cancel *context.CancelFunc) (untrack func()) {
	if key == "" {
		return func() {}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.inflight[key]
	if m == nil {
		m = map[*context.CancelFunc]struct{}{}
		s.inflight[key] = m
	}
	m[cancel] = struct{}{}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(m, cancel)
		if len(m) == 0 {
			delete(s.inflight, key)
		}
	}
}

// receiveCancel handles a lionbus.tool.cancel event: the handlers running
// for its idempotency key are cancelled.
func (s *Service) receiveCancel(msg *nats.Msg) {
	ev, err := s.codec.DecodeEvent(msg.Header, msg.Data)
	if err != nil || ev.Type() != CancelType {
		return
	}
	var d cancelData
	if err := decodeData(ev, &d); err != nil || d.IdempotencyKey == "" {
		return
	}
	s.mu.Lock()
	var fns []context.CancelFunc
	for c := range s.inflight[d.IdempotencyKey] {
		fns = append(fns, *c)
	}
	s.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
	if len(fns) > 0 {
		s.log.Info().Str("key", d.IdempotencyKey).Msg("invocation cancelled by the caller")
	}
}

// respond answers r, a call of t, with a lionbus.tool.result event.
func (s *Service) respond(t *tool, r micro.Request, trace string, out wire.ToolOutcome) {
	t.stats.answered(out)
	ev, err := newEvent(s.source, ResultType, trace, out)
	if err == nil {
		var msg *nats.Msg
		if msg, err = protocol.EncodeCore("", ev, protocol.Structured); err == nil {
			err = r.Respond(msg.Data, micro.WithHeaders(micro.Headers(msg.Header)))
		}
	}
	if err != nil {
		s.log.Warn().Err(err).Msg("could not answer an invocation")
	}
}
