package deploy

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/examples/tools/demotools"
	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/tools"
)

// The example tool services run as the user tools of nats/nats.conf (what
// compose does): they register, a worker's invocations reach them and are
// answered, notes keeps its bucket; the user cannot read the client's
// inbox, take requests or write answers.
func TestSingleAccount_tools_user(t *testing.T) {
	vars := []string{"LIONBUS_WORKER_PASSWORD", "LIONBUS_CLIENT_PASSWORD", "LIONBUS_TOOLS_PASSWORD", "NATS_SYS_PASSWORD"}
	s := startConfServer(t, "nats/nats.conf", vars)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The worker side: the workers create the lionbus buckets on start.
	workerNC, err := client.Connect(ctx, client.ConnectConfig{
		URL: s.ClientURL(), User: "worker", Password: password("LIONBUS_WORKER_PASSWORD"), InboxPrefix: "_INBOX_worker",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(workerNC.Close)
	inv, err := tools.NewInvoker(workerNC, tools.InvokerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	startSingleAccountWorker(t, s, inv)

	p := connectProbe(t, s, "tools", "LIONBUS_TOOLS_PASSWORD", "_INBOX_tools")
	js, err := jetstream.New(p.nc)
	if err != nil {
		t.Fatal(err)
	}
	notesCfg, err := demotools.Notes(ctx, js, tools.DefaultPrefix)
	if err != nil {
		t.Fatalf("notes: %v", err)
	}
	for _, cfg := range []tools.ServiceConfig{demotools.Calculator(tools.DefaultPrefix), notesCfg} {
		svc, err := tools.Serve(ctx, p.nc, cfg)
		if err != nil {
			t.Fatalf("serve %s: %v", cfg.Name, err)
		}
		t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	}
	for i, call := range []struct {
		tool string
		args map[string]any
	}{
		{"calculate", map[string]any{"op": "mul", "a": 6, "b": 7}},
		{"note_put", map[string]any{"key": "k", "text": "hello"}},
		{"note_get", map[string]any{"key": "k"}},
		{"note_list", map[string]any{}},
	} {
		out, err := inv.Invoke(ctx, ops.ToolInvocation{Function: call.tool, Arguments: call.args, IdempotencyKey: call.tool, RequestID: "r" + string(rune('0'+i))})
		if err != nil || out.Error != nil {
			t.Errorf("%s: %+v, %v", call.tool, out, err)
		} else {
			t.Logf("%s: %v", call.tool, out.Output)
		}
	}
	p.cannotSubscribe("_INBOX.client.x")
	p.cannotSubscribe("_INBOX.bob.x") // any other client's inbox too
	p.cannotSubscribe("_INBOX.>")
	p.cannotSubscribe("_INBOX_worker.x")
	p.cannotSubscribe("lion.ops.communicate")
	p.cannotPublish("lion.reply.x")
	p.cannotPublish("$JS.API.STREAM.DELETE.LION_OPS")
	p.cannotPublish("$KV.lion_branches.x")
}

// startSingleAccountWorker starts a real worker as the user worker of
// nats/nats.conf, with tools invoking the tool services.
func startSingleAccountWorker(t *testing.T, s *server.Server, tools ops.Invoker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc, err := bus.Start(ctx, bus.Config{
		Connect: client.ConnectConfig{
			URL: s.ClientURL(), User: "worker", Password: password("LIONBUS_WORKER_PASSWORD"), InboxPrefix: "_INBOX_worker",
		},
		Worker: worker.Config{FetchWait: 200 * time.Millisecond},
		Tools:  tools,
	})
	if err != nil {
		t.Fatalf("start the worker: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = svc.Stop(ctx)
		svc.Close()
	})
}
