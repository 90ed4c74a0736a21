package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/embedded"
)

// A worker whose drain must abandon a request still running when
// --drain-timeout ends exits 0, and logs that it abandoned work.
func TestRun_drain_that_abandons_work_exits_zero(t *testing.T) {
	srv := bustest.NewServer(t)
	started := filepath.Join(t.TempDir(), "started")
	stdout, stderr, stop := runWorker(t, "--nats", srv.ClientURL(), "--prefix", "drn", "--drain-timeout", "300ms",
		"--log-format", "json", "--log-level", "info", "--name", "drainer",
		"--cli", "slow=sh -c 'touch "+started+"; exec sleep 60'")
	waitFor(t, 30*time.Second, "the worker to start", func() bool {
		return strings.Contains(stdout.String(), "serving prefix") || strings.Contains(stderr.String(), "worker:")
	})

	nc, _ := bustest.Connect(t, srv)
	cl, err := client.New(nc, client.Config{Prefix: "drn"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := cl.Submit(ctx, "branch.create", "", map[string]any{"branch_id": "d1", "chat_model": "cli:slow"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := cl.Await(ctx, id); err != nil || r.Err() != nil {
		t.Fatalf("branch.create: %v %v", err, r)
	}
	if _, err := cl.Submit(ctx, "run", "d1", map[string]any{"instruction": "take your time"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the CLI model to run", func() bool {
		_, err := os.Stat(started)
		return err == nil
	})

	t0 := time.Now()
	if code := stop(); code != exitOK {
		t.Fatalf("exit code = %d, want 0\nstderr:\n%s", code, stderr)
	}
	if d := time.Since(t0); d > 20*time.Second {
		t.Errorf("the worker took %s to stop, past its 300ms drain timeout", d)
	}
	if !strings.Contains(stderr.String(), `"level":"warn"`) || !strings.Contains(stderr.String(), "in-flight requests were abandoned") {
		t.Errorf("no warning that work was abandoned in:\n%s", stderr)
	}
	if strings.Contains(stderr.String(), `"message":"worker drained"`) {
		t.Errorf("a drain that abandoned work is logged as a clean one:\n%s", stderr)
	}
}

// A worker started before its NATS server waits for it, within
// --connect-timeout, and then serves.
func TestRun_waits_for_a_server_not_up_yet(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	url := "nats://127.0.0.1:" + strconv.Itoa(port)

	stdout, stderr, stop := runWorker(t, "--nats", url, "--connect-timeout", "30s", "--prefix", "late", "--log-level", "disabled")
	time.Sleep(time.Second) // the worker is trying to connect
	if strings.Contains(stdout.String(), "serving") {
		t.Fatalf("serving before the server is up: %s", stdout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := embedded.Start(ctx, embedded.Config{Port: port, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	waitFor(t, 30*time.Second, "the worker to serve", func() bool {
		return strings.Contains(stdout.String(), "serving prefix") || strings.Contains(stderr.String(), "worker:")
	})
	if !strings.Contains(stdout.String(), `serving prefix "late"`) {
		t.Fatalf("stdout %q stderr %q", stdout, stderr)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("exit code = %d\nstderr:\n%s", code, stderr)
	}
}
