// Package js_test runs the tests of the TypeScript SDK (clients/js/test,
// node's test runner) against a real deployment: an embedded NATS server,
// a worker started through bus.Start (the scripted provider, the fake
// Claude Code CLI as cli:fake, the tools of the registry over NATS, a
// named operation op.echo), and a control service through which the node
// tests start and kill workers and Go replicas of tools.
package js_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli/clitest"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/tools/toolschema"
)

// Control subjects of the harness (core NATS request/reply, JSON).
const (
	ctlStartWorker = "jsharness.worker.start" // {prefix, ack_wait_ms} -> {id}
	ctlKillWorker  = "jsharness.worker.kill"  // {id} -> {}
	ctlStartTool   = "jsharness.gotool.start" // {prefix, service, tool, parameters, delay_ms} -> {id}
	ctlStopTool    = "jsharness.gotool.stop"  // {id} -> {}
	// A second server, of its own, which a test restarts (same port, same
	// store) with its clients connected: {} -> {url}.
	ctlStartServer   = "jsharness.server2.start"
	ctlRestartServer = "jsharness.server2.restart"
	// ranPrefix.<tool> gets "go" each time a Go replica's handler runs.
	ranPrefix = "jsharness.ran."
)

// harness is the deployment the node tests run against.
type harness struct {
	t       *testing.T
	b       *bustest.Bus
	fakeCLI string
	cliDir  string

	mu          sync.Mutex
	server2     *embedded.Server
	server2Dir  string
	server2Port int
	provisioned map[string]bool
	workers     map[int]func()
	tools       map[int]*tools.Service
	next        int
}

func TestTypeScriptSDK(t *testing.T) {
	node := bustest.Node(t)
	dir := bustest.JSClientDir(t)
	h := &harness{
		t: t, b: bustest.New(t, provision.Config{}), fakeCLI: clitest.Build(t), cliDir: t.TempDir(),
		provisioned: map[string]bool{tools.DefaultPrefix: true}, workers: map[int]func(){}, tools: map[int]*tools.Service{},
	}
	h.startWorker(tools.DefaultPrefix, 0)
	h.serveControl()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := []string{"--test", "--test-reporter=spec", "--test-concurrency=4"}
	if only := os.Getenv("LIONBUS_JS_TEST"); only != "" {
		args = append(args, "--test-name-pattern="+only)
	}
	files, err := filepath.Glob(filepath.Join(dir, "build", "test", "*.test.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no compiled tests in %s/build/test (npm run build): %v", dir, err)
	}
	cmd := exec.CommandContext(ctx, node, append(args, files...)...)
	cmd.Dir = dir
	// The fake CLI of a run whose prompt says GATE waits for the file gate
	// in FAKECLI_DIR: a test creates it to let the run finish.
	cmd.Env = append(os.Environ(), "NATS_URL="+h.b.Srv.ClientURL(), "FAKECLI_DIR="+h.cliDir)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	if err != nil {
		t.Fatalf("the TypeScript SDK's tests failed: %v (their output is above)", err)
	}
}

// startWorker starts a worker on prefix (provisioned first when new, with
// ackWait when not 0) and returns its id; killing it ends its context, a
// hard stop that leaves its requests unacknowledged.
func (h *harness) startWorker(prefix string, ackWait time.Duration) int {
	t := h.t
	h.mu.Lock()
	cfg := h.b.Cfg
	cfg.Prefix = prefix
	if ackWait > 0 {
		cfg.AckWait = ackWait
	}
	if !h.provisioned[prefix] {
		_, js := bustest.Connect(t, h.b.Srv)
		bustest.Provision(t, js, cfg)
		h.provisioned[prefix] = true
	}
	h.mu.Unlock()

	nc, js := bustest.Connect(t, h.b.Srv)
	reg, err := tools.OpenRegistry(bustest.Ctx(t), js, prefix, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	inv, err := tools.NewInvoker(nc, tools.InvokerConfig{Registry: reg, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	fake, err := cli.New(cli.Command{Name: "fake", Argv: []string{h.fakeCLI}, Env: []string{"FAKECLI_DIR=" + h.cliDir, "FAKECLI_DELAY_MS=30"}})
	if err != nil {
		t.Fatal(err)
	}
	fake.KillGrace = 300 * time.Millisecond
	opsReg := ops.NewOperations()
	if err := opsReg.Register("echo", ops.OperationFunc(func(_ context.Context, _ ops.Doer, req ops.Request) (*ops.Result, error) {
		return &ops.Result{Value: req.Data, BranchID: req.BranchID}, nil
	})); err != nil {
		t.Fatal(err)
	}
	wctx, kill := context.WithCancel(context.Background())
	svc, err := bus.Start(bustest.Ctx(t), bus.Config{
		Conn:          nc,
		Provision:     cfg,
		Worker:        worker.Config{FetchWait: 200 * time.Millisecond},
		Store:         store.Config{Logger: bustest.Logger(t)},
		Logger:        bustest.Logger(t),
		Tools:         inv,
		Providers:     bustest.Providers(t, map[string]ops.Provider{cli.Name: fake}),
		Operations:    opsReg,
		Sleep:         bustest.NoWait,
		WorkerContext: wctx,
	})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			kill()
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = svc.Stop(sctx)
			svc.Close()
			_ = reg.Close()
			nc.Close()
		})
	}
	t.Cleanup(stop)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next++
	h.workers[h.next] = stop
	return h.next
}

