package bus_test

// act end to end: a worker started by bus.Start with in-process tools
// (bus.Config.Tools), the real engine and NATS store, the embedded server.

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/schemas"
)

// startToolWorker starts a worker service on b serving tools.
func startToolWorker(t *testing.T, b *bustest.Bus, tools ops.Invoker) {
	t.Helper()
	startToolWorkerWith(t, b, tools, nil)
}

// startToolWorkerWith is startToolWorker with providers (nil: the
// default scripted one) for the worker's models.
func startToolWorkerWith(t *testing.T, b *bustest.Bus, tools ops.Invoker, providers *ops.Providers) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc, err := bus.Start(ctx, bus.Config{
		Connect:   client.ConnectConfig{URL: b.Srv.ClientURL(), Name: t.Name()},
		Provision: b.Cfg,
		Providers: providers,
		Worker:    worker.Config{FetchWait: 200 * time.Millisecond},
		Store:     store.Config{Logger: bustest.Logger(t)},
		Logger:    bustest.Logger(t),
		Tools:     tools,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = svc.Stop(ctx)
		svc.Close()
	})
}

// branchEvents reads the n events stored for branch in the events stream,
// in order, checking each one's subject and its data against its schema,
// and that no more follow.
func branchEvents(t *testing.T, b *bustest.Bus, branch string, n int) []*event.Event {
	t.Helper()
	cons, err := b.JS.OrderedConsumer(bustest.Ctx(t), b.Res.Subjects.EventsStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{b.Res.Subjects.Events(branch, ">")},
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []*event.Event
	for deadline := time.Now().Add(10 * time.Second); len(out) <= n && time.Now().Before(deadline); {
		wait := 500 * time.Millisecond
		if len(out) == n {
			wait = 200 * time.Millisecond // nothing more is expected
		}
		batch, err := cons.Fetch(n+1-len(out), jetstream.FetchMaxWait(wait))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			ev, err := b.Codec.Decode(&nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
			if err != nil {
				t.Fatalf("stored event on %s: %v", m.Subject(), err)
			}
			token := strings.ReplaceAll(strings.TrimPrefix(ev.Type(), protocol.EventTypePrefix), ".", "_")
			if m.Subject() != b.Res.Subjects.Events(branch, token) {
				t.Errorf("%s event on subject %s", ev.Type(), m.Subject())
			}
			if err := schemas.Validate(ev.Type(), ev.Data()); err != nil {
				t.Errorf("%s data %s: %v", ev.Type(), ev.Data(), err)
			}
			out = append(out, ev)
		}
		if got == 0 && len(out) == n {
			break
		}
	}
	if len(out) != n {
		t.Fatalf("%d events stored for %s, want %d", len(out), branch, n)
	}
	return out
}

func TestAcceptance_act_runs_tools_over_the_bus(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	tools := opstest.NewToolFuncs(map[string]opstest.ToolFunc{
		"add": func(_ context.Context, a map[string]any) (any, error) {
			x, _ := a["x"].(float64)
			y, _ := a["y"].(float64)
			return map[string]any{"sum": x + y}, nil
		},
		"upper": func(_ context.Context, a map[string]any) (any, error) {
			s, _ := a["s"].(string)
			return strings.ToUpper(s), nil
		},
		"rm": func(context.Context, map[string]any) (any, error) { panic("a denied tool ran") },
	})
	startToolWorker(t, b, tools)
	bustest.MustResult(t, b.Do(t, "branch.create", "", map[string]any{"branch_id": "tools", "tools": []string{"add", "upper"}}), nil)

	r := b.Do(t, "act", "tools", map[string]any{"action_requests": []any{
		map[string]any{"function": "add", "arguments": map[string]any{"x": 2, "y": 3}},
		map[string]any{"id": "call-2", "function": "upper", "arguments": map[string]any{"s": "lion"}},
		map[string]any{"function": "rm", "arguments": map[string]any{"path": "/"}},
	}})
	bustest.CheckSchema(t, r)
	var got []ops.ActionResponse
	res := bustest.MustResult(t, r, &got)
	reqID, _ := r.Event.Extensions()[protocol.ExtRequestID].(string)
	want := `[{"function":"add","arguments":{"x":2,"y":3},"output":{"sum":5}},` +
		`{"id":"call-2","function":"upper","arguments":{"s":"lion"},"output":"LION"},` +
		`{"function":"rm","arguments":{"path":"/"},"error":{"code":"denied","message":"tool \"rm\" is not allowed on this branch"}}]`
	if s, _ := json.Marshal(got); string(s) != want || res.BranchID != "tools" {
		t.Fatalf("act answered %s (branch %q)\nwant %s", s, res.BranchID, want)
	}
	for i, n := range []int{1, 1, 0} {
		if c := tools.Calls(ops.ToolCallKey(reqID, i)); c != n {
			t.Fatalf("call %d ran %d times, want %d", i, c, n)
		}
	}

	// One history event holds the calls and the result.
	evs := b.History(t, "tools")
	last := evs[len(evs)-1]
	if last.Type != history.EventMessages || last.RequestID != reqID || bustest.Commits(evs)[reqID] != 1 {
		t.Fatalf("last history event %s of %s; commits %v", last.Type, last.RequestID, bustest.Commits(evs))
	}
	var kinds, functions []string
	for _, m := range last.Messages {
		kinds = append(kinds, string(m.Kind))
		functions = append(functions, m.Content[history.KeyFunction].(string))
	}
	if strings.Join(kinds, " ") != strings.TrimSpace(strings.Repeat("action_request action_response ", 3)) ||
		strings.Join(functions, " ") != "add add upper upper rm rm" {
		t.Fatalf("recorded %v of %v", kinds, functions)
	}
	if out, _ := json.Marshal(last.Messages[3].Content[history.KeyOutput]); string(out) != `"LION"` || last.Messages[5].Content[history.KeyError] == nil {
		t.Fatalf("recorded responses %+v, %+v", last.Messages[3].Content, last.Messages[5].Content)
	}
	var stored ops.Result
	if err := json.Unmarshal(last.Result, &stored); err != nil || string(stored.Value) != want {
		t.Fatalf("recorded result %s", last.Result)
	}

	// The hook events of the two authorized calls, then one
	// message.added per recorded message; the denied call has no hooks.
	events := branchEvents(t, b, "tools", 4+6)
	var types []string
	seen := map[string]int{} // position of "<type> <call index>"
	for i, ev := range events {
		var d protocol.SignalData
		if err := json.Unmarshal(ev.Data(), &d); err != nil {
			t.Fatal(err)
		}
		if d.Verb != "act" || d.RequestID != reqID || ev.Extensions()[protocol.ExtRequestID] != reqID {
			t.Errorf("event %d data %s", i, ev.Data())
		}
		types = append(types, ev.Type())
		if d.Tool != nil {
			seen[ev.Type()+" "+d.Tool.Function] = i
			if d.Tool.CallID != ops.ToolCallKey(reqID, d.Tool.Index) || d.Tool.ArgsSummary == "" {
				t.Errorf("hook %s: %+v", ev.Type(), d.Tool)
			}
		}
		if d.Message != nil && d.Message.ID != last.Messages[i-4].ID {
			t.Errorf("message.added %d announces %s, history has %s", i-4, d.Message.ID, last.Messages[i-4].ID)
		}
	}
	for _, f := range []string{"add", "upper"} {
		pre, okPre := seen[protocol.EventTypeToolPre+" "+f]
		post, okPost := seen[protocol.EventTypeToolPost+" "+f]
		if !okPre || !okPost || pre > post {
			t.Fatalf("hooks of %s out of order: %v", f, types)
		}
	}
	if slices.Index(types, protocol.EventTypeMessageAdded) != 4 || !slices.Equal(types[4:], slices.Repeat([]string{protocol.EventTypeMessageAdded}, 6)) {
		t.Fatalf("events %v: want 4 hooks, then 6 message.added", types)
	}
}

// validateValue fails the test unless v satisfies the JSON Schema schema.
func validateValue(t *testing.T, schema string, v any) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem:///expected.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("mem:///expected.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(v); err != nil {
		t.Fatalf("value %v: %v", v, err)
	}
}
