package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
)

// runWorker runs the worker's run function in the background and returns
// its output buffers and a function that stops it (as SIGTERM would) and
// returns its exit code.
func runWorker(t *testing.T, args ...string) (stdout, stderr *bustest.SyncBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr = &bustest.SyncBuffer{}, &bustest.SyncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, stdout, stderr) }()
	var once sync.Once
	code := -1
	stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(60 * time.Second):
				t.Errorf("worker did not stop within 60s after cancel")
			}
		})
		return code
	}
	t.Cleanup(func() { stop() })
	return stdout, stderr, stop
}

// waitFor polls until cond holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRun_demo_prints_results_and_history_then_serves(t *testing.T) {
	stdout, stderr, stop := runWorker(t, "--demo", "--port", "-1", "--log-level", "disabled", "--store-dir", t.TempDir())
	waitFor(t, 90*time.Second, "the demo to finish", func() bool {
		return strings.Contains(stdout.String(), "Ctrl-C to stop.") || strings.Contains(stderr.String(), "worker:")
	})
	out := stdout.String()
	if code := stop(); code != exitOK {
		t.Fatalf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitOK, out, stderr.String())
	}
	want := []string{
		"tool services   calculator (calculate, to_celsius) and notes (note_put, note_get, note_list) answer on lion.tool.*, registered in lion_tools",
		`branch.create   branch "demo"`,
		"→ Hello! I am a scripted model, answering over NATS JetStream.",
		`→ {"city":"Paris","country":"France","population_millions":2.1}`,
		"→ You're welcome. Goodbye!",
		`calculate {"a":6,"b":7,"op":"mul"} → 42`,
		`note_put {"key":"motto","text":"lionbus runs tools over NATS"} → {"key":"motto","words":5}`,
		`delete_branch {"branch_id":"demo"} → denied: tool "delete_branch" is not allowed on this branch`,
		"operate         Convert 212 °F to Celsius",
		"response_format: {summary: string}, actions: true",
		`→ {"action_requests":[{"arguments":{"fahrenheit":212},"function":"to_celsius"},{"arguments":{"key":"motto"},"function":"note_get"}],"action_required":true,"summary":"Asking the tools for the conversion and the saved note."}`,
		"    action_responses:\n" +
			`      to_celsius {"fahrenheit":212} → {"celsius":100}` + "\n" +
			`      note_get {"key":"motto"} → {"key":"motto","text":"lionbus runs tools over NATS"}`,
		"branch.history  7 events on lion.history.demo",
		"system     You are a concise assistant in the lionbus demo.",
		"user       Which city is the capital of France, and how many people live there?",
		"assistant  You're welcome. Goodbye!",
		"action     calculate → 42",
		"action     to_celsius → {\"celsius\":100}",
		// Each communicate emits run_start, one message_added per recorded
		// message (the instruction and the reply) and run_end; the act
		// tool_pre and tool_post per authorized call, and message_added
		// per recorded action request and response; the operate all of
		// these: run_start, its middle's two message_added, its act
		// stage's two tool_pre, two tool_post and four message_added,
		// and run_end.
		"events          34 events (4 run_start, 18 message_added, 4 run_end, 4 tool_pre, 4 tool_post) on lion.events.demo.>",
		"pub lion.ops.communicate",
		"sub 'lion.events.demo.>'",
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("demo output lacks %q\nstdout:\n%s\nstderr:\n%s", w, out, stderr.String())
		}
	}
	// The history lists the events in order: created, two exchanges, the
	// act, the operate's exchange and its act stage, then the last
	// exchange.
	if i, j := strings.Index(out, "#1   branch.created"), strings.Index(out, "#7   branch.messages"); i < 0 || j < i {
		t.Errorf("history events missing or out of order:\n%s", out)
	}
}

func TestRun_demo_twice_on_one_store_starts_a_fresh_branch(t *testing.T) {
	dir := t.TempDir()
	for i := range 2 {
		stdout, stderr, stop := runWorker(t, "--demo", "--port", "-1", "--log-level", "disabled", "--store-dir", dir)
		waitFor(t, 90*time.Second, "the demo to finish", func() bool {
			return strings.Contains(stdout.String(), "Ctrl-C to stop.") || strings.Contains(stderr.String(), "worker:")
		})
		if code := stop(); code != exitOK {
			t.Fatalf("run %d: exit code = %d\nstdout:\n%s\nstderr:\n%s", i+1, code, stdout, stderr)
		}
		if !strings.Contains(stdout.String(), "branch.history  7 events") {
			t.Fatalf("run %d: want a fresh 7-event history:\n%s", i+1, stdout)
		}
		// The events of the first run are still stored; only this run's count.
		if !strings.Contains(stdout.String(), "events          34 events (") {
			t.Errorf("run %d: want the 34 events of this run:\n%s", i+1, stdout)
		}
	}
}

