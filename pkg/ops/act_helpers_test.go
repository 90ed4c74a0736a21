package ops_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

// actTools are the tools of the act tests.
// "waits" runs until its context ends; "fails_later" fails once a "waits"
// call is running.
func actTools() *opstest.ToolFuncs {
	waiting := make(chan struct{})
	var once sync.Once
	return opstest.NewToolFuncs(map[string]opstest.ToolFunc{
		"add": func(_ context.Context, a map[string]any) (any, error) {
			x, _ := a["x"].(float64)
			y, _ := a["y"].(float64)
			return map[string]any{"sum": x + y}, nil
		},
		"upper": func(_ context.Context, a map[string]any) (any, error) {
			s, _ := a["s"].(string)
			return strings.ToUpper(s), nil
		},
		"echo": func(_ context.Context, a map[string]any) (any, error) { return a, nil },
		"null": func(context.Context, map[string]any) (any, error) { return nil, nil },
		"fails": func(context.Context, map[string]any) (any, error) {
			return nil, &ops.ToolError{Code: "bad_input", Message: "x is required"}
		},
		"waits": func(ctx context.Context, _ map[string]any) (any, error) {
			once.Do(func() { close(waiting) })
			<-ctx.Done()
			return nil, ctx.Err()
		},
		"fails_later": func(ctx context.Context, _ map[string]any) (any, error) {
			select {
			case <-waiting:
			case <-ctx.Done():
			}
			return nil, &ops.ToolError{Code: "bad_input", Message: "too late"}
		},
	})
}

// syncBuffer is a log sink safe for the concurrent calls of act.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records returns the decoded log records with the given message.
func (b *syncBuffer) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["message"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// withoutTools, as Config.Tools of newActBundle, means an engine configured
// without tools (a nil Config.Tools gets actTools).
var withoutTools ops.Invoker = noTools{}

type noTools struct{}

func (noTools) Invoke(context.Context, ops.ToolInvocation) (ops.ToolOutcome, error) {
	panic("not an invoker")
}

// actBundle is an engine serving act with the given config (Store,
// Signals, Logger and Clock are set here; Tools defaults to actTools).
type actBundle struct {
	*bundle
	tools *opstest.ToolFuncs
	logs  *syncBuffer
}

func newActBundle(t *testing.T, cfg ops.Config) *actBundle {
	t.Helper()
	a := &actBundle{bundle: &bundle{store: opstest.NewMemoryStore(), signals: &signalRecorder{}}, logs: &syncBuffer{}}
	if cfg.Tools == withoutTools {
		cfg.Tools = nil
	} else if cfg.Tools == nil {
		a.tools = actTools()
		cfg.Tools = a.tools
	} else if tf, ok := cfg.Tools.(*opstest.ToolFuncs); ok {
		a.tools = tf
	}
	log := zerolog.New(a.logs).Level(zerolog.DebugLevel)
	clock := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	cfg.Store, cfg.Signals, cfg.Logger = a.store, a.signals, log
	cfg.Clock = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Millisecond)
		return clock
	}
	eng, err := ops.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.eng = eng
	return a
}

// branchWith creates branch id allowed the tools named.
func (a *actBundle) branchWith(t *testing.T, id string, tools ...string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"branch_id": id, "tools": tools})
	a.mustDo(t, "branch.create", "", string(b))
}

// act runs an act request with the given id and data.
func (a *actBundle) act(t *testing.T, id, branch, data string) ([]ops.ActionResponse, *ops.Result, error) {
	t.Helper()
	res, err := a.doID(t, id, "act", branch, data)
	if err != nil {
		return nil, nil, err
	}
	var out []ops.ActionResponse
	if err := json.Unmarshal(res.Value, &out); err != nil {
		t.Fatalf("act value %s: %v", res.Value, err)
	}
	return out, res, nil
}

// lastEvent returns the last history event of branch.
func (a *actBundle) lastEvent(t *testing.T, branch string) history.Event {
	t.Helper()
	evs, err := a.store.History(context.Background(), branch, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs[len(evs)-1]
}

// toolSignals returns the tool hook and message signals of request id, as
// "type function" (hooks) or "type kind" (message.added), in order.
func (a *actBundle) toolSignals(id string) []string {
	a.signals.mu.Lock()
	defer a.signals.mu.Unlock()
	var out []string
	for _, s := range a.signals.signals {
		switch {
		case s.RequestID != id:
		case s.Tool != nil:
			out = append(out, fmt.Sprintf("%s %s", s.Type, s.Tool.Function))
		case s.Message != nil:
			out = append(out, fmt.Sprintf("%s %s", s.Type, s.Message.Kind))
		default:
			out = append(out, string(s.Type))
		}
	}
	return out
}

// hooks returns the tool hook signals of request id.
func (a *actBundle) hooks(id string) []ops.Signal {
	a.signals.mu.Lock()
	defer a.signals.mu.Unlock()
	var out []ops.Signal
	for _, s := range a.signals.signals {
		if s.RequestID == id && s.Tool != nil {
			out = append(out, s)
		}
	}
	return out
}

// kinds returns the kinds of msgs, space-separated.
func kinds(msgs []history.Message) string {
	var k []string
	for _, m := range msgs {
		k = append(k, string(m.Kind))
	}
	return strings.Join(k, " ")
}

// compact returns v as compact JSON.
func compact(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
