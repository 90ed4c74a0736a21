package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

// lines returns the log lines of message msg, decoded.
func (l *logLines) lines(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(l.buf.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["message"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// Every answered request gets one line at the configured level, with its
// id, verb, branch, code and duration.
func TestWorker_logs_one_line_per_answered_request(t *testing.T) {
	t.Parallel()
	tests := []struct {
		level     string
		logAt     zerolog.Level
		wantLines int
	}{
		{"", zerolog.InfoLevel, 2}, // default info
		{"debug", zerolog.InfoLevel, 0},
		{"warn", zerolog.InfoLevel, 2},
		{"disabled", zerolog.TraceLevel, 0},
	}
	for _, tt := range tests {
		t.Run(tt.level, func(t *testing.T) {
			t.Parallel()
			b := bustest.New(t, provision.Config{})
			var buf logLines
			h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
				if req.Verb == "op.bad" {
					return nil, ops.Errorf(ops.CodeInvalidRequest, "no good")
				}
				return &ops.Result{BranchID: req.BranchID}, nil
			})
			b.StartWorker(t, nil, h, nil, worker.Config{
				Logger:          zerolog.New(&buf).Level(tt.logAt),
				RequestLogLevel: tt.level,
			})
			ok := b.Do(t, "op.good", "", nil)
			bad := b.Do(t, "op.bad", "", nil)
			// The line is written before the request is acknowledged.
			bustest.WaitFor(t, 10*time.Second, "both requests acknowledged", func() bool {
				info, err := b.Res.Workers.Info(bustest.Ctx(t))
				return err == nil && info.NumAckPending == 0 && info.NumPending == 0
			})
			answered, failed := buf.lines("request answered"), buf.lines("request failed")
			if got := len(answered) + len(failed); got != tt.wantLines {
				t.Fatalf("%d request lines, want %d", got, tt.wantLines)
			}
			if tt.wantLines == 0 {
				return
			}
			a, f := answered[0], failed[0]
			if a["request"] != ok.Event.Extensions()["requestid"] || a["verb"] != "op.good" || a["code"] != "ok" || a["duration_ms"] == nil || a["level"] != levelName(tt.level) {
				t.Errorf("answered line %v", a)
			}
			if f["request"] != bad.Event.Extensions()["requestid"] || f["code"] != "invalid_request" || f["error"] != "no good" {
				t.Errorf("failed line %v", f)
			}
		})
	}
}

func levelName(l string) string {
	if l == "" {
		return "info"
	}
	return l
}

func TestWorker_rejects_bad_request_log_level(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	codec := b.Codec
	if _, err := worker.New(b.NC, b.Res, codec, echoHandler(), worker.Config{RequestLogLevel: "error"}); err == nil {
		t.Fatal("RequestLogLevel error accepted (a request is not an error)")
	}
}

// What a handler (or a middleware) annotates reaches the request's log
// line, on success and on failure; more than MaxAnnotations are dropped;
// outside a request Annotate does nothing.
func TestWorker_annotations_reach_the_request_log_line(t *testing.T) {
	t.Parallel()
	worker.Annotate(context.Background(), func(e *zerolog.Event) { t.Error("annotation outside a request applied") })
	b := bustest.New(t, provision.Config{})
	var buf logLines
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		for i := range worker.MaxAnnotations + 5 {
			worker.Annotate(ctx, func(e *zerolog.Event) { e.Int("note", i) })
		}
		if req.Verb == "op.bad" {
			return nil, ops.Errorf(ops.CodeInvalidRequest, "no good")
		}
		return &ops.Result{}, nil
	})
	b.StartWorker(t, nil, h, nil, worker.Config{Logger: zerolog.New(&buf).Level(zerolog.InfoLevel)})
	b.Do(t, "op.good", "", nil)
	b.Do(t, "op.bad", "", nil)
	bustest.WaitFor(t, 10*time.Second, "both requests acknowledged", func() bool {
		info, err := b.Res.Workers.Info(bustest.Ctx(t))
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
	for _, msg := range []string{"request answered", "request failed"} {
		lines := buf.lines(msg)
		if len(lines) != 1 {
			t.Fatalf("%d %q lines, want 1", len(lines), msg)
		}
		// zerolog keeps every field written; a JSON decoder keeps the
		// last of a repeated key: the last annotation kept.
		if got := lines[0]["note"]; got != float64(worker.MaxAnnotations-1) {
			t.Errorf("%s: note %v, want %d (the last of MaxAnnotations kept)", msg, got, worker.MaxAnnotations-1)
		}
	}
}
