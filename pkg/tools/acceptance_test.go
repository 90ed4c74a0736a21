package tools_test

// Tools end to end: workers started by bus.Start with the NATS invoker
// (registry-resolved tools) and the policy, the real engine and store,
// tool services written with the SDK and without it, the embedded server.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/tools/toolschema"
	"github.com/lionbus/lionbus/schemas"
)

// startWorker starts a worker on b whose tools are the NATS invoker over
// the registry, gated by auth (nil: no gate beyond the branch's tools).
func startWorker(t *testing.T, b *bustest.Bus, icfg tools.InvokerConfig, auth ops.Authorizer) {
	t.Helper()
	startWorkerWith(t, b, icfg, auth, nil)
}

// startWorkerWith is startWorker with model providers (nil: the scripted
// one).
func startWorkerWith(t *testing.T, b *bustest.Bus, icfg tools.InvokerConfig, auth ops.Authorizer, providers *ops.Providers) {
	t.Helper()
	startWorkerCtx(t, b, nil, icfg, auth, providers)
}

// startWorkerCtx is startWorkerWith under wctx (nil: none): cancelling it
// kills the worker, leaving its requests unacknowledged.
func startWorkerCtx(t *testing.T, b *bustest.Bus, wctx context.Context, icfg tools.InvokerConfig, auth ops.Authorizer, providers *ops.Providers) {
	t.Helper()
	nc, js := bustest.Connect(t, b.Srv)
	reg, err := tools.OpenRegistry(bustest.Ctx(t), js, "", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	icfg.Registry = reg
	inv, err := tools.NewInvoker(nc, icfg)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := bus.Start(bustest.Ctx(t), bus.Config{
		Conn:       nc,
		Provision:  b.Cfg,
		Worker:     worker.Config{FetchWait: 200 * time.Millisecond},
		Store:      store.Config{Logger: bustest.Logger(t)},
		Logger:     bustest.Logger(t),
		Tools:      inv,
		Authorizer: auth,
		Providers:  providers,

		WorkerContext: wctx,
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

// awaitInvocations waits until svc, a service of one tool, has counted
// want invocations, and fails the test when it counts another number.
// micro counts an invocation once its handler has returned, after the
// answer went out: a caller may hold the answer before the count.
func awaitInvocations(t *testing.T, svc *tools.Service, want int) {
	t.Helper()
	bustest.WaitFor(t, 5*time.Second, "the service to count its invocations", func() bool {
		st := svc.Stats()
		return len(st.Endpoints) != 1 || st.Endpoints[0].NumRequests >= want
	})
	if st := svc.Stats(); len(st.Endpoints) != 1 || st.Endpoints[0].NumRequests != want {
		t.Fatalf("the service received %+v, want %d invocations", st.Endpoints, want)
	}
}

// serveOn starts an SDK tool service on a connection of its own to b.
func serveOn(t *testing.T, b *bustest.Bus, cfg tools.ServiceConfig) *tools.Service {
	t.Helper()
	nc, _ := bustest.Connect(t, b.Srv)
	if cfg.Version == "" {
		cfg.Version = "1.0.0"
	}
	svc, err := tools.Serve(bustest.Ctx(t), nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = svc.Stop(ctx)
	})
	return svc
}

// rawTool is a tool service written without the SDK: a queue subscription
// speaking only the documented protocol (docs/tools.md). It registers
// itself, answers {"output": {"upper": <text upper-cased>}}, and records
// the traceparent of each invocation.
type rawTool struct {
	mu     sync.Mutex
	traces []string
	calls  int
}

func startRawTool(t *testing.T, b *bustest.Bus, name string) *rawTool {
	t.Helper()
	nc, js := bustest.Connect(t, b.Srv)
	kv, err := js.KeyValue(bustest.Ctx(t), "lion_tools")
	if err != nil {
		t.Fatal(err)
	}
	entry := `{"name":"` + name + `","description":"Upper-cases a text.","subject":"lion.tool.` + name + `","version":"0.1.0",` +
		`"parameters":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}`
	if _, err := kv.Put(bustest.Ctx(t), name, []byte(entry)); err != nil {
		t.Fatal(err)
	}
	rt := &rawTool{}
	_, err = nc.QueueSubscribe("lion.tool."+name, name, func(m *nats.Msg) {
		var in struct {
			Type        string `json:"type"`
			TraceParent string `json:"traceparent"`
			Data        struct {
				Function  string         `json:"function"`
				Arguments map[string]any `json:"arguments"`
			} `json:"data"`
		}
		var data any
		if err := json.Unmarshal(m.Data, &in); err != nil || in.Type != "lionbus.tool.invoke" {
			data = map[string]any{"error": map[string]any{"code": "bad_invocation", "message": "not an invoke event"}}
		} else {
			text, _ := in.Data.Arguments["text"].(string)
			data = map[string]any{"output": map[string]any{"upper": strings.ToUpper(text)}}
		}
		rt.mu.Lock()
		rt.calls++
		rt.traces = append(rt.traces, in.TraceParent)
		rt.mu.Unlock()
		out, _ := json.Marshal(map[string]any{
			"specversion": "1.0", "id": "raw-" + time.Now().Format(time.RFC3339Nano), "source": "/test/raw",
			"type": "lionbus.tool.result", "datacontenttype": "application/json",
			"traceparent": in.TraceParent, "data": data,
		})
		_ = m.Respond(out)
	})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// createBranch creates a branch with the given tools whose scripted model
// answers reply.
func createBranch(t *testing.T, b *bustest.Bus, id string, toolNames []string, replies ...string) {
	t.Helper()
	bustest.MustResult(t, b.Do(t, "branch.create", "", map[string]any{
		"branch_id": id, "tools": toolNames,
		"chat_model": map[string]any{"provider": "scripted", "replies": replies},
	}), nil)
}

// responses decodes the action responses of operate's or act's value.
func responses(t *testing.T, v any) map[string]ops.ActionResponse {
	t.Helper()
	raw, _ := json.Marshal(v)
	var list []ops.ActionResponse
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("action responses %s: %v", raw, err)
	}
	out := map[string]ops.ActionResponse{}
	for _, r := range list {
		out[r.Function] = r
	}
	return out
}

// recordedErrors returns, by tool, the error code recorded on the branch
// for each action response.
func recordedErrors(t *testing.T, b *bustest.Bus, branch string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, ev := range b.History(t, branch) {
		for _, m := range ev.Messages {
			if m.Kind == history.KindActionResponse {
				fn, _ := m.Content[history.KeyFunction].(string)
				code, _ := m.Metadata[ops.MetaErrorCode].(string)
				out[fn] = code
			}
		}
	}
	return out
}

// operate, with a tool written without the SDK, a hanging tool and a
// registered tool whose service is gone: the raw tool answers, the hanging
// one is a timeout value within its deadline, the absent one a no-service
// value; the operation completes and records all three (0022-D4-08).
func TestAcceptance_operate_calls_registry_tools_over_NATS(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	raw := startRawTool(t, b, "raw_upper")
	g := newGate()
	serveOn(t, b, tools.ServiceConfig{Compile: toolschema.Compile, Name: "slow", Tools: []tools.Tool{{Name: "hang", Handler: g.hang, Timeout: time.Minute}}})
	gone, _ := json.Marshal(tools.Entry{Name: "gone", Parameters: json.RawMessage(`{"type":"object"}`), Subject: "lion.tool.gone"})
	if _, err := b.Res.Tools.Put(bustest.Ctx(t), "gone", gone); err != nil {
		t.Fatal(err)
	}
	startWorker(t, b, tools.InvokerConfig{Timeouts: map[string]time.Duration{"hang": 500 * time.Millisecond}}, nil)

	reply := `{"answer": "done", "action_required": true, "action_requests": [` +
		`{"function": "raw_upper", "arguments": {"text": "hi"}}, {"function": "hang", "arguments": {}},` +
		`{"function": "gone", "arguments": {}}]}`
	createBranch(t, b, "op", []string{"raw_upper", "hang", "gone"}, reply)
	format := map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}, "required": []string{"answer"}}
	r := b.Do(t, "operate", "op", map[string]any{"instruction": "go", "response_format": format, "actions": true})
	bustest.CheckSchema(t, r)
	var got map[string]any
	bustest.MustResult(t, r, &got)
	resp := responses(t, got["action_responses"])
	if out, _ := json.Marshal(resp["raw_upper"].Output); string(out) != `{"upper":"HI"}` {
		t.Errorf("raw_upper answered %s", out)
	}
	if e := resp["hang"].Error; e == nil || e.Code != ops.ActionErrorTimeout {
		t.Errorf("hang answered %+v, want %s", e, ops.ActionErrorTimeout)
	}
	if e := resp["gone"].Error; e == nil || e.Code != ops.ActionErrorNoService || !strings.Contains(e.Message, "no service") {
		t.Errorf("gone answered %+v, want %s", e, ops.ActionErrorNoService)
	}
	rec := recordedErrors(t, b, "op")
	if rec["raw_upper"] != "" || rec["hang"] != ops.ActionErrorTimeout || rec["gone"] != ops.ActionErrorNoService {
		t.Errorf("recorded errors %v", rec)
	}
	if raw.calls != 1 {
		t.Errorf("the raw tool was called %d times", raw.calls)
	}
	if err := waitChan(t, g.ended, 10*time.Second, "the hanging handler's context to end"); err == nil {
		t.Fatal("the hanging handler's context did not end")
	}
}

// The worker offers a branch's tools to the model with their registry
// schemas, in the operate instruction's tool schemas.
func TestAcceptance_operate_offers_registry_schemas(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	serveOn(t, b, tools.ServiceConfig{Compile: toolschema.Compile, Name: "echo-svc", Tools: []tools.Tool{echoTool("a")}})
	startWorker(t, b, tools.InvokerConfig{}, nil)
	createBranch(t, b, "offer", []string{"echo"}, `{"answer": "ok"}`)
	format := map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}
	bustest.MustResult(t, b.Do(t, "operate", "offer", map[string]any{"instruction": "go", "response_format": format, "actions": true}), nil)
	for _, ev := range b.History(t, "offer") {
		for _, m := range ev.Messages {
			if m.Kind != history.KindInstruction {
				continue
			}
			got, _ := json.Marshal(m.Content[history.KeyToolSchemas])
			var want any
			_ = json.Unmarshal([]byte(`[{"description":"Echoes its text.","name":"echo","parameters":`+echoParams+`}]`), &want)
			if w, _ := json.Marshal(want); string(got) != string(w) {
				t.Fatalf("tool schemas %s, want %s", got, want)
			}
			return
		}
	}
	t.Fatal("no instruction recorded")
}

