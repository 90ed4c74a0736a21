package bustest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
	"github.com/lionbus/lionbus/schemas"
)

// Bus is one embedded server with everything provisioned and a client, from
// which a test starts workers with [Bus.StartWorker].
type Bus struct {
	Srv    *embedded.Server
	NC     *nats.Conn
	JS     jetstream.JetStream
	Cfg    provision.Config // with defaults applied
	Res    *provision.Resources
	Codec  *protocol.Codec
	Client *client.Client
}

// New starts an embedded server, provisions it with cfg and connects a
// client to it.
func New(t testing.TB, cfg provision.Config) *Bus {
	t.Helper()
	srv := NewServer(t)
	nc, js := Connect(t, srv)
	res := Provision(t, js, cfg)
	codec, err := protocol.NewCodec(protocol.CodecConfig{Prefix: res.Config.Prefix, MaxPayload: res.Config.MaxPayload, Validator: schemas.Validator{}})
	if err != nil {
		t.Fatalf("bustest: codec: %v", err)
	}
	cl, err := client.New(nc, client.Config{Prefix: res.Config.Prefix})
	if err != nil {
		t.Fatalf("bustest: client: %v", err)
	}
	return &Bus{Srv: srv, NC: nc, JS: js, Cfg: res.Config, Res: res, Codec: codec, Client: cl}
}

// Conn opens another connection with its own provisioned handles, as a
// separate worker process has.
func (b *Bus) Conn(t testing.TB) (*nats.Conn, jetstream.JetStream, *provision.Resources) {
	t.Helper()
	nc, js := Connect(t, b.Srv)
	return nc, js, Provision(t, js, b.Cfg)
}

// Providers returns a registry of the scripted provider plus extra.
func Providers(t testing.TB, extra map[string]ops.Provider) *ops.Providers {
	t.Helper()
	provs := ops.NewProviders(extra)
	if err := scripted.Register(provs); err != nil {
		t.Fatal(err)
	}
	return provs
}

// NoWait is the engines' Config.Sleep in these helpers: it returns at once
// (with ctx's error when ctx is done), so that tests run the reformat
// rounds of parsing without their waits.
func NoWait(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// NewEngine returns a real ops.Engine over a JetStream store on js, with
// the scripted provider plus extra, waiting no time between reformat rounds
// (NoWait).
func NewEngine(t testing.TB, js jetstream.JetStream, res *provision.Resources, extra map[string]ops.Provider) *ops.Engine {
	t.Helper()
	st, err := store.New(js, res, store.Config{Logger: Logger(t)})
	if err != nil {
		t.Fatalf("bustest: store: %v", err)
	}
	eng, err := ops.NewEngine(ops.Config{Store: st, Providers: Providers(t, extra), Sleep: NoWait})
	if err != nil {
		t.Fatalf("bustest: engine: %v", err)
	}
	return eng
}

// StartWorker starts a worker service on its own connection through
// [bus.Start]. With a nil handler it runs the real engine (scripted provider
// plus extra, with NoWait); otherwise h. ctx, when not nil, is the worker's run context:
// cancelling it stops the worker hard. The worker is stopped when the test
// ends.
func (b *Bus) StartWorker(t testing.TB, ctx context.Context, h worker.Handler, extra map[string]ops.Provider, wcfg worker.Config) *worker.Worker {
	t.Helper()
	return b.StartService(t, ctx, h, extra, wcfg).Worker()
}

// StartService is StartWorker returning the whole service.
func (b *Bus) StartService(t testing.TB, ctx context.Context, h worker.Handler, extra map[string]ops.Provider, wcfg worker.Config) *bus.Service {
	t.Helper()
	return b.StartServiceWith(t, ctx, h, extra, wcfg, nil)
}

// StartServiceWith is StartService with configure, when not nil, applied
// to the service's configuration before it starts (bus.Config settings
// beyond the worker's, e.g. RunLogDir).
func (b *Bus) StartServiceWith(t testing.TB, ctx context.Context, h worker.Handler, extra map[string]ops.Provider, wcfg worker.Config, configure func(*bus.Config)) *bus.Service {
	t.Helper()
	if wcfg.FetchWait == 0 {
		wcfg.FetchWait = 200 * time.Millisecond
	}
	if wcfg.Logger.GetLevel() == zerolog.DebugLevel {
		wcfg.Logger = Logger(t)
	}
	cfg := bus.Config{
		Connect:       client.ConnectConfig{URL: b.Srv.ClientURL(), Name: t.Name()},
		Provision:     b.Cfg,
		Providers:     Providers(t, extra),
		Sleep:         NoWait,
		Worker:        wcfg,
		WorkerContext: ctx,
		Store:         store.Config{Logger: Logger(t)},
	}
	if h != nil {
		// Innermost, in place of the engine.
		cfg.Worker.Middleware = append(slices.Clip(cfg.Worker.Middleware), func(worker.Handler) worker.Handler { return h })
	}
	if configure != nil {
		configure(&cfg)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc, err := bus.Start(sctx, cfg)
	if err != nil {
		t.Fatalf("bustest: start worker: %v", err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = svc.Stop(sctx)
		svc.Close()
	})
	return svc
}

// Answers collects every answer published on the default reply subjects,
// by request id, from a core subscription.
type Answers struct {
	mu   sync.Mutex
	byID map[string][]*nats.Msg
	got  int64 // messages the callback has collected
	nc   *nats.Conn
	sub  *nats.Subscription
}

// WatchAnswers starts collecting answers; it stops when the test ends.
func (b *Bus) WatchAnswers(t testing.TB) *Answers {
	t.Helper()
	prefix := b.Res.Subjects.Reply("")
	a := &Answers{byID: map[string][]*nats.Msg{}, nc: b.NC}
	sub, err := b.NC.Subscribe(b.Res.Subjects.RepliesWildcard(), func(m *nats.Msg) {
		a.mu.Lock()
		defer a.mu.Unlock()
		id := m.Subject[len(prefix):]
		a.byID[id] = append(a.byID[id], m)
		a.got++
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	a.sub = sub
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return a
}

// Sync waits until every answer the server sent before it was called has
// been collected: a flush makes the connection read them all, then it
// waits until the subscription has none pending and its callback has
// returned for each one delivered. Call it before Count when an answer
// may still be on its way to the collector (the callback runs on a
// goroutine of its own).
func (a *Answers) Sync(t testing.TB) {
	t.Helper()
	if err := a.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 10*time.Second, "the answers collected", func() bool {
		msgs, _, err := a.sub.Pending()
		if err != nil {
			t.Fatal(err)
		}
		delivered, err := a.sub.Delivered()
		if err != nil {
			t.Fatal(err)
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		return msgs == 0 && a.got == delivered
	})
}

// Count returns how many answers were seen for id.
func (a *Answers) Count(id string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.byID[id])
}

// Msgs returns the answers seen for id.
func (a *Answers) Msgs(id string) []*nats.Msg {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*nats.Msg(nil), a.byID[id]...)
}

// Total returns how many request ids got answers, and how many answers
// there were.
func (a *Answers) Total() (ids, msgs int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ms := range a.byID {
		ids++
		msgs += len(ms)
	}
	return ids, msgs
}

// WaitFor polls cond every 10ms until it holds, failing the test when d
// passes first.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Await waits (at most 20s) for the answer of id through the client.
func (b *Bus) Await(t testing.TB, id string) *client.Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := b.Client.Await(ctx, id)
	if err != nil {
		t.Fatalf("await %s: %v", id, err)
	}
	return r
}

// Do submits and awaits, failing the test on a transport error.
func (b *Bus) Do(t testing.TB, verb, branch string, data any, opts ...client.SubmitOption) *client.Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := b.Client.Do(ctx, verb, branch, data, opts...)
	if err != nil {
		t.Fatalf("%s: %v", verb, err)
	}
	return r
}

