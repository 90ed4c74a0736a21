package tools_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/tools"
)

// testBundle is a fresh embedded server with a connection.
type testBundle struct {
	srv *embedded.Server
	nc  *nats.Conn
	js  jetstream.JetStream
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	srv := bustest.NewServer(t)
	nc, js := bustest.Connect(t, srv)
	return &testBundle{srv: srv, nc: nc, js: js}
}

// conn opens another connection, as a separate process has.
func (b *testBundle) conn(t *testing.T) *nats.Conn {
	t.Helper()
	nc, _ := bustest.Connect(t, b.srv)
	return nc
}

// serve starts a tool service on its own connection, stopped when the
// test ends.
func (b *testBundle) serve(t *testing.T, cfg tools.ServiceConfig) *tools.Service {
	t.Helper()
	if cfg.Version == "" {
		cfg.Version = "1.0.0"
	}
	svc, err := tools.Serve(bustest.Ctx(t), b.conn(t), cfg)
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = svc.Stop(ctx)
	})
	return svc
}

// invoker returns a NATS invoker on the bundle's connection, without a
// registry unless reg is given.
func (b *testBundle) invoker(t *testing.T, reg *tools.Registry) *tools.Invoker {
	t.Helper()
	inv, err := tools.NewInvoker(b.nc, tools.InvokerConfig{Registry: reg, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// registry opens the registry, closed when the test ends.
func (b *testBundle) registry(t *testing.T) *tools.Registry {
	t.Helper()
	reg, err := tools.OpenRegistry(bustest.Ctx(t), b.js, "", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	return reg
}

const echoParams = `{"type":"object","properties":{"text":{"type":"string","maxLength":100}},"required":["text"],"additionalProperties":false}`

// echoTool answers {"echo": text, "by": by}.
func echoTool(by string) tools.Tool {
	return tools.Tool{
		Name: "echo", Description: "Echoes its text.", Parameters: json.RawMessage(echoParams),
		Handler: func(_ context.Context, args map[string]any) (any, error) {
			return map[string]any{"echo": args["text"], "by": by}, nil
		},
	}
}

// gate is a handler that records its start and its context's end.
type gate struct {
	started chan struct{}
	ended   chan error
	once    sync.Once
}

func newGate() *gate { return &gate{started: make(chan struct{}), ended: make(chan error, 16)} }

// hang blocks until ctx ends, recording why.
func (g *gate) hang(ctx context.Context, _ map[string]any) (any, error) {
	g.once.Do(func() { close(g.started) })
	<-ctx.Done()
	g.ended <- ctx.Err()
	return nil, ctx.Err()
}

func call(fn string, args map[string]any, key string) ops.ToolInvocation {
	return ops.ToolInvocation{Function: fn, Arguments: args, IdempotencyKey: key, RequestID: "req1"}
}

func waitChan[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}