func TestRun_joins_an_existing_server_and_serves_requests(t *testing.T) {
	srv := bustest.NewServer(t)
	stdout, stderr, stop := runWorker(t, "--nats", srv.ClientURL(), "--prefix", "joined", "--concurrency", "2",
		"--max-ack-pending", "37", "--log-format", "json", "--log-level", "info", "--name", "w1")
	waitFor(t, 30*time.Second, "the worker to start", func() bool {
		return strings.Contains(stdout.String(), "serving prefix") || strings.Contains(stderr.String(), "worker:")
	})
	if got := stdout.String(); !strings.Contains(got, `lionbus worker "w1" serving prefix "joined" on NATS at `+srv.ClientURL()) {
		t.Fatalf("start line = %q", got)
	}

	nc, js := bustest.Connect(t, srv)
	// --max-ack-pending reaches the workers consumer.
	cons, err := js.Consumer(context.Background(), "JOINED_OPS", "workers")
	if err != nil {
		t.Fatal(err)
	}
	if ci := cons.CachedInfo(); ci.Config.MaxAckPending != 37 {
		t.Fatalf("the workers consumer's max ack pending is %d, want 37 (--max-ack-pending)", ci.Config.MaxAckPending)
	}
	cl, err := client.New(nc, client.Config{Prefix: "joined"})
	if err != nil {
		t.Fatal(err)
	}
	events, err := nc.SubscribeSync("joined.events.b1.>")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tests := []struct {
		verb, branch string
		data         any
		wantValue    string
		wantCode     ops.Code
	}{
		{verb: "branch.create", data: map[string]any{"branch_id": "b1", "chat_model": "scripted:echo"}},
		{verb: "communicate", branch: "b1", data: map[string]any{"instruction": "ping"}, wantValue: `"ping"`},
		{verb: "communicate", branch: "nope", data: map[string]any{"instruction": "x"}, wantCode: "branch_not_found"},
		{verb: "communicate", branch: "b1", data: map[string]any{"guidance": "no instruction"}, wantCode: protocol.CodeInvalidData},
	}
	for _, tc := range tests {
		reply, err := cl.Do(ctx, tc.verb, tc.branch, tc.data)
		if err != nil {
			t.Fatalf("%s: %v", tc.verb, err)
		}
		res, err := reply.Result()
		if tc.wantCode != "" {
			var re *client.RemoteError
			if !errors.As(err, &re) || re.Code != tc.wantCode {
				t.Errorf("%s on %q: error = %v, want code %s", tc.verb, tc.branch, err, tc.wantCode)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.verb, err)
		}
		if tc.wantValue != "" && string(res.Value) != tc.wantValue {
			t.Errorf("%s: value = %s, want %s", tc.verb, res.Value, tc.wantValue)
		}
	}

	// The communicate on b1 was observable as signal events, in order.
	wantEvents := []struct{ subject, typ string }{
		{"joined.events.b1.run_start", "lionbus.run.start"},
		{"joined.events.b1.message_added", "lionbus.message.added"},
		{"joined.events.b1.message_added", "lionbus.message.added"},
		{"joined.events.b1.run_end", "lionbus.run.end"},
	}
	for i, want := range wantEvents {
		m, err := events.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("event %d (%s): %v", i+1, want.subject, err)
		}
		var ev struct {
			Type      string `json:"type"`
			Source    string `json:"source"`
			RequestID string `json:"requestid"`
		}
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Fatalf("event %d: %v: %s", i+1, err, m.Data)
		}
		if m.Subject != want.subject || ev.Type != want.typ || ev.Source != "/lionbus/worker/w1" || ev.RequestID == "" {
			t.Errorf("event %d: subject %s type %s source %s requestid %q, want %s %s /lionbus/worker/w1 and a request id",
				i+1, m.Subject, ev.Type, ev.Source, ev.RequestID, want.subject, want.typ)
		}
	}

	if code := stop(); code != exitOK {
		t.Fatalf("exit code = %d\nstderr:\n%s", code, stderr)
	}
	// JSON logs: every line of stderr is a JSON object.
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	for _, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("log line is not JSON: %q", line)
		}
	}
	if !strings.Contains(stderr.String(), `"message":"worker drained"`) {
		t.Errorf("no drain log line in:\n%s", stderr)
	}
}