// Denied by the worker's policy, denied by the approver, and an approver
// that does not answer: three recorded denials, and no invocation reached
// a tool (0022-D4-05).
func TestAcceptance_denials_never_reach_the_tool(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	var runs atomic.Int64
	count := func(context.Context, map[string]any) (any, error) { runs.Add(1); return "ran", nil }
	serveOn(t, b, tools.ServiceConfig{Compile: toolschema.Compile, Name: "money", Tools: []tools.Tool{
		{Name: "refund", Handler: count}, {Name: "wire", Handler: count}, {Name: "slow_check", Handler: count}, {Name: "lookup", Handler: count},
	}})
	// The approver: allows lookup, denies wire, never answers slow_check.
	anc, _ := bustest.Connect(t, b.Srv)
	var asked sync.Map
	if _, err := anc.Subscribe("lion.approve.>", func(m *nats.Msg) {
		tool := strings.TrimPrefix(m.Subject, "lion.approve.")
		asked.Store(tool, true)
		switch tool {
		case "lookup":
			_ = m.Respond([]byte(`{"allow": true}`))
		case "wire":
			_ = m.Respond([]byte(`{"allow": false, "reason": "over the daily limit"}`))
		}
	}); err != nil {
		t.Fatal(err)
	}
	pnc, _ := bustest.Connect(t, b.Srv)
	policy := &tools.Policy{Denied: []string{"refund"}, Approve: true, ApprovalTimeout: 300 * time.Millisecond, Conn: pnc}
	startWorker(t, b, tools.InvokerConfig{}, policy)
	createBranch(t, b, "gov", []string{"refund", "wire", "slow_check", "lookup"})

	r := b.Do(t, "act", "gov", map[string]any{"action_requests": []map[string]any{
		{"function": "refund", "arguments": map[string]any{"order": 1}},
		{"function": "wire", "arguments": map[string]any{"amount": 1e6}},
		{"function": "slow_check"},
		{"function": "lookup"},
	}})
	bustest.CheckSchema(t, r)
	var got []ops.ActionResponse
	bustest.MustResult(t, r, &got)
	resp := responses(t, got)
	tests := []struct{ tool, reason string }{
		{"refund", "denied by the worker's policy"},
		{"wire", "over the daily limit"},
		{"slow_check", "did not answer"},
	}
	for _, tt := range tests {
		if e := resp[tt.tool].Error; e == nil || e.Code != ops.ActionErrorDenied || !strings.Contains(e.Message, tt.reason) {
			t.Errorf("%s answered %+v, want denied: %q", tt.tool, e, tt.reason)
		}
	}
	if resp["lookup"].Output != "ran" {
		t.Errorf("lookup answered %+v", resp["lookup"])
	}
	rec := recordedErrors(t, b, "gov")
	for _, tt := range tests {
		if rec[tt.tool] != ops.ActionErrorDenied {
			t.Errorf("%s recorded %q, want denied", tt.tool, rec[tt.tool])
		}
	}
	if runs.Load() != 1 {
		t.Fatalf("tools ran %d times, want only lookup's 1", runs.Load())
	}
	if _, ok := asked.Load("refund"); ok {
		t.Error("the approver was asked about a tool the policy denies")
	}
}

