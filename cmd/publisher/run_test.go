package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli/clitest"
)

// startCLIWorker starts a worker serving the fake CLI as cli:fake and
// returns the server's URL.
func startCLIWorker(t *testing.T) string {
	t.Helper()
	b := bustest.New(t, provision.Config{})
	prov, err := cli.New(cli.Command{Name: "fake", Argv: []string{clitest.Build(t)}, Env: []string{"FAKECLI_DIR=" + t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	prov.KillGrace = 300 * time.Millisecond
	b.StartWorker(t, nil, nil, map[string]ops.Provider{cli.Name: prov}, worker.Config{Name: "test"})
	return b.Srv.ClientURL()
}

func TestPublisher_run(t *testing.T) {
	url := startCLIWorker(t)
	n := []string{"--nats", url}
	steps := []step{
		{name: "create", args: append(n, "branch", "create", "--id", "r1", "--chat-model", "cli:fake")},
		{name: "run", args: append(n, "run", "--branch", "r1", "list the files"),
			wantOut: []string{"I'll list the files in the repository.\n[tool Bash {\"command\":\"ls\"}]\n[result a.txt b.txt]\n", "There are two files: a.txt and b.txt.\n"},
			wantErr: []string{"10 chunks, session sess-"}},
		{name: "run failing", args: append(n, "run", "--branch", "r1", "FAIL"), wantCode: exitFailed,
			wantOut: []string{"I'll list the files in the repository.\n[error API Error: 529"}, wantErr: []string{"error: provider_error:"}},
		{name: "no branch", args: append(n, "run", "x"), wantCode: exitUsage, wantErr: []string{"run needs --branch"}},
		// 0021-D5-06: the worker's run log directory, or the one asked for.
		{name: "run persisted", args: append(n, "run", "--branch", "r1", "--request-id", "p1", "--stream-persist", "list the files"),
			wantErr: []string{"10 chunks, session sess-", ", run log lion.runlog.default.p1.snapshot\n"}},
		{name: "run persisted in a directory", args: append(n, "run", "--branch", "r1", "--request-id", "p2", "--stream-persist-dir", "audit", "list the files"),
			wantErr: []string{", run log lion.runlog.audit.p2.snapshot\n"}},
		{name: "a bad directory", args: append(n, "run", "--branch", "r1", "--stream-persist-dir", "a.b", "list the files"), wantCode: exitFailed,
			wantErr: []string{"error: invalid_data: data at /stream_persist_dir"}},
	}
	for _, s := range steps {
		code, stdout, stderr := call(t, s.stdin, s.args...)
		s.check(t, code, stdout, stderr)
	}
}

// Ctrl-C sends the cancel: the run ends cleanly with what arrived.
func TestPublisher_run_interrupted(t *testing.T) {
	url := startCLIWorker(t)
	if code, out, errOut := call(t, "", "--nats", url, "branch", "create", "--id", "r1", "--chat-model", "cli:fake"); code != exitOK {
		t.Fatalf("create: %d %s %s", code, out, errOut)
	}
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	var stdout, stderr bustest.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--nats", url, "run", "--branch", "r1", "HANG"}, strings.NewReader(""), &stdout, &stderr)
	}()
	bustest.WaitFor(t, 10*time.Second, "the first text", func() bool { return strings.Contains(stdout.String(), "repository.") })
	interrupt()
	select {
	case code := <-done:
		if code != exitOK || !strings.Contains(stderr.String(), "cancel sent") || !strings.Contains(stderr.String(), "cancelled") {
			t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not end after the interrupt")
	}
}
