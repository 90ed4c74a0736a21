package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/client"
)

// A worker whose embedded server listens on every interface takes its
// token from a file; the token appears in none of its output, at debug
// level, not even when a client presents a wrong one.
func TestRun_secrets_stay_out_of_the_output(t *testing.T) {
	const token = "tok-7f3a9c-never-print-me"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, stop := runWorker(t, "--host", "0.0.0.0", "--port", "-1", "--token-file", file,
		"--log-level", "debug", "--log-format", "json", "--name", "sec")
	waitFor(t, 30*time.Second, "the worker to start", func() bool {
		return strings.Contains(stdout.String(), "serving prefix") || strings.Contains(stderr.String(), "worker:")
	})
	m := regexp.MustCompile(`at nats://[^:]+:(\d+)`).FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("no URL in the start line %q (stderr %s)", stdout.String(), stderr.String())
	}
	local := "nats://127.0.0.1:" + m[1]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The right token, from a URL: requests are served.
	nc, err := client.Connect(ctx, client.ConnectConfig{URL: fmt.Sprintf("nats://%s@127.0.0.1:%s", token, m[1])})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cl, err := client.New(nc, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []struct {
		verb, branch string
		data         map[string]any
	}{
		{"branch.create", "", map[string]any{"branch_id": "s1", "chat_model": "scripted:echo"}},
		{"communicate", "s1", map[string]any{"instruction": "hello"}},
	} {
		r, err := cl.Do(ctx, req.verb, req.branch, req.data)
		if err != nil || r.Err() != nil {
			t.Fatalf("%s: %v %v", req.verb, err, r.Err())
		}
	}
	// No token, and a wrong one: refused.
	for _, cfg := range []client.ConnectConfig{{URL: local}, {URL: local, Token: "wrong-token"}} {
		cfg.Timeout = 2 * time.Second
		if nc, err := client.Connect(ctx, cfg); err == nil {
			nc.Close()
			t.Fatalf("connected with %+v", cfg)
		}
	}
	if code := stop(); code != exitOK {
		t.Fatalf("exit code %d\n%s", code, stderr)
	}
	for name, out := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String()} {
		if strings.Contains(out, token) {
			t.Errorf("%s shows the token:\n%s", name, out)
		}
	}
	if !strings.Contains(stderr.String(), `"level":"debug"`) {
		t.Error("no debug lines: the check saw too little")
	}
}
