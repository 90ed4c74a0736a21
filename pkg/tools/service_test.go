package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/tools/toolschema"
)

// Two replicas of a service share 100 concurrent invocations, and every
// one is answered.
func TestService_replicas_share_the_load(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.serve(t, tools.ServiceConfig{Compile: toolschema.Compile, Name: "echo-svc", Tools: []tools.Tool{echoTool("a")}})
	b.serve(t, tools.ServiceConfig{Compile: toolschema.Compile, Name: "echo-svc", Tools: []tools.Tool{echoTool("c")}})
	inv := b.invoker(t, b.registry(t))

	const n = 100
	var wg sync.WaitGroup
	var answered atomic.Int64
	by := make([]string, n)
	for i := range n {
		wg.Go(func() {
			out, err := inv.Invoke(bustest.Ctx(t), call("echo", map[string]any{"text": fmt.Sprint(i)}, fmt.Sprintf("load/%d", i)))
			if err != nil || out.Error != nil {
				t.Errorf("invocation %d: %v %+v", i, err, out.Error)
				return
			}
			m := out.Output.(map[string]any)
			if m["echo"] != fmt.Sprint(i) {
				t.Errorf("invocation %d answered %v", i, m)
			}
			by[i] = m["by"].(string)
			answered.Add(1)
		})
	}
	wg.Wait()
	if answered.Load() != n {
		t.Fatalf("%d of %d invocations answered", answered.Load(), n)
	}
	ranA, ranC := 0, 0
	for _, r := range by {
		switch r {
		case "a":
			ranA++
		case "c":
			ranC++
		}
	}
	if ranA+ranC != n || ranA == 0 || ranC == 0 {
		t.Fatalf("replicas ran %d and %d invocations, want both some, %d in all", ranA, ranC, n)
	}
}

// Arguments that do not match the schema are answered invalid_arguments,
// with the schema's complaint, and the handler never runs.
func TestService_rejects_invalid_arguments_before_the_handler(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ran atomic.Int64
	echo := echoTool("a")
	inner := echo.Handler
	echo.Handler = func(ctx context.Context, args map[string]any) (any, error) {
		ran.Add(1)
		return inner(ctx, args)
	}
	b.serve(t, tools.ServiceConfig{Compile: toolschema.Compile, Name: "echo-svc", Tools: []tools.Tool{echo}})
	inv := b.invoker(t, nil)
	tests := []struct {
		name string
		args map[string]any
		want string // in the message
	}{
		{"missing property", map[string]any{}, "text"},
		{"wrong type", map[string]any{"text": 3}, "string"},
		{"unknown property", map[string]any{"text": "x", "extra": true}, "extra"},
		{"too long", map[string]any{"text": strings.Repeat("x", 101)}, "100"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := inv.Invoke(bustest.Ctx(t), call("echo", tt.args, fmt.Sprintf("bad/%d", i)))
			if err != nil {
				t.Fatal(err)
			}
			if out.Error == nil || out.Error.Code != tools.CodeInvalidArguments || !strings.Contains(out.Error.Message, tt.want) {
				t.Fatalf("outcome %+v, want %s mentioning %q", out.Error, tools.CodeInvalidArguments, tt.want)
			}
		})
	}
	if ran.Load() != 0 {
		t.Fatalf("the handler ran %d times", ran.Load())
	}
}

