package tools_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/tools/toolschema"
)

// A tool service gets back what it owns when it is lost: its registry
// entries, written back (the registry bucket created again when it was
// deleted, or lost with the server's store) within a heartbeat, and the
// results bucket, created again by the next invocation that needs it,
// which then remembers results as before. Its endpoints answer throughout
// (they are core subscriptions, made again on reconnect).
func TestService_recreates_what_it_owns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		lose func(t *testing.T, b *restartable)
	}{
		{"registry bucket deleted", func(t *testing.T, b *restartable) {
			if err := b.js.DeleteKeyValue(bustest.Ctx(t), "lion_tools"); err != nil {
				t.Fatal(err)
			}
		}},
		{"results bucket deleted", func(t *testing.T, b *restartable) {
			if err := b.js.DeleteKeyValue(bustest.Ctx(t), tools.ResultsBucket("lion")); err != nil {
				t.Fatal(err)
			}
		}},
		{"server restarted without its store", func(t *testing.T, b *restartable) { b.restartEmpty(t) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newRestartable(t)
			var runs atomic.Int64
			counted := echoTool("svc")
			inner := counted.Handler
			counted.Handler = func(ctx context.Context, args map[string]any) (any, error) {
				runs.Add(1)
				return inner(ctx, args)
			}
			zl := bustest.Logger(t)
			svc, err := tools.Serve(bustest.Ctx(t), b.conn(t), tools.ServiceConfig{
				Compile: toolschema.Compile, Name: "svc", Version: "1.0.0", Heartbeat: 100 * time.Millisecond, Tools: []tools.Tool{counted}, Logger: zl,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = svc.Stop(context.Background()) })
			inv, err := tools.NewInvoker(b.nc, tools.InvokerConfig{Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			tt.lose(t, b)

			bustest.WaitFor(t, 10*time.Second, "the registry entry written back", func() bool {
				kv, err := b.js.KeyValue(bustest.Ctx(t), "lion_tools")
				if err != nil {
					return false
				}
				e, err := kv.Get(bustest.Ctx(t), "echo")
				return err == nil && len(e.Value()) > 0
			})
			for i := range 2 {
				var out []byte
				bustest.WaitFor(t, 10*time.Second, "an invocation answered", func() bool {
					o, err := inv.Invoke(bustest.Ctx(t), call("echo", map[string]any{"text": "hi"}, "key-1"))
					if err != nil || o.Error != nil {
						return false
					}
					out, _ = json.Marshal(o.Output)
					return true
				})
				if string(out) != `{"by":"svc","echo":"hi"}` {
					t.Fatalf("invocation %d answered %s", i, out)
				}
			}
			if n := runs.Load(); n != 1 {
				t.Errorf("the handler ran %d times for one idempotency key, want 1: the results are not remembered again", n)
			}
			if _, err := b.js.KeyValue(bustest.Ctx(t), tools.ResultsBucket("lion")); err != nil {
				t.Errorf("the results bucket is not there again: %v", err)
			}
		})
	}
}

// restartable is an embedded server on a fixed port that a test can start
// again, and a connection to it that reconnects.
type restartable struct {
	srv  *embedded.Server
	port int
	nc   *nats.Conn
	js   jetstream.JetStream
}

func newRestartable(t *testing.T) *restartable {
	t.Helper()
	b := &restartable{port: bustest.FreePorts(t, 1)[0]}
	b.start(t)
	b.nc = b.conn(t)
	b.js, _ = jetstream.New(b.nc)
	return b
}

func (b *restartable) start(t *testing.T) {
	t.Helper()
	srv, err := embedded.Start(bustest.Ctx(t), embedded.Config{Port: b.port, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	b.srv = srv
	t.Cleanup(srv.Shutdown)
}

// restartEmpty shuts the server down and starts one on the same port with
// an empty store.
func (b *restartable) restartEmpty(t *testing.T) {
	t.Helper()
	b.srv.Shutdown()
	b.start(t)
	bustest.WaitFor(t, 10*time.Second, "reconnected", b.nc.IsConnected)
}

func (b *restartable) conn(t *testing.T) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(b.srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}
