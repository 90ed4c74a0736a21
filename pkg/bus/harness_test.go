package bus_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
)

// busBundle is one embedded server with everything provisioned, a client,
// and helpers to start workers that run the real ops.Engine.
type busBundle struct {
	srv    *bus.Server
	nc     *nats.Conn
	js     jetstream.JetStream
	cfg    bus.Config
	res    *bus.Resources
	codec  *bus.Codec
	client *bus.Client
}

func setupBus(t testing.TB, cfg bus.Config) *busBundle {
	t.Helper()
	srv := bustest.NewServer(t)
	nc, js := bustest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := bus.Provision(ctx, js, cfg)
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	codec, err := bus.NewCodec(res.Config)
	if err != nil {
		t.Fatalf("codec: %v", err)
	}
	client, err := bus.NewClient(nc, bus.ClientConfig{Prefix: res.Config.Prefix})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return &busBundle{srv: srv, nc: nc, js: js, cfg: res.Config, res: res, codec: codec, client: client}
}

// conn opens another connection with its own provisioned handles, as a
// separate worker process has.
func (b *busBundle) conn(t testing.TB) (*nats.Conn, jetstream.JetStream, *bus.Resources) {
	t.Helper()
	nc, js := bustest.Connect(t, b.srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := bus.Provision(ctx, js, b.cfg)
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	return nc, js, res
}

// engine returns a real ops.Engine over a NATS store on js, with the
// scripted provider and any extra providers.
func newEngine(t testing.TB, js jetstream.JetStream, res *bus.Resources, extra map[string]ops.Provider) *ops.Engine {
	t.Helper()
	st, err := bus.NewStore(js, res, bus.StoreConfig{Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("store: %v", err)
	}
	provs := ops.NewProviders(extra)
	if err := scripted.Register(provs); err != nil {
		t.Fatal(err)
	}
	eng, err := ops.NewEngine(ops.Config{Store: st, Providers: provs})
	if err != nil {
		t.Fatalf("engine: %v", err)
	}
	return eng
}

// startWorker starts a worker on its own connection. With a nil handler it
// runs a real engine (scripted provider plus extra). The worker is stopped
// when the test ends. ctx, when not nil, is the worker's Start context.
func (b *busBundle) startWorker(t testing.TB, ctx context.Context, h bus.Handler, extra map[string]ops.Provider, wcfg bus.WorkerConfig) *bus.Worker {
	t.Helper()
	nc, js, res := b.conn(t)
	if h == nil {
		h = newEngine(t, js, res, extra)
	}
	if wcfg.FetchWait == 0 {
		wcfg.FetchWait = 200 * time.Millisecond
	}
	if wcfg.Logger.GetLevel() == zerolog.DebugLevel {
		wcfg.Logger = testLogger(t)
	}
	w, err := bus.NewWorker(nc, res, b.codec, h, wcfg)
	if err != nil {
		t.Fatalf("worker: %v", err)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if err := w.Start(ctx); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Stop(sctx)
	})
	return w
}

// answers collects every answer published on the default reply subjects,
// by request id, from a core subscription.
type answers struct {
	mu   sync.Mutex
	byID map[string][]*nats.Msg
	sub  *nats.Subscription
}

func (b *busBundle) watchAnswers(t testing.TB) *answers {
	t.Helper()
	a := &answers{byID: map[string][]*nats.Msg{}}
	prefix := b.res.Subjects.Reply("")
	sub, err := b.nc.Subscribe(b.res.Subjects.RepliesWildcard(), func(m *nats.Msg) {
		a.mu.Lock()
		defer a.mu.Unlock()
		id := m.Subject[len(prefix):]
		a.byID[id] = append(a.byID[id], m)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	a.sub = sub
	return a
}

func (a *answers) count(id string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.byID[id])
}

func (a *answers) total() (ids, msgs int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ms := range a.byID {
		ids++
		msgs += len(ms)
	}
	return ids, msgs
}

// waitFor polls cond every 10ms until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// await waits for the answer of id through the client.
func (b *busBundle) await(t testing.TB, id string) *bus.Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := b.client.Await(ctx, id)
	if err != nil {
		t.Fatalf("await %s: %v", id, err)
	}
	return r
}

// do submits and awaits, failing the test on a transport error.
func (b *busBundle) do(t testing.TB, verb, branch string, data any, opts ...bus.SubmitOption) *bus.Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := b.client.Do(ctx, verb, branch, data, opts...)
	if err != nil {
		t.Fatalf("%s: %v", verb, err)
	}
	return r
}

// mustResult decodes a successful answer's value into v.
func mustResult(t testing.TB, r *bus.Reply, v any) *ops.Result {
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

// createBranch creates branch id with the scripted echo model.
func (b *busBundle) createBranch(t testing.TB, id string) {
	t.Helper()
	r := b.do(t, "branch.create", "", map[string]any{"branch_id": id, "system": "be brief", "chat_model": "scripted:echo"})
	mustResult(t, r, nil)
}

func bg(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testLogger logs warnings and errors (retries included) through t.Log, so that they show up
// when a test fails.
func testLogger(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.ConsoleWriter{Out: testWriter{t}, NoColor: true}).Level(zerolog.WarnLevel).With().Timestamp().Logger()
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
