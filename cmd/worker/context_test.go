package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
)

// A saved context (as `publisher context save` writes it) named by
// --nats-context supplies the worker's connection flags not given on the
// command line; settings the worker has no flag for are skipped, and a
// context that does not exist is an error.
func TestRun_nats_context(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	srv := bustest.NewServer(t)
	if err := os.MkdirAll(filepath.Join(dir, "lionbus", "contexts"), 0o700); err != nil {
		t.Fatal(err)
	}
	ctxJSON := `{"nats": "` + srv.ClientURL() + `", "prefix": "fromctx", "timeout": "5s"}`
	if err := os.WriteFile(filepath.Join(dir, "lionbus", "contexts", "dev.json"), []byte(ctxJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, stop := runWorker(t, "--nats-context", "dev", "--log-level", "disabled", "--name", "cw")
	waitFor(t, 30*time.Second, "the worker to start", func() bool {
		return strings.Contains(stdout.String(), "serving prefix") || strings.Contains(stderr.String(), "worker:")
	})
	if want := `lionbus worker "cw" serving prefix "fromctx" on NATS at ` + srv.ClientURL(); !strings.Contains(stdout.String(), want) {
		t.Fatalf("start line %q, want %q (stderr %s)", stdout.String(), want, stderr.String())
	}
	if code := stop(); code != exitOK {
		t.Fatalf("exit %d", code)
	}

	// A flag on the command line beats the context.
	stdout, stderr, stop = runWorker(t, "--nats-context", "dev", "--prefix", "flagp", "--log-level", "disabled", "--name", "cw2")
	waitFor(t, 30*time.Second, "the worker to start", func() bool {
		return strings.Contains(stdout.String(), "serving prefix") || strings.Contains(stderr.String(), "worker:")
	})
	if !strings.Contains(stdout.String(), `serving prefix "flagp" on NATS at `+srv.ClientURL()) {
		t.Fatalf("start line %q (stderr %s)", stdout.String(), stderr.String())
	}
	stop()

	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--nats-context", "nope"}, &out, &errOut); code == exitOK || !strings.Contains(errOut.String(), `no context "nope"`) {
		t.Fatalf("unknown context: exit %d, stderr %q", code, errOut.String())
	}
}