func TestRun_warns_about_drift_of_existing_streams(t *testing.T) {
	tests := []struct {
		name     string
		prepare  func(ctx context.Context, t *testing.T, js jetstream.JetStream)
		wantWarn string
	}{
		{
			name: "results stream without direct gets",
			prepare: func(ctx context.Context, t *testing.T, js jetstream.JetStream) {
				// As an earlier version created it.
				if _, err := provision.Ensure(ctx, js, provision.Config{Prefix: "drifty"}); err != nil {
					t.Fatal(err)
				}
				st, err := js.Stream(ctx, "DRIFTY_RESULTS")
				if err != nil {
					t.Fatal(err)
				}
				cfg := st.CachedInfo().Config
				cfg.AllowDirect = false
				if _, err := js.UpdateStream(ctx, cfg); err != nil {
					t.Fatal(err)
				}
			},
			wantWarn: "stream DRIFTY_RESULTS: allow direct is false, configured true (left unchanged)",
		},
		{
			name: "shorter results age",
			prepare: func(ctx context.Context, t *testing.T, js jetstream.JetStream) {
				if _, err := provision.Ensure(ctx, js, provision.Config{Prefix: "drifty", ResultsMaxAge: time.Hour}); err != nil {
					t.Fatal(err)
				}
			},
			wantWarn: "DRIFTY_RESULTS: max age is 1h0m0s, configured 24h0m0s (left unchanged)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := bustest.NewServer(t)
			_, js := bustest.Connect(t, srv)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tc.prepare(ctx, t, js)

			stdout, stderr, stop := runWorker(t, "--nats", srv.ClientURL(), "--prefix", "drifty", "--log-format", "json", "--log-level", "warn")
			waitFor(t, 30*time.Second, "the worker to start", func() bool {
				return strings.Contains(stdout.String(), "serving prefix") || strings.Contains(stderr.String(), "worker:")
			})
			if code := stop(); code != exitOK {
				t.Fatalf("exit code = %d\nstderr:\n%s", code, stderr)
			}
			var found bool
			for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
				var rec struct {
					Level, Message, Drift string
				}
				if json.Unmarshal([]byte(line), &rec) == nil && rec.Level == "warn" && strings.Contains(rec.Drift, tc.wantWarn) {
					found = true
				}
			}
			if !found {
				t.Errorf("no warning with drift %q in:\n%s", tc.wantWarn, stderr)
			}
		})
	}
}

func TestRun_exit_codes(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"help", []string{"--help"}, exitOK, ""}, // on stdout: TestRun_command_line
		{"unknown flag", []string{"--bogus"}, exitUsage, "unknown flag: --bogus"},
		{"stray argument", []string{"serve"}, exitUsage, `unexpected argument "serve"`},
		{"zero concurrency", []string{"--concurrency", "0"}, exitUsage, "--concurrency must be between 1 and 1024"},
		{"zero max ack pending", []string{"--max-ack-pending", "0"}, exitUsage, "--max-ack-pending 0: want 1..100000"},
		{"max ack pending above the queue", []string{"--max-ack-pending", "100001"}, exitUsage, "--max-ack-pending 100001: want 1..100000"},
		{"bad prefix", []string{"--prefix", "a.b"}, exitUsage, `--prefix "a.b"`},
		{"store dir with nats", []string{"--nats", "nats://127.0.0.1:1", "--store-dir", "x"}, exitUsage, "--store-dir is for the embedded server"},
		{"half TLS", []string{"--tls-cert", "c.pem"}, exitUsage, "--tls-cert and --tls-key go together"},
		{"bad log level", []string{"--log-level", "loud"}, exitUsage, `invalid --log-level "loud"`},
		{"bad log format", []string{"--log-format", "xml"}, exitUsage, `invalid --log-format "xml"`},
		{"zero tool timeout", []string{"--tool-timeout", "0s"}, exitUsage, "--tool-timeout and --approval-timeout must be positive"},
		{"bad tool timeouts", []string{"--tool-timeouts", "refund"}, exitUsage, `--tool-timeouts: "refund" is not tool=duration`},
		{"port taken", []string{"--port", takenPort(t), "--log-level", "disabled"}, exitFailure, "embedded NATS cannot listen on 127.0.0.1:"},
		{"unreachable nats", []string{"--nats", "nats://127.0.0.1:1", "--connect-timeout", "500ms", "--log-level", "disabled"}, exitFailure, "worker: client: connect to nats://127.0.0.1:1"},
		{"open to the network without auth", []string{"--host", "0.0.0.0", "--port", "-1", "--log-level", "disabled"}, exitFailure, "refusing to listen beyond localhost without authentication"},
		{"bad request log level", []string{"--request-log-level", "loud"}, exitUsage, `--request-log-level "loud"`},
		{"bad run log directory", []string{"--runlog-dir", "runs.audit"}, exitUsage, `--runlog-dir "runs.audit": want 1 to 64 characters of [A-Za-z0-9_-]`},
		{"token and token file", []string{"--token", "a", "--token-file", "f"}, exitUsage, "--token and --token-file exclude each other"},
		{"missing token file", []string{"--port", "-1", "--token-file", "/nonexistent/tok", "--log-level", "disabled"}, exitFailure, "--token-file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tc.wantErr)
			}
		})
	}
}