// A handler's error is a structured error result: its own code, else
// tool_failed; a panic fails the invocation, not the service.
func TestService_handler_errors_are_error_results(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.serve(t, tools.ServiceConfig{Compile: toolschema.Compile, Name: "failing", Tools: []tools.Tool{
		{Name: "coded", Handler: func(context.Context, map[string]any) (any, error) {
			return nil, tools.Errorf("not_found", "no order %d", 7)
		}},
		{Name: "plain", Handler: func(context.Context, map[string]any) (any, error) { return nil, errors.New("disk full") }},
		{Name: "panics", Handler: func(context.Context, map[string]any) (any, error) { panic("boom") }},
		{Name: "unencodable", Handler: func(context.Context, map[string]any) (any, error) { return func() {}, nil }},
	}})
	inv := b.invoker(t, nil)
	tests := []struct{ tool, code, msg string }{
		{"coded", "not_found", "no order 7"},
		{"plain", ops.ToolErrorFailed, "disk full"},
		{"panics", ops.ToolErrorFailed, "boom"},
		{"unencodable", ops.ToolErrorFailed, "JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			out, err := inv.Invoke(bustest.Ctx(t), call(tt.tool, nil, "k/"+tt.tool))
			if err != nil {
				t.Fatal(err)
			}
			if out.Error == nil || out.Error.Code != tt.code || !strings.Contains(out.Error.Message, tt.msg) {
				t.Fatalf("outcome %+v, want %s with %q", out.Error, tt.code, tt.msg)
			}
		})
	}
}

// A tool that hangs gives a timeout error (its handler is told), one with
// no service a no-service error, one not registered no-such-tool: errors,
// never hangs.
func TestInvoker_failures_are_errors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGate()
	b.serve(t, tools.ServiceConfig{Compile: toolschema.Compile, Name: "slow", Tools: []tools.Tool{{Name: "hang", Handler: g.hang}}})
	reg := b.registry(t)
	// A registry entry whose service is gone.
	entry, _ := json.Marshal(tools.Entry{Name: "gone", Parameters: json.RawMessage(`{"type":"object"}`), Subject: "lion.tool.gone"})
	kv, err := b.js.KeyValue(bustest.Ctx(t), "lion_tools")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(bustest.Ctx(t), "gone", entry); err != nil {
		t.Fatal(err)
	}
	inv := b.invoker(t, reg)
	for name, subject := range map[string]string{"hijack": "lion.ops.communicate", "system": "$JS.API.STREAM.DELETE.LION_OPS"} {
		e, _ := json.Marshal(tools.Entry{Name: name, Parameters: json.RawMessage(`{"type":"object"}`), Subject: subject})
		if _, err := kv.Put(bustest.Ctx(t), name, e); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		tool string
		ctx  func() context.Context
		want error
	}{
		{"entry naming a lionbus subject", "hijack", func() context.Context { return bustest.Ctx(t) }, tools.ErrBadEntry},
		{"entry naming a system subject", "system", func() context.Context { return bustest.Ctx(t) }, tools.ErrBadEntry},
		{"hanging tool times out", "hang", func() context.Context {
			return tools.WithCallTimeout(bustest.Ctx(t), 300*time.Millisecond)
		}, context.DeadlineExceeded},
		{"no service", "gone", func() context.Context { return bustest.Ctx(t) }, tools.ErrNoService},
		{"not registered", "missing", func() context.Context { return bustest.Ctx(t) }, ops.ErrNoTool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := inv.Invoke(tt.ctx(), call(tt.tool, nil, "f/"+tt.tool))
			if !errors.Is(err, tt.want) {
				t.Fatalf("Invoke = %v, want %v", err, tt.want)
			}
		})
	}
	if got := waitChan(t, g.ended, 10*time.Second, "the hanging handler's context to end"); !errors.Is(got, context.DeadlineExceeded) && !errors.Is(got, context.Canceled) {
		t.Fatalf("the hanging handler's context ended with %v", got)
	}
}