// The tool hook signals carry the summaries, truncated, and the request's
// traceparent, which the tool receives too (0022-D4-06, 0022-D4-07).
func TestAcceptance_hook_signals_carry_summaries_and_traceparent(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	raw := startRawTool(t, b, "raw_upper")
	startWorker(t, b, tools.InvokerConfig{}, nil)
	createBranch(t, b, "hooks", []string{"raw_upper"})
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	long := strings.Repeat("lion ", 100)
	bustest.MustResult(t, b.Do(t, "act", "hooks", map[string]any{"action_requests": []map[string]any{
		{"function": "raw_upper", "arguments": map[string]any{"text": long}},
	}}, client.WithTraceParent(tp)), nil)

	cons, err := b.JS.OrderedConsumer(bustest.Ctx(t), b.Res.Subjects.EventsStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{b.Res.Subjects.Events("hooks", ">")},
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for len(seen) < 2 {
		m, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			t.Fatalf("hook events: %v (seen %v)", err, seen)
		}
		ev, err := b.Codec.Decode(&nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(ev.Type(), "lionbus.tool.") {
			continue
		}
		if err := schemas.Validate(ev.Type(), ev.Data()); err != nil {
			t.Errorf("%s: %v", ev.Type(), err)
		}
		if got := ev.Extensions()[protocol.ExtTraceParent]; got != tp {
			t.Errorf("%s traceparent %v, want %s", ev.Type(), got, tp)
		}
		var data struct {
			Tool ops.ToolSignal `json:"tool"`
		}
		if err := json.Unmarshal(ev.Data(), &data); err != nil {
			t.Fatal(err)
		}
		// At most SummaryLength bytes, then "…".
		if len(data.Tool.ArgsSummary) > ops.SummaryLength+len("…") || !strings.HasSuffix(data.Tool.ArgsSummary, "…") || !strings.HasPrefix(data.Tool.ArgsSummary, `{"text":"lion lion`) {
			t.Errorf("%s args summary %q", ev.Type(), data.Tool.ArgsSummary)
		}
		if ev.Type() == "lionbus.tool.post" && (len(data.Tool.ResultSummary) > ops.SummaryLength+len("…") || !strings.HasPrefix(data.Tool.ResultSummary, `{"upper":"LION LION`)) {
			t.Errorf("result summary %q", data.Tool.ResultSummary)
		}
		seen[ev.Type()] = true
	}
	if !seen["lionbus.tool.pre"] || !seen["lionbus.tool.post"] {
		t.Fatalf("hook events %v", seen)
	}
	raw.mu.Lock()
	defer raw.mu.Unlock()
	if len(raw.traces) != 1 || raw.traces[0] != tp {
		t.Fatalf("the tool received traceparents %v, want %s", raw.traces, tp)
	}
}

// A request cancelled by its client (lion.cancel.<id>) cancels the
// handler's context of the tool it is waiting for.
func TestAcceptance_cancelled_request_cancels_the_handler(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	g := newGate()
	serveOn(t, b, tools.ServiceConfig{Compile: toolschema.Compile, Name: "slow", Tools: []tools.Tool{{Name: "hang", Handler: g.hang, Timeout: time.Minute}}})
	startWorker(t, b, tools.InvokerConfig{Timeout: time.Minute}, nil)
	createBranch(t, b, "cancel", []string{"hang"})
	id, err := b.Client.Submit(bustest.Ctx(t), "act", "cancel", map[string]any{"action_requests": []map[string]any{{"function": "hang"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitChan(t, g.started, 10*time.Second, "the handler to start")
	if err := b.Client.Cancel(bustest.Ctx(t), id); err != nil {
		t.Fatal(err)
	}
	if err := waitChan(t, g.ended, 10*time.Second, "the handler's context to end"); !errors.Is(err, context.Canceled) {
		t.Fatalf("the handler's context ended with %v, want context.Canceled", err)
	}
	if code := bustest.RemoteCode(t, b.Await(t, id)); code != ops.CodeCanceled {
		t.Fatalf("answer %s, want canceled", code)
	}
}

// killer is a signal sink that ends the operation's context once a tool
// has answered: the worker dies after the tool ran, before the operation
// is committed and its request acknowledged.
type killer struct{ cancel context.CancelFunc }

func (k killer) Emit(_ context.Context, s ops.Signal) error {
	if s.Type == ops.SignalToolPost {
		k.cancel()
	}
	return nil
}

// A worker killed after the tool ran and before it acked: the redelivered
// request calls the tool with the same idempotency key, the SDK answers
// the first result, and the handler does not run again.
func TestAcceptance_redelivery_does_not_run_the_tool_again(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	var runs atomic.Int64
	billing := serveOn(t, b, tools.ServiceConfig{Compile: toolschema.Compile, Name: "billing", Tools: []tools.Tool{{Name: "refund",
		Handler: func(context.Context, map[string]any) (any, error) {
			return map[string]any{"refund_id": "rf-" + time.Now().Format(time.RFC3339Nano), "run": runs.Add(1)}, nil
		}}}})
	_, rjs := bustest.Connect(t, b.Srv)
	reg, err := tools.OpenRegistry(bustest.Ctx(t), rjs, "", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	engine := func(sig ops.Signals) *ops.Engine {
		nc, js := bustest.Connect(t, b.Srv)
		st, err := store.New(js, b.Res, store.Config{})
		if err != nil {
			t.Fatal(err)
		}
		inv, err := tools.NewInvoker(nc, tools.InvokerConfig{Registry: reg})
		if err != nil {
			t.Fatal(err)
		}
		eng, err := ops.NewEngine(ops.Config{Store: st, Providers: bustest.Providers(t, nil), Tools: inv, Signals: sig})
		if err != nil {
			t.Fatal(err)
		}
		return eng
	}
	if _, err := engine(nil).Do(bustest.Ctx(t), ops.Request{ID: "create-refunds", Verb: "branch.create",
		Data: json.RawMessage(`{"branch_id":"refunds","tools":["refund"]}`)}); err != nil {
		t.Fatal(err)
	}
	req := ops.Request{ID: "refund-req-1", Verb: "act", BranchID: "refunds", Attempt: 1,
		Data: json.RawMessage(`{"action_requests":[{"function":"refund","arguments":{"order":42}}]}`)}
	ctx, cancel := context.WithCancel(bustest.Ctx(t))
	if _, err := engine(killer{cancel}).Do(ctx, req); err == nil {
		t.Fatal("the killed attempt succeeded")
	}
	if runs.Load() != 1 {
		t.Fatalf("the tool ran %d times in the first attempt", runs.Load())
	}
	req.Attempt = 2
	res, err := engine(nil).Do(bustest.Ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	var got []ops.ActionResponse
	if err := json.Unmarshal(res.Value, &got); err != nil || len(got) != 1 || got[0].Error != nil {
		t.Fatalf("redelivery answered %s (%v)", res.Value, err)
	}
	if run := got[0].Output.(map[string]any)["run"]; run != float64(1) {
		t.Fatalf("redelivery answered run %v, want the first run's result", run)
	}
	if runs.Load() != 1 {
		t.Fatalf("the tool ran %d times, want 1", runs.Load())
	}
	// Both workers invoked it: B's invocation was answered from the
	// results bucket.
	awaitInvocations(t, billing, 2)
}

// The same through JetStream: worker A is killed right after the tool ran
// and answered, before it acknowledged the request; the request is
// delivered again to worker B, whose call (same idempotency key) is
// answered the first result, and the handler ran once.
func TestAcceptance_killed_worker_redelivery_does_not_run_the_tool_again(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{AckWait: time.Second})
	var runs atomic.Int64
	killA := make(chan struct{})
	var once sync.Once
	actx, kill := context.WithCancel(context.Background())
	defer kill()
	billing := serveOn(t, b, tools.ServiceConfig{Compile: toolschema.Compile, Name: "billing", Tools: []tools.Tool{{Name: "refund",
		Handler: func(context.Context, map[string]any) (any, error) {
			n := runs.Add(1)
			once.Do(func() { close(killA) })
			// The effect is done; the answer comes only once worker A
			// is dead, so A never records or acknowledges the request.
			<-actx.Done()
			return map[string]any{"refund_run": n}, nil
		}}}})
	startWorkerCtx(t, b, actx, tools.InvokerConfig{}, nil, nil)
	createBranch(t, b, "refunds", []string{"refund"})
	id, err := b.Client.Submit(bustest.Ctx(t), "act", "refunds", map[string]any{"action_requests": []map[string]any{
		{"function": "refund", "arguments": map[string]any{"order": 42}}}})
	if err != nil {
		t.Fatal(err)
	}
	waitChan(t, killA, 10*time.Second, "the tool to run")
	kill()
	startWorker(t, b, tools.InvokerConfig{}, nil) // worker B
	var got []ops.ActionResponse
	bustest.MustResult(t, b.Await(t, id), &got)
	if len(got) != 1 || got[0].Error != nil {
		t.Fatalf("answer %+v", got)
	}
	if run := got[0].Output.(map[string]any)["refund_run"]; run != float64(1) {
		t.Fatalf("answered the result of run %v, want 1", run)
	}
	if runs.Load() != 1 {
		t.Fatalf("the tool ran %d times, want 1", runs.Load())
	}
	// Both workers invoked it: B's invocation was answered from the
	// results bucket.
	awaitInvocations(t, billing, 2)
}
