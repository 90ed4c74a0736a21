package worker_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
)

// logLines is a zerolog writer keeping every JSON line, safe for
// concurrent use.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// count returns how many lines have level and message.
func (l *logLines) count(t *testing.T, level, message string) int {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(l.buf.Bytes()))
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

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// The shared consumer (or its stream) disappears under running workers.
// They do not spin on the failing fetches: they back off, and log the
// failure at most once (not at all when their health check explains it);
// they create the consumer (and its stream) again; and once the consumer
// is there, requests are answered again.
func TestWorker_fetch_failures_back_off_and_the_consumer_is_recreated(t *testing.T) {
	t.Parallel()
	const window = 3 * time.Second
	deleteConsumer := func(t *testing.T, b *bustest.Bus) {
		if err := b.Res.Ops.DeleteConsumer(bustest.Ctx(t), b.Res.Subjects.WorkersConsumer()); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		workers int
		// lose takes the consumer away.
		lose func(t *testing.T, b *bustest.Bus)
		// The workers created the consumer again ("did not exist" lines).
		wantRecreated bool
	}{
		{name: "consumer deleted", workers: 2, lose: deleteConsumer, wantRecreated: true},
		{
			name:    "ops stream deleted",
			workers: 1,
			lose: func(t *testing.T, b *bustest.Bus) {
				if err := b.JS.DeleteStream(bustest.Ctx(t), b.Res.Subjects.OpsStream()); err != nil {
					t.Fatal(err)
				}
			},
			wantRecreated: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := bustest.New(t, provision.Config{})
			logs := make([]*logLines, tt.workers)
			workers := make([]*worker.Worker, tt.workers)
			for i := range workers {
				nc, _, res := b.Conn(t)
				logs[i] = &logLines{}
				w, err := worker.New(nc, res, b.Codec, echoHandler(), worker.Config{
					FetchWait: time.Second,
					Logger:    zerolog.New(logs[i]).Level(zerolog.InfoLevel),
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := w.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = w.Stop(context.Background()) })
				workers[i] = w
			}
			bustest.MustResult(t, b.Do(t, "op.echo", "", map[string]any{"before": true}), nil)

			before := make([]int64, len(workers))
			for i, w := range workers {
				before[i] = w.Fetches()
			}
			tt.lose(t, b)
			time.Sleep(window)
			recreated := 0
			for i, w := range workers {
				fetches := w.Fetches() - before[i]
				warnings := logs[i].count(t, "warn", "fetch requests")
				recreated += logs[i].count(t, "warn", "the workers consumer did not exist; created it again")
				t.Logf("worker %d: %d fetch requests and %d fetch warnings in %s after the loss", i, fetches, warnings, window)
				// Idle, a worker fetches once per FetchWait (1s); failing,
				// it pauses 50-100ms, 100-200ms, 200-400ms, ... between
				// fetches: at most 7 in 3s.
				if fetches > 8 {
					t.Errorf("worker %d sent %d fetch requests in %s, want at most 8:\n%s", i, fetches, window, logs[i])
				}
				if warnings > 1 {
					t.Errorf("worker %d logged %d fetch warnings in %s, want at most 1:\n%s", i, warnings, window, logs[i])
				}
			}
			if got := recreated > 0; got != tt.wantRecreated {
				t.Errorf("%d workers created the consumer again, want some: %v", recreated, tt.wantRecreated)
			}
			if _, err := b.Res.Ops.Consumer(bustest.Ctx(t), b.Res.Subjects.WorkersConsumer()); err != nil {
				t.Fatalf("the workers consumer does not exist: %v", err)
			}
			start := time.Now()
			bustest.MustResult(t, b.Do(t, "op.echo", "", map[string]any{"after": true}), nil)
			took := time.Since(start)
			t.Logf("a request submitted after the loss was answered in %s", took.Round(time.Millisecond))
			if took > worker.FetchRetryMax+2*time.Second {
				t.Errorf("answered after %s, want within FetchRetryMax (%s) and a little", took, worker.FetchRetryMax)
			}
		})
	}
}