// The same idempotency key sent twice at once, to two replicas, runs the
// handler once, and both callers get the first result; so does a later
// repeat.
func TestService_same_key_runs_the_handler_once(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var runs atomic.Int64
	release := make(chan struct{})
	refund := tools.Tool{Name: "refund", Handler: func(ctx context.Context, args map[string]any) (any, error) {
		n := runs.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return map[string]any{"refund_id": fmt.Sprintf("r-%d", n)}, nil
	}}
	r1 := b.serve(t, tools.ServiceConfig{Compile: toolschema.Compile, Name: "billing", Tools: []tools.Tool{refund}})
	r2 := b.serve(t, tools.ServiceConfig{Compile: toolschema.Compile, Name: "billing", Tools: []tools.Tool{refund}})
	inv := b.invoker(t, nil)
	received := func() int { return r1.Stats().Endpoints[0].NumRequests + r2.Stats().Endpoints[0].NumRequests }

	outs := make([]ops.ToolOutcome, 3)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			out, err := inv.Invoke(bustest.Ctx(t), call("refund", map[string]any{"order": 1}, "req-9/tool/0"))
			if err != nil {
				t.Error(err)
			}
			outs[i] = out
		})
	}
	bustest.WaitFor(t, 10*time.Second, "the handler to start and both invocations to arrive", func() bool {
		return runs.Load() > 0 && received() == 2
	})
	close(release)
	wg.Wait()
	out, err := inv.Invoke(bustest.Ctx(t), call("refund", map[string]any{"order": 1}, "req-9/tool/0"))
	if err != nil {
		t.Fatal(err)
	}
	outs[2] = out
	for i, o := range outs {
		if got, _ := json.Marshal(o); string(got) != `{"output":{"refund_id":"r-1"}}` {
			t.Errorf("caller %d got %s", i, got)
		}
	}
	if runs.Load() != 1 {
		t.Fatalf("the handler ran %d times, want 1", runs.Load())
	}
}

// A caller that stops waiting (its request was cancelled) tells the tool,
// and the handler's context is cancelled; nothing is remembered, so the
// next invocation of the key runs again.
func TestService_cancel_reaches_the_handler(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGate()
	var runs atomic.Int64
	hang := func(ctx context.Context, args map[string]any) (any, error) {
		runs.Add(1)
		return g.hang(ctx, args)
	}
	b.serve(t, tools.ServiceConfig{Compile: toolschema.Compile, Name: "slow", Tools: []tools.Tool{{Name: "hang", Handler: hang, Timeout: time.Minute}}})
	inv := b.invoker(t, nil)
	ctx, cancel := context.WithCancel(bustest.Ctx(t))
	done := make(chan error, 1)
	go func() {
		_, err := inv.Invoke(ctx, call("hang", nil, "c/tool/0"))
		done <- err
	}()
	waitChan(t, g.started, 10*time.Second, "the handler to start")
	cancel()
	if err := waitChan(t, done, 10*time.Second, "Invoke to return"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Invoke = %v, want context.Canceled", err)
	}
	if err := waitChan(t, g.ended, 10*time.Second, "the handler's context to end"); !errors.Is(err, context.Canceled) {
		t.Fatalf("the handler's context ended with %v, want context.Canceled", err)
	}
	if runs.Load() != 1 {
		t.Fatalf("the handler ran %d times, want 1", runs.Load())
	}
}

