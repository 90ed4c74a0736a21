package bus_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/bus/tracing"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

// The span tree of an act and a communicate: each request's span is a
// child of its traceparent; the store operations, the model call and the
// tool call are children of the request's span; the tool invocation and
// the signal events carry the traceparent of their span.
func TestTracing_span_tree_of_requests(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	var mu sync.Mutex
	var toolTrace string
	tools := ops.InvokerFunc(func(ctx context.Context, call ops.ToolInvocation) (ops.ToolOutcome, error) {
		mu.Lock()
		toolTrace, _ = protocol.TraceParentFromContext(ctx)
		mu.Unlock()
		return ops.ToolOutcome{Output: 5}, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc, err := bus.Start(ctx, bus.Config{
		Connect:   client.ConnectConfig{URL: b.Srv.ClientURL(), Name: t.Name()},
		Provision: b.Cfg,
		Worker:    worker.Config{FetchWait: 200 * time.Millisecond},
		Store:     store.Config{Logger: bustest.Logger(t)},
		Logger:    bustest.Logger(t),
		Tools:     tools,
		Tracer:    tp.Tracer(tracing.InstrumentationName),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()); svc.Close() })

	b.Do(t, "branch.create", "", map[string]any{"branch_id": "tr", "chat_model": "scripted:echo", "tools": []string{"add"}})
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	const parentSpan = "00f067aa0ba902b7"
	tp1 := "00-" + traceID + "-" + parentSpan + "-01"
	act := b.Do(t, "act", "tr", map[string]any{"action_requests": []any{map[string]any{"function": "add", "arguments": map[string]any{"x": 2, "y": 3}}}},
		client.WithTraceParent(tp1))
	if act.Err() != nil {
		t.Fatal(act.Err())
	}
	comm := b.Do(t, "communicate", "tr", map[string]any{"instruction": "hi"}, client.WithTraceParent(tp1))
	if comm.Err() != nil {
		t.Fatal(comm.Err())
	}

	var spans tracetest.SpanStubs
	bustest.WaitFor(t, 10*time.Second, "the spans of both requests", func() bool {
		spans = exp.GetSpans()
		n := 0
		for _, s := range spans {
			if s.Name == "lionbus.act" || s.Name == "lionbus.communicate" {
				n++
			}
		}
		return n == 2
	})
	byName := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	for _, verb := range []string{"lionbus.act", "lionbus.communicate"} {
		r := byName[verb][0]
		if r.SpanContext.TraceID().String() != traceID || r.Parent.SpanID().String() != parentSpan || !r.Parent.IsRemote() {
			t.Errorf("%s span: trace %s parent %s, want trace %s parent %s (remote)", verb, r.SpanContext.TraceID(), r.Parent.SpanID(), traceID, parentSpan)
		}
	}
	childOf := func(name, parent string) tracetest.SpanStub {
		t.Helper()
		p := byName[parent][0]
		for _, s := range byName[name] {
			if s.Parent.SpanID() == p.SpanContext.SpanID() {
				return s
			}
		}
		t.Fatalf("no %s span under %s; spans: %v", name, parent, names(spans))
		return tracetest.SpanStub{}
	}
	tool := childOf(tracing.SpanToolCall, "lionbus.act")
	childOf("lionbus.store.load", "lionbus.act")
	childOf("lionbus.store.append", "lionbus.act")
	model := childOf(tracing.SpanModelCall, "lionbus.communicate")
	childOf("lionbus.store.append", "lionbus.communicate")
	if got := attr(tool, tracing.AttrTool); got != "add" {
		t.Errorf("tool span names tool %q", got)
	}
	if got := attr(model, tracing.AttrProvider); got != "scripted" {
		t.Errorf("model span names provider %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "00-" + traceID + "-" + tool.SpanContext.SpanID().String() + "-01"; toolTrace != want {
		t.Errorf("tool invocation traceparent %q, want the tool span's %q", toolTrace, want)
	}
	// The signal events of the act carry the act span's traceparent.
	evs := branchEvents(t, b, "tr", 8) // every event of the two requests
	actSpan := byName["lionbus.act"][0].SpanContext.SpanID().String()
	seen := 0
	for _, ev := range evs {
		if ev.Type() == "lionbus.tool.pre" {
			if tpv, _ := ev.Extensions()["traceparent"].(string); !strings.Contains(tpv, actSpan) {
				t.Errorf("tool.pre event traceparent %q, want the act span %s", tpv, actSpan)
			}
			seen++
		}
	}
	if seen != 1 {
		t.Errorf("%d tool.pre events", seen)
	}
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func attr(s tracetest.SpanStub, key attribute.Key) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.String()
		}
	}
	return ""
}