// MustResult decodes a successful answer's value into v (when not nil).
func MustResult(t testing.TB, r *client.Reply, v any) *ops.Result {
	t.Helper()
	res, err := r.Result()
	if err != nil {
		t.Fatalf("%s answer: %v", r.Type, err)
	}
	if v != nil {
		if err := json.Unmarshal(res.Value, v); err != nil {
			t.Fatalf("decode %s value %s: %v", r.Type, res.Value, err)
		}
	}
	return res
}

// CreateBranch creates branch id with the scripted echo model.
func (b *Bus) CreateBranch(t testing.TB, id string) {
	t.Helper()
	r := b.Do(t, "branch.create", "", map[string]any{"branch_id": id, "system": "be brief", "chat_model": "scripted:echo"})
	MustResult(t, r, nil)
}

// Ctx returns a context ending after 30s or with the test.
func Ctx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Logger logs warnings and errors (retries included) through t.Log, so
// that they show up when a test fails.
func Logger(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.ConsoleWriter{Out: testWriter{t}, NoColor: true}).Level(zerolog.WarnLevel).With().Timestamp().Logger()
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// CheckSchema validates an answer's data against the schema of its type.
func CheckSchema(t testing.TB, r *client.Reply) {
	t.Helper()
	if err := schemas.Validate(r.Type, r.Data); err != nil {
		t.Fatalf("%s answer does not match its schema: %v\n%s", r.Type, err, r.Data)
	}
}

// History returns the history of branch, read through a fresh store.
func (b *Bus) History(t testing.TB, branch string) []history.Event {
	t.Helper()
	st, err := store.New(b.JS, b.Res, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.History(Ctx(t), branch, 0, 0)
	if err != nil {
		t.Fatalf("history of %s: %v", branch, err)
	}
	return evs
}

// RemoteCode returns the code of an error answer, failing the test for
// any other answer.
func RemoteCode(t testing.TB, r *client.Reply) ops.Code {
	t.Helper()
	var re *client.RemoteError
	if err := r.Err(); !errors.As(err, &re) {
		t.Fatalf("answer %s is not an error: %s", r.Type, r.Data)
	}
	return re.Code
}

// AwaitWithin waits at most d for the answer of id and reports whether one
// came.
func (b *Bus) AwaitWithin(t testing.TB, id string, d time.Duration) (*client.Reply, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	r, err := b.Client.Await(ctx, id)
	if err != nil {
		return nil, false
	}
	return r, true
}

// PublishRaw publishes a request event for verb with id, without a
// Nats-Msg-Id, so that the ops stream stores it even when it holds (or held)
// a request of the same id: a client resending the same event outside the
// duplicate window.
func (b *Bus) PublishRaw(t testing.TB, verb, id string) {
	t.Helper()
	ev, err := protocol.EventBuilder{Source: "/test"}.Request(verb, "", "", "", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	ev.SetID(id)
	m, err := protocol.Encode(b.Res.Subjects.Op(verb), ev, protocol.Structured)
	if err != nil {
		t.Fatal(err)
	}
	m.Header.Del(jetstream.MsgIDHeader)
	if _, err := b.JS.PublishMsg(Ctx(t), m); err != nil {
		t.Fatal(err)
	}
}

// Commits counts the EventMessages (the commits of operations) of each
// request id in evs.
func Commits(evs []history.Event) map[string]int {
	out := map[string]int{}
	for _, ev := range evs {
		if ev.Type == history.EventMessages {
			out[ev.RequestID]++
		}
	}
	return out
}