// A service registers its tools, puts back an entry removed while it
// serves, answers micro's PING and INFO, and removes its entries when it
// stops cleanly.
func TestService_registry_entry_lives_while_serving(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc := b.serve(t, tools.ServiceConfig{Compile: toolschema.Compile, Name: "echo-svc", Description: "echoes", Heartbeat: 50 * time.Millisecond,
		Tools: []tools.Tool{echoTool("a")}})
	kv, err := b.js.KeyValue(bustest.Ctx(t), "lion_tools")
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(bustest.Ctx(t), "echo")
	if err != nil {
		t.Fatal(err)
	}
	entry, err := tools.DecodeEntry("echo", e.Value())
	if err != nil || entry.Subject != "lion.tool.echo" || entry.Version != "1.0.0" || string(entry.Parameters) != echoParams {
		t.Fatalf("entry %+v, %v", entry, err)
	}
	if err := kv.Delete(bustest.Ctx(t), "echo"); err != nil {
		t.Fatal(err)
	}
	bustest.WaitFor(t, 10*time.Second, "the heartbeat to restore the entry", func() bool {
		_, err := kv.Get(bustest.Ctx(t), "echo")
		return err == nil
	})

	// Discoverable as `nats micro ls` does it.
	ping, err := b.nc.Request("$SRV.PING.echo-svc", nil, 5*time.Second)
	if err != nil {
		t.Fatalf("micro PING: %v", err)
	}
	var p micro.Ping
	if err := json.Unmarshal(ping.Data, &p); err != nil || p.Name != "echo-svc" {
		t.Fatalf("PING answered %s (%v)", ping.Data, err)
	}
	info := svc.Info()
	if len(info.Endpoints) != 1 || info.Endpoints[0].Subject != "lion.tool.echo" || info.Endpoints[0].QueueGroup != "echo" {
		t.Fatalf("INFO endpoints %+v", info.Endpoints)
	}

	if err := svc.Stop(bustest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := svc.Stop(bustest.Ctx(t)); err != nil {
		t.Fatalf("second Stop = %v, want nil", err)
	}
	if _, err := kv.Get(bustest.Ctx(t), "echo"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("entry after Stop: %v, want it removed", err)
	}
}

func TestServe_rejects_bad_configs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ok := func(context.Context, map[string]any) (any, error) { return nil, nil }
	tests := []struct {
		name string
		cfg  tools.ServiceConfig
	}{
		{"no name", tools.ServiceConfig{Version: "1.0.0", Tools: []tools.Tool{{Name: "a", Handler: ok}}}},
		{"no tools", tools.ServiceConfig{Compile: toolschema.Compile, Name: "s", Version: "1.0.0"}},
		{"no handler", tools.ServiceConfig{Compile: toolschema.Compile, Name: "s", Version: "1.0.0", Tools: []tools.Tool{{Name: "a"}}}},
		{"bad tool name", tools.ServiceConfig{Compile: toolschema.Compile, Name: "s", Version: "1.0.0", Tools: []tools.Tool{{Name: "a.b", Handler: ok}}}},
		{"bad schema", tools.ServiceConfig{Compile: toolschema.Compile, Name: "s", Version: "1.0.0", Tools: []tools.Tool{{Name: "a", Handler: ok, Parameters: json.RawMessage(`{"type":"string"}`)}}}},
		{"duplicate tool", tools.ServiceConfig{Compile: toolschema.Compile, Name: "s", Version: "1.0.0", Tools: []tools.Tool{{Name: "a", Handler: ok}, {Name: "a", Handler: ok}}}},
		{"no version", tools.ServiceConfig{Compile: toolschema.Compile, Name: "s", Tools: []tools.Tool{{Name: "a", Handler: ok}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tools.Serve(bustest.Ctx(t), b.nc, tt.cfg); !errors.Is(err, tools.ErrInvalidConfig) {
				t.Fatalf("Serve = %v, want ErrInvalidConfig", err)
			}
		})
	}
}

// The deadline an invocation carries is the earliest of the tool's
// default, the per-call override and the request's own deadline.
func TestInvoker_deadline_is_the_earliest_bound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	got := make(chan time.Time, 1)
	if _, err := b.nc.Subscribe("lion.tool.probe", func(m *nats.Msg) {
		var ev struct {
			Data ops.ToolInvocation `json:"data"`
		}
		_ = json.Unmarshal(m.Data, &ev)
		got <- ev.Data.Deadline
		_ = m.Respond([]byte(`{"specversion":"1.0","id":"1","source":"/t","type":"lionbus.tool.result","data":{"output":1}}`))
	}); err != nil {
		t.Fatal(err)
	}
	// The invoker has its own connection: the server must know of the
	// subscription before the first invocation.
	if err := b.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	inv, err := tools.NewInvoker(b.conn(t), tools.InvokerConfig{Timeout: time.Minute, Timeouts: map[string]time.Duration{"probe": 30 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want time.Duration
	}{
		{"the tool's default", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, 30 * time.Second},
		{"a per-call override", func() (context.Context, context.CancelFunc) {
			return context.WithCancel(tools.WithCallTimeout(context.Background(), 10*time.Second))
		}, 10 * time.Second},
		{"the request's deadline first", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(tools.WithCallTimeout(context.Background(), 10*time.Second), 5*time.Second)
		}, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.ctx()
			defer cancel()
			t0 := time.Now()
			if _, err := inv.Invoke(ctx, call("probe", nil, "d/0")); err != nil {
				t.Fatal(err)
			}
			dl := waitChan(t, got, 5*time.Second, "the invocation")
			if d := dl.Sub(t0); d < tt.want-time.Second || d > tt.want+time.Second {
				t.Fatalf("deadline %s after the call, want about %s", d, tt.want)
			}
		})
	}
}