// goTool is a Go replica of a tool: its handler announces each run on
// ranPrefix.<tool>, waits delay (or until its context ends) and answers
// {"by": "go", "run": n, "args": args}.
func (h *harness) goTool(prefix, service, name string, params json.RawMessage, delay time.Duration) (int, error) {
	nc, _ := bustest.Connect(h.t, h.b.Srv)
	var runs atomic.Int64
	svc, err := tools.Serve(bustest.Ctx(h.t), nc, tools.ServiceConfig{
		Compile: toolschema.Compile, Name: service, Version: "1.0.0", Prefix: prefix, Heartbeat: 200 * time.Millisecond,
		Tools: []tools.Tool{{
			Name: name, Description: "A tool served by Go and TypeScript replicas.", Parameters: params,
			Handler: func(ctx context.Context, args map[string]any) (any, error) {
				n := runs.Add(1)
				_ = nc.Publish(ranPrefix+name, []byte("go"))
				select {
				case <-time.After(delay):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return map[string]any{"by": "go", "run": n, "args": args}, nil
			},
		}},
	})
	if err != nil {
		return 0, err
	}
	h.t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = svc.Stop(sctx)
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next++
	h.tools[h.next] = svc
	return h.next, nil
}

// serveControl answers the control subjects.
func (h *harness) serveControl() {
	t := h.t
	handle := func(subject string, f func(req map[string]any) (any, error)) {
		_, err := h.b.NC.Subscribe(subject, func(m *nats.Msg) {
			var req map[string]any
			_ = json.Unmarshal(m.Data, &req)
			// Starting a worker takes a while: answer from a goroutine so
			// that the connection's other subscriptions go on.
			go func() {
				v, err := f(req)
				if err != nil {
					v = map[string]any{"error": err.Error()}
				}
				b, _ := json.Marshal(v)
				_ = m.Respond(b)
			}()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	num := func(req map[string]any, k string) int {
		f, _ := req[k].(float64)
		return int(f)
	}
	str := func(req map[string]any, k, def string) string {
		if s, ok := req[k].(string); ok && s != "" {
			return s
		}
		return def
	}
	handle(ctlStartWorker, func(req map[string]any) (any, error) {
		id := h.startWorker(str(req, "prefix", tools.DefaultPrefix), time.Duration(num(req, "ack_wait_ms"))*time.Millisecond)
		return map[string]any{"id": id}, nil
	})
	handle(ctlKillWorker, func(req map[string]any) (any, error) {
		h.mu.Lock()
		stop := h.workers[num(req, "id")]
		h.mu.Unlock()
		if stop == nil {
			return nil, fmt.Errorf("no worker %d", num(req, "id"))
		}
		stop()
		return map[string]any{}, nil
	})
	handle(ctlStartTool, func(req map[string]any) (any, error) {
		params, _ := json.Marshal(req["parameters"])
		id, err := h.goTool(str(req, "prefix", tools.DefaultPrefix), str(req, "service", "go-replica"), str(req, "tool", ""), params,
			time.Duration(num(req, "delay_ms"))*time.Millisecond)
		return map[string]any{"id": id}, err
	})
	handle(ctlStopTool, func(req map[string]any) (any, error) {
		h.mu.Lock()
		svc := h.tools[num(req, "id")]
		h.mu.Unlock()
		if svc == nil {
			return nil, fmt.Errorf("no tool service %d", num(req, "id"))
		}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := svc.Stop(sctx); err != nil {
			return nil, err
		}
		return map[string]any{}, nil
	})
	handle(ctlStartServer, func(map[string]any) (any, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.server2 == nil {
			h.server2Dir = t.TempDir()
			if err := h.runServer2(embedded.RandomPort); err != nil {
				return nil, err
			}
			h.server2Port = h.server2.NATSServer().Addr().(*net.TCPAddr).Port
		}
		return map[string]any{"url": h.server2.ClientURL()}, nil
	})
	handle(ctlRestartServer, func(map[string]any) (any, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.server2 == nil {
			return nil, fmt.Errorf("the second server is not started")
		}
		h.server2.Shutdown()
		time.Sleep(300 * time.Millisecond) // its clients notice, and start reconnecting
		if err := h.runServer2(h.server2Port); err != nil {
			return nil, err
		}
		return map[string]any{"url": h.server2.ClientURL()}, nil
	})
	if err := h.b.NC.Flush(); err != nil {
		t.Fatal(err)
	}
}

// runServer2 starts the second server on port with its store in
// server2Dir; h.mu is held.
func (h *harness) runServer2(port int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := embedded.Start(ctx, embedded.Config{Port: port, StoreDir: h.server2Dir})
	if err != nil {
		return err
	}
	h.server2 = s
	h.t.Cleanup(s.Shutdown)
	return nil
}
