package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
)

// startLoggedWorker starts a worker with echoHandler on its own
// connection, logging at info into the returned lines.
func startLoggedWorker(t *testing.T, b *bustest.Bus, cfg worker.Config) (*worker.Worker, *logLines) {
	t.Helper()
	nc, _, res := b.Conn(t)
	logs := &logLines{}
	cfg.Logger = zerolog.New(logs).Level(zerolog.InfoLevel)
	if cfg.FetchWait == 0 {
		cfg.FetchWait = 200 * time.Millisecond
	}
	w, err := worker.New(nc, res, b.Codec, echoHandler(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	return w, logs
}

// warnings returns the lines of logs at warn level and above.
func warnings(t *testing.T, logs *logLines) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec struct{ Level string }
		if line == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec.Level == "warn" || rec.Level == "error" {
			out = append(out, line)
		}
	}
	return out
}

// An idle worker notices, at its periodic check, a stream no request of
// it touched (the dead letters) missing and creates it again, with the
// configured settings, logging that once and nothing else.
func TestHealth_periodic_check_creates_a_missing_stream_again(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{DeadMaxMsgs: 77})
	_, logs := startLoggedWorker(t, b, worker.Config{HealthInterval: 200 * time.Millisecond})
	name := b.Res.Subjects.DeadStream()
	if err := b.JS.DeleteStream(bustest.Ctx(t), name); err != nil {
		t.Fatal(err)
	}
	bustest.WaitFor(t, 5*time.Second, "the dead-letter stream created again", func() bool {
		st, err := b.JS.Stream(bustest.Ctx(t), name)
		return err == nil && st.CachedInfo().Config.MaxMsgs == 77
	})
	time.Sleep(500 * time.Millisecond) // more checks: nothing more to log
	w := warnings(t, logs)
	if len(w) != 1 || !strings.Contains(w[0], `"stream":"`+name+`"`) || !strings.Contains(w[0], "the stream did not exist; created it again") {
		t.Errorf("warnings %q, want the one re-creation of %s", w, name)
	}
}

// Ready says why the worker cannot serve: a stream missing (and a probe
// that finds one makes the worker create it again at once, though its
// periodic check is an hour away), the connection down.
func TestHealth_ready_reports_what_is_missing_and_a_lost_connection(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	w, logs := startLoggedWorker(t, b, worker.Config{HealthInterval: time.Hour})
	ctx := bustest.Ctx(t)
	bustest.WaitFor(t, 5*time.Second, "ready", func() bool { return w.Ready(ctx) == nil })
	if err := b.JS.DeleteStream(ctx, b.Res.Subjects.HistoryStream()); err != nil {
		t.Fatal(err)
	}
	err := w.Ready(ctx)
	if !errors.Is(err, worker.ErrNotReady) || !strings.Contains(err.Error(), "stream "+b.Res.Subjects.HistoryStream()+" missing") {
		t.Fatalf("Ready with the history stream deleted = %v, want it named missing", err)
	}
	bustest.WaitFor(t, 5*time.Second, "ready again", func() bool { return w.Ready(ctx) == nil })
	if _, err := b.JS.Stream(ctx, b.Res.Subjects.HistoryStream()); err != nil {
		t.Fatalf("the history stream was not created again: %v", err)
	}
	bustest.WaitFor(t, 5*time.Second, "the re-creation logged", func() bool {
		return logs.count(t, "warn", "the stream did not exist; created it again") > 0
	})
	time.Sleep(200 * time.Millisecond)
	if n := logs.count(t, "warn", "the stream did not exist; created it again"); n != 1 {
		t.Errorf("%d re-creations logged, want 1:\n%s", n, logs)
	}

	b.Srv.Shutdown()
	var last error
	deadline := time.Now().Add(15 * time.Second)
	for {
		// As a probe would: with a short deadline, for a probe sent
		// before the connection noticed its loss waits for an answer.
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		last = w.Ready(pctx)
		cancel()
		if errors.Is(last, worker.ErrNotReady) && strings.Contains(last.Error(), "connection to NATS") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Ready with the server down = %v, want the connection named", last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The results stream is deleted while no check is due: ten requests
// that cannot store their answers all fail once; the first failure makes
// the worker check, which creates the stream again; every request is
// answered on its retry, and the log holds the one re-creation, no
// warning per request.
func TestHealth_failures_it_explains_are_not_logged_per_request(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	nc, err := nats.Connect(b.Srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	_, logs := startLoggedWorker(t, b, worker.Config{HealthInterval: time.Hour, RequestLogLevel: "debug"})
	ctx := bustest.Ctx(t)
	bustest.MustResult(t, b.Do(t, "op.echo", "", map[string]any{"before": true}), nil)
	if err := b.JS.DeleteStream(ctx, b.Res.Subjects.ResultsStream()); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 10)
	for i := range ids {
		if ids[i], err = b.Client.Submit(ctx, "op.echo", "", map[string]any{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		r, ok := b.AwaitWithin(t, id, 20*time.Second)
		if !ok {
			t.Fatalf("%s not answered:\n%s", id, logs)
		}
		bustest.MustResult(t, r, nil)
	}
	w := warnings(t, logs)
	if len(w) != 1 || !strings.Contains(w[0], fmt.Sprintf(`"stream":"%s"`, b.Res.Subjects.ResultsStream())) {
		t.Errorf("warnings %q, want only the re-creation of the results stream", w)
	}
}