func TestFlagsFromEnv(t *testing.T) {
	env := map[string]string{
		"LIONBUS_CONCURRENCY": "3",
		"LIONBUS_PREFIX":      "fromenv",
		"LIONBUS_NATS":        "nats://example:4222",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		args            []string
		wantConcurrency int
		wantPrefix      string
	}{
		{nil, 3, "fromenv"},
		{[]string{"--concurrency", "5"}, 5, "fromenv"},
		{[]string{"--prefix", "flag"}, 3, "flag"},
	}
	for _, tc := range tests {
		var c config
		fs := newFlagSet(&c, &bytes.Buffer{})
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := flagsFromEnv(fs, lookup); err != nil {
			t.Fatal(err)
		}
		if c.Concurrency != tc.wantConcurrency || c.Prefix != tc.wantPrefix || c.NATSURL != "nats://example:4222" {
			t.Errorf("args %v: concurrency %d prefix %q nats %q", tc.args, c.Concurrency, c.Prefix, c.NATSURL)
		}
	}

	var c config
	fs := newFlagSet(&c, &bytes.Buffer{})
	_ = fs.Parse(nil)
	err := flagsFromEnv(fs, func(k string) (string, bool) { return "many", k == "LIONBUS_CONCURRENCY" })
	if err == nil || !strings.Contains(err.Error(), "LIONBUS_CONCURRENCY") {
		t.Errorf("bad env value: err = %v, want one naming LIONBUS_CONCURRENCY", err)
	}
}

func TestNewLogger(t *testing.T) {
	tests := []struct {
		format, level string
		wantJSON      bool
		wantErr       bool
	}{
		{"json", "info", true, false},
		{"auto", "info", true, false}, // a buffer is not a terminal
		{"console", "debug", false, false},
		{"json", "", false, true},
		{"yaml", "info", false, true},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		log, err := newLogger(&buf, tc.format, tc.level)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s/%s: err = %v", tc.format, tc.level, err)
			continue
		}
		if tc.wantErr {
			continue
		}
		log.Info().Str("k", "v").Msg("hello")
		var m map[string]any
		isJSON := json.Unmarshal(buf.Bytes(), &m) == nil
		if isJSON != tc.wantJSON || !strings.Contains(buf.String(), "hello") {
			t.Errorf("%s: output %q, want JSON=%v", tc.format, buf.String(), tc.wantJSON)
		}
	}
}

func TestRun_gives_up_when_JetStream_never_becomes_ready(t *testing.T) {
	// A server without JetStream stands for a cluster that has not elected
	// its leader yet: the worker retries provisioning, then gives up.
	ns := bustest.NewCoreServer(t)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--nats", ns.ClientURL(), "--startup-timeout", "1500ms", "--log-format", "json", "--log-level", "warn"}, &stdout, &stderr)
	if code != exitFailure {
		t.Fatalf("exit code = %d, want %d\nstderr:\n%s", code, exitFailure, stderr.String())
	}
	if got := strings.Count(stderr.String(), "JetStream not ready; retrying"); got < 2 {
		t.Errorf("%d retries logged, want at least 2:\n%s", got, stderr.String())
	}
	if !strings.Contains(stderr.String(), "JetStream not ready after 1.5s") || !strings.Contains(stderr.String(), "(--startup-timeout 1.5s)") {
		t.Errorf("stderr lacks the startup timeout:\n%s", stderr.String())
	}
}

// takenPort listens on a free loopback port for the rest of the test and
// returns it.
func takenPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
