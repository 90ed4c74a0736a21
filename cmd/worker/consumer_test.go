package main

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
)

// countLogs returns how many JSON log lines of stderr have level and
// message.
func countLogs(t *testing.T, stderr, level, message string) int {
	t.Helper()
	n := 0
	sc := bufio.NewScanner(strings.NewReader(stderr))
	for sc.Scan() {
		var line struct{ Level, Message string }
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if line.Level == level && line.Message == message {
			n++
		}
	}
	return n
}

// The shared consumer is deleted under a running worker: the worker logs
// it once, creates the consumer again with the configuration provisioning
// uses, and serves the next request.
func TestRun_recreates_a_deleted_consumer(t *testing.T) {
	srv := bustest.NewServer(t)
	stdout, stderr, stop := runWorker(t, "--nats", srv.ClientURL(), "--log-format", "json", "--log-level", "info", "--name", "w1")
	waitFor(t, 30*time.Second, "the worker to start", func() bool {
		return strings.Contains(stdout.String(), "serving prefix") || strings.Contains(stderr.String(), "worker:")
	})
	nc, js := bustest.Connect(t, srv)
	res := bustest.Provision(t, js, provision.Config{})
	if err := res.Ops.DeleteConsumer(bustest.Ctx(t), res.Subjects.WorkersConsumer()); err != nil {
		t.Fatal(err)
	}
	const window = 2 * time.Second
	time.Sleep(window)
	logs := stderr.String()
	warnings := countLogs(t, logs, "warn", "fetch requests")
	recreated := countLogs(t, logs, "warn", "the workers consumer did not exist; created it again")
	t.Logf("%d fetch warnings and %d recreations logged in %s after the consumer was deleted", warnings, recreated, window)
	if warnings > 1 || recreated != 1 {
		t.Errorf("logged %d fetch warnings and %d recreations, want at most 1 and 1:\n%s", warnings, recreated, logs)
	}
	c, err := res.Ops.Consumer(bustest.Ctx(t), res.Subjects.WorkersConsumer())
	if err != nil {
		t.Fatalf("the workers consumer was not created again: %v", err)
	}
	if got, want := c.CachedInfo().Config, res.WorkersConfig(); got.AckWait != want.AckWait ||
		got.MaxDeliver != want.MaxDeliver || got.FilterSubject != want.FilterSubject || got.AckPolicy != want.AckPolicy {
		t.Errorf("recreated consumer %+v, want %+v", got, want)
	}

	cl, err := client.New(nc, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := cl.Do(ctx, "branch.create", "", map[string]any{"branch_id": "after", "chat_model": "scripted:echo"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Result(); err != nil {
		t.Fatalf("branch.create answered %v", err)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("exit code = %d\nstderr:\n%s", code, stderr)
	}
}