// Without a Compiler (ServiceConfig.Compile nil) a service links no schema
// compiler: it still refuses a parameters schema of the wrong shape, and
// hands the arguments object to the handler unchecked, the handler being
// the one to check them.
func TestService_without_a_compiler_checks_shape_only(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ok := func(context.Context, map[string]any) (any, error) { return "ok", nil }
	for _, params := range []string{`{"type":"string"}`, `[1]`, `{"type":`} {
		_, err := tools.Serve(bustest.Ctx(t), b.conn(t), tools.ServiceConfig{Name: "s", Version: "1.0.0",
			Tools: []tools.Tool{{Name: "a", Handler: ok, Parameters: json.RawMessage(params)}}})
		if !errors.Is(err, tools.ErrInvalidConfig) {
			t.Errorf("parameters %s: Serve = %v, want ErrInvalidConfig", params, err)
		}
	}
	var got atomic.Value
	echo := echoTool("a")
	echo.Handler = func(_ context.Context, args map[string]any) (any, error) {
		got.Store(args)
		return "ran", nil
	}
	b.serve(t, tools.ServiceConfig{Name: "echo-svc", Tools: []tools.Tool{echo}})
	out, err := b.invoker(t, nil).Invoke(bustest.Ctx(t), call("echo", map[string]any{"text": 3}, "unchecked/1"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Error != nil || out.Output != "ran" {
		t.Fatalf("outcome %+v, want the handler's output", out)
	}
	if args, _ := got.Load().(map[string]any); args["text"] != float64(3) {
		t.Fatalf("the handler got %v", got.Load())
	}
}

// A registry opened WithRegistryCompiler skips an entry whose parameters
// do not compile (as the worker's does); one opened without a compiler
// checks the entries' shape only and keeps it.
func TestRegistry_compiler_skips_entries_that_do_not_compile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := bustest.Ctx(t)
	good := `{"name":"good","parameters":{"type":"object"},"subject":"lion.tool.good"}`
	bad := `{"name":"bad","parameters":{"type":"object","properties":{"a":{"type":"numbr"}}},"subject":"lion.tool.bad"}`
	plain := b.registry(t) // creates the bucket
	kv, err := b.js.KeyValue(ctx, "lion_tools")
	if err != nil {
		t.Fatal(err)
	}
	for key, v := range map[string]string{"good": good, "bad": bad} {
		if _, err := kv.Put(ctx, key, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	compiled, err := tools.OpenRegistry(ctx, b.js, "", zerolog.Nop(), tools.WithRegistryCompiler(toolschema.Compile))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = compiled.Close() }()
	if _, err := compiled.Lookup(ctx, "good"); err != nil {
		t.Errorf("compiled registry: good: %v", err)
	}
	if e, err := compiled.Lookup(ctx, "bad"); err == nil {
		t.Errorf("compiled registry kept the entry %+v whose parameters do not compile", e)
	}
	if _, err := plain.Lookup(ctx, "bad"); err != nil {
		t.Errorf("registry without a compiler: bad: %v, want it kept (shape only)", err)
	}
}
