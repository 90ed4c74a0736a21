package ops_test

// The act bullets of ADR-0022 D4, one test each. 0022-D4-01 (requests come
// from a result's action_requests), 0022-D4-10 (context writeback) and
// 0022-D4-11 (enrichment of the result) are operate's, not act's.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

// 0022-D4-02: no requests, or an empty list, run and record nothing.
func TestAct_0022_D4_02_empty_list_runs_nothing(t *testing.T) {
	a := newActBundle(t, ops.Config{})
	a.branchWith(t, "b", "add")
	for i, data := range []string{`{}`, `{"action_requests":null}`, `{"action_requests":[]}`, `{"action_requests":[],"suppress_errors":false}`} {
		id := fmt.Sprintf("r%d", i)
		got, res, err := a.act(t, id, "b", data)
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if got == nil || len(got) != 0 || string(res.Value) != "[]" {
			t.Fatalf("%s: value %s, want []", data, res.Value)
		}
		if s := a.toolSignals(id); len(s) != 0 {
			t.Fatalf("%s: signals %v", data, s)
		}
	}
	if ev := a.lastEvent(t, "b"); ev.Type != history.EventCreated {
		t.Fatalf("an empty act recorded %s", ev.Type)
	}
}

// 0022-D4-03: calls run concurrently by default, one after the other in
// order with "sequential"; any other strategy is refused before a call.
func TestAct_0022_D4_03_strategies(t *testing.T) {
	tests := []struct {
		name     string
		strategy string // "" leaves it out
		wantSeq  bool
		wantCode ops.Code
	}{
		{"default is concurrent", "", false, ""},
		{"concurrent", `"concurrent"`, false, ""},
		{"sequential", `"sequential"`, true, ""},
		{"unknown", `"parallel"`, false, ops.CodeInvalidRequest},
		{"empty", `""`, false, ops.CodeInvalidRequest},
		{"case matters", `"Sequential"`, false, ops.CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var order []float64
			var active, peak atomic.Int32
			all := make(chan struct{})
			var arrived atomic.Int32
			tools := opstest.NewToolFuncs(map[string]opstest.ToolFunc{"step": func(ctx context.Context, args map[string]any) (any, error) {
				defer active.Add(-1)
				n := active.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				mu.Lock()
				order = append(order, args["i"].(float64))
				mu.Unlock()
				if arrived.Add(1) == 4 {
					close(all)
				}
				if !tt.wantSeq { // concurrent calls wait for each other
					select {
					case <-all:
					case <-time.After(5 * time.Second):
						return nil, fmt.Errorf("the calls did not run at once")
					}
				}
				return args["i"], nil
			}})
			a := newActBundle(t, ops.Config{Tools: tools})
			a.branchWith(t, "b", "step")
			data := `{"action_requests":[{"function":"step","arguments":{"i":0}},{"function":"step","arguments":{"i":1}},{"function":"step","arguments":{"i":2}},{"function":"step","arguments":{"i":3}}]`
			if tt.strategy != "" {
				data += `,"strategy":` + tt.strategy
			}
			got, _, err := a.act(t, "r", "b", data+"}")
			if tt.wantCode != "" {
				if code(err) != tt.wantCode || !strings.Contains(err.Error(), "strategy") {
					t.Fatalf("err = %v, want %s", err, tt.wantCode)
				}
				if len(order) != 0 {
					t.Fatalf("a refused request made %d calls", len(order))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := compact(t, got); !strings.Contains(s, `"output":0}`) || strings.Index(s, `"output":0}`) > strings.Index(s, `"output":3}`) {
				t.Fatalf("responses not in request order: %s", s)
			}
			if tt.wantSeq && (peak.Load() != 1 || fmt.Sprint(order) != "[0 1 2 3]") {
				t.Fatalf("sequential: order %v, peak %d", order, peak.Load())
			}
			if !tt.wantSeq && peak.Load() != 4 {
				t.Fatalf("concurrent: peak %d, want 4", peak.Load())
			}
		})
	}
}

// 0022-D4-04 (Go form): how many calls run at once is worker configuration,
// Config.MaxConcurrentTools, DefaultMaxConcurrentTools when 0.
func TestAct_0022_D4_04_concurrency_is_bounded(t *testing.T) {
	tests := []struct {
		limit, want int
		strategy    string
	}{
		{1, 1, "concurrent"},
		{3, 3, "concurrent"},
		{0, ops.DefaultMaxConcurrentTools, "concurrent"},
		{3, 1, "sequential"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s limit %d", tt.strategy, tt.limit), func(t *testing.T) {
			var active, peak, arrived atomic.Int32
			full := make(chan struct{}) // closed when the first want calls are running
			tools := opstest.NewToolFuncs(map[string]opstest.ToolFunc{"slot": func(ctx context.Context, _ map[string]any) (any, error) {
				defer active.Add(-1)
				n := active.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				switch k := arrived.Add(1); {
				case int(k) == tt.want:
					close(full)
				case int(k) < tt.want:
					select { // the first wave waits until it is complete
					case <-full:
					case <-time.After(5 * time.Second):
						return nil, fmt.Errorf("only %d calls ran at once", active.Load())
					}
				}
				time.Sleep(time.Millisecond)
				return "ok", nil
			}})
			a := newActBundle(t, ops.Config{Tools: tools, MaxConcurrentTools: tt.limit})
			a.branchWith(t, "b", "slot")
			calls := strings.Repeat(`{"function":"slot"},`, 3*max(tt.want, 4))
			got, _, err := a.act(t, "r", "b", `{"strategy":"`+tt.strategy+`","action_requests":[`+strings.TrimSuffix(calls, ",")+`]}`)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range got {
				if r.Error != nil {
					t.Fatalf("call failed: %+v", r.Error)
				}
			}
			if int(peak.Load()) != tt.want {
				t.Fatalf("at most %d calls ran at once, want %d", peak.Load(), tt.want)
			}
		})
	}
}

// 0022-D4-05: each call is authorized first, by the branch's tools then the
// engine's Authorizer; a denial is an error-valued response that is
// recorded, never a failure of the request, and the tool is not invoked
// and no hook fires. A gate that cannot decide denies.
func TestAct_0022_D4_05_denials_are_recorded_values(t *testing.T) {
	gate := ops.AuthorizerFunc(func(_ context.Context, call ops.ToolInvocation) (ops.Decision, error) {
		switch call.Function {
		case "upper":
			return ops.Decision{Reason: "needs approval"}, nil
		case "echo":
			return ops.Decision{}, nil
		case "fails":
			return ops.Decision{}, fmt.Errorf("approver unreachable")
		}
		return ops.Decision{Allow: true}, nil
	})
	tests := []struct {
		name     string
		function string
		gate     ops.Authorizer
		reason   string
	}{
		{"not one of the branch's tools", "null", nil, `tool "null" is not allowed on this branch`},
		{"not a tool name at all", "a.b c", nil, `tool "a.b c" is not allowed on this branch`},
		{"gate denies with a reason", "upper", gate, "needs approval"},
		{"gate denies without a reason", "echo", gate, "denied by governance gate"},
		{"gate cannot decide", "fails", gate, "authorization failed: approver unreachable"},
		{"branch list before the gate", "null", ops.AllowAll, `tool "null" is not allowed on this branch`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newActBundle(t, ops.Config{Authorizer: tt.gate})
			a.branchWith(t, "b", "add", "upper", "echo", "fails")
			data := `{"suppress_errors":false,"action_requests":[{"function":"add","arguments":{"x":1}},{"function":"` + tt.function + `","arguments":{"k":"v"}}]}`
			got, _, err := a.act(t, "r", "b", data)
			if err != nil {
				t.Fatalf("a denial failed the request: %v", err)
			}
			want := `[{"function":"add","arguments":{"x":1},"output":{"sum":1}},{"function":"` + tt.function + `","arguments":{"k":"v"},"error":{"code":"denied","message":` + compact(t, tt.reason) + `}}]`
			if s := compact(t, got); s != want {
				t.Fatalf("value %s\nwant  %s", s, want)
			}
			if n := a.tools.Calls(ops.ToolCallKey("r", 1)); n != 0 {
				t.Fatalf("the denied tool ran %d times", n)
			}
			for _, h := range a.hooks("r") {
				if h.Tool.Index == 1 {
					t.Fatalf("a denied call emitted %s", h.Type)
				}
			}
			msgs := a.lastEvent(t, "b").Messages
			if kinds(msgs) != "action_request action_response action_request action_response" {
				t.Fatalf("recorded %s", kinds(msgs))
			}
			if d := msgs[3]; d.Content[history.KeyError] != tt.reason || d.Metadata[ops.MetaErrorCode] != ops.ActionErrorDenied || d.Content[history.KeyOutput] != nil {
				t.Fatalf("denial recorded as %+v", d)
			}
		})
	}
}

// 0022-D4-06: around each authorized call, tool.pre then tool.post or
// tool.error; a success is logged; the calls' messages are recorded and
// announced after the hooks.
func TestAct_0022_D4_06_hooks_around_each_call(t *testing.T) {
	a := newActBundle(t, ops.Config{})
	a.branchWith(t, "b", "add", "fails")
	if _, _, err := a.act(t, "r", "b", `{"strategy":"sequential","action_requests":[{"function":"add","arguments":{"x":1,"y":2}},{"function":"fails"}]}`); err != nil {
		t.Fatal(err)
	}
	want := "tool.pre add,tool.post add,tool.pre fails,tool.error fails," +
		"message.added action_request,message.added action_response,message.added action_request,message.added action_response"
	if got := strings.Join(a.toolSignals("r"), ","); got != want {
		t.Fatalf("signals\n%s\nwant\n%s", got, want)
	}
	h := a.hooks("r")
	for i, s := range h {
		if s.Verb != "act" || s.BranchID != "b" || s.Tool.CallID != ops.ToolCallKey("r", i/2) || s.Tool.Index != i/2 || s.Tool.ArgsSummary == "" {
			t.Errorf("hook %d: %+v %+v", i, s, s.Tool)
		}
	}
	if h[1].Tool.ResultSummary != `{"sum":3}` || h[1].Tool.DurationMS <= 0 || h[1].Err != nil {
		t.Errorf("tool.post %+v", h[1].Tool)
	}
	if h[3].Err == nil || h[3].Err.Code != "bad_input" || h[3].Err.Message != "x is required" || h[3].Tool.DurationMS <= 0 {
		t.Errorf("tool.error %+v %+v", h[3].Tool, h[3].Err)
	}
	if h[0].Tool.ArgsSummary != `{"x":1,"y":2}` || h[2].Tool.ArgsSummary != `{}` {
		t.Errorf("args summaries %q, %q", h[0].Tool.ArgsSummary, h[2].Tool.ArgsSummary)
	}
	ok := a.logs.records(t, "tool call succeeded")
	if len(ok) != 1 || ok[0]["tool"] != "add" || ok[0]["call_id"] != "r/tool/0" || ok[0]["level"] != "debug" {
		t.Fatalf("success logs %v", ok)
	}
}

// 0022-D4-07: hook summaries are cut at SummaryLength bytes and the debug
// preview at DebugPreviewLength; the call, the record and the answer get
// the whole arguments and output.
func TestAct_0022_D4_07_summaries_are_cut_values_are_not(t *testing.T) {
	a := newActBundle(t, ops.Config{})
	a.branchWith(t, "b", "echo")
	long := strings.Repeat("é", 300) // two bytes each: the cut must not split one
	got, _, err := a.act(t, "r", "b", `{"action_requests":[{"function":"echo","arguments":{"text":"`+long+`"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	full := `{"text":"` + long + `"}`
	if len(got) != 1 || compact(t, got[0].Output) != full || compact(t, got[0].Arguments) != full {
		t.Fatalf("the answer was cut: %s", compact(t, got))
	}
	msgs := a.lastEvent(t, "b").Messages
	if compact(t, msgs[0].Content[history.KeyArguments]) != full || compact(t, msgs[1].Content[history.KeyOutput]) != full {
		t.Fatal("the record was cut")
	}
	h := a.hooks("r")
	for _, s := range []string{h[0].Tool.ArgsSummary, h[1].Tool.ResultSummary} {
		if s != ops.Truncate(full, ops.SummaryLength) || !strings.HasSuffix(s, "…") || len(s) > ops.SummaryLength+len("…") {
			t.Fatalf("summary of %d bytes: %q", len(s), s)
		}
	}
	logs := a.logs.records(t, "tool call succeeded")
	if len(logs) != 1 || logs[0]["args"] != ops.Truncate(full, ops.DebugPreviewLength) {
		t.Fatalf("debug preview %v", logs)
	}
}

// 0022-D4-08: a suppressed tool error is logged, recorded and answered as a
// value; an unsuppressed one fails the request after its hooks, with what
// ran recorded, so that a redelivery answers the same failure without
// calling a tool again.
func TestAct_0022_D4_08_suppressed_and_raised_errors(t *testing.T) {
	tests := []struct {
		name      string
		data      string
		wantCode  ops.Code // "" for success
		wantMsg   string
		wantHooks string
		wantKinds string
		wantValue string // on success
	}{
		{
			name:      "suppressed by default",
			data:      `{"strategy":"sequential","action_requests":[{"function":"fails"},{"function":"add","arguments":{"x":1}}]}`,
			wantHooks: "tool.pre fails,tool.error fails,tool.pre add,tool.post add",
			wantKinds: "action_request action_response action_request action_response",
			wantValue: `[{"function":"fails","arguments":{},"error":{"code":"bad_input","message":"x is required"}},{"function":"add","arguments":{"x":1},"output":{"sum":1}}]`,
		},
		{
			name:      "raised, sequential: later calls do not run",
			data:      `{"strategy":"sequential","suppress_errors":false,"action_requests":[{"function":"add"},{"function":"fails"},{"function":"upper"}]}`,
			wantCode:  ops.CodeAction,
			wantMsg:   "action 1 (fails) failed: bad_input: x is required",
			wantHooks: "tool.pre add,tool.post add,tool.pre fails,tool.error fails",
			wantKinds: "action_request action_response action_request action_response",
		},
		{
			name:      "raised, concurrent: running calls are cancelled",
			data:      `{"suppress_errors":false,"action_requests":[{"function":"waits"},{"function":"fails_later"}]}`,
			wantCode:  ops.CodeAction,
			wantMsg:   "action 1 (fails_later) failed: bad_input: too late",
			wantHooks: "tool.error fails_later,tool.error waits", // after the two tool.pre
			wantKinds: "action_request action_response action_request action_response",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newActBundle(t, ops.Config{})
			a.branchWith(t, "b", "add", "fails", "upper", "waits", "fails_later")
			got, _, err := a.act(t, "r", "b", tt.data)
			if tt.wantCode == "" {
				if err != nil {
					t.Fatal(err)
				}
				if s := compact(t, got); s != tt.wantValue {
					t.Fatalf("value %s\nwant  %s", s, tt.wantValue)
				}
			} else if code(err) != tt.wantCode || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("err = %v, want %s %q", err, tt.wantCode, tt.wantMsg)
			}
			var hooks []string
			for _, s := range a.toolSignals("r") {
				if strings.HasPrefix(s, "tool.") {
					hooks = append(hooks, s)
				}
			}
			if h := strings.Join(hooks, ","); !strings.HasSuffix(h, tt.wantHooks) {
				t.Fatalf("hooks %s, want %s", h, tt.wantHooks)
			}
			ev := a.lastEvent(t, "b")
			if ev.Type != history.EventMessages || kinds(ev.Messages) != tt.wantKinds {
				t.Fatalf("recorded %s %s, want %s", ev.Type, kinds(ev.Messages), tt.wantKinds)
			}
			failed := a.logs.records(t, "tool call failed")
			if len(failed) == 0 || failed[0]["suppressed"] != (tt.wantCode == "") {
				t.Fatalf("failure logs %v", failed)
			}
			if tt.wantCode == "" {
				return
			}
			if n := a.tools.Calls(ops.ToolCallKey("r", 2)); n != 0 {
				t.Fatalf("a call after the failure ran %d times", n)
			}
			// The failure is recorded, and a redelivery answers it
			// again without calling a tool.
			_, _, again := a.act(t, "r", "b", tt.data)
			if code(again) != tt.wantCode || again.Error() != err.Error() {
				t.Fatalf("redelivery: %v, want %v", again, err)
			}
			for i := range 2 {
				if n := a.tools.Calls(ops.ToolCallKey("r", i)); n != 1 {
					t.Fatalf("call %d ran %d times", i, n)
				}
			}
		})
	}
}

// 0022-D4-09 (and 0022-D4-04's dropping of null outputs): a call that
// answers null gives no action response, neither in the value nor in
// history; its action request is still recorded.
func TestAct_0022_D4_09_null_outputs_are_dropped(t *testing.T) {
	a := newActBundle(t, ops.Config{})
	a.branchWith(t, "b", "add", "null")
	got, _, err := a.act(t, "r1", "b", `{"strategy":"sequential","action_requests":[{"function":"null"},{"function":"add","arguments":{"y":2}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if s := compact(t, got); s != `[{"function":"add","arguments":{"y":2},"output":{"sum":2}}]` {
		t.Fatalf("value %s", s)
	}
	msgs := a.lastEvent(t, "b").Messages
	if kinds(msgs) != "action_request action_request action_response" || msgs[0].Content[history.KeyActionResponseID] != nil {
		t.Fatalf("recorded %s: %+v", kinds(msgs), msgs[0])
	}
	if h := a.hooks("r1"); h[1].Type != ops.SignalToolPost || h[1].Tool.ResultSummary != "null" {
		t.Fatalf("the null call's hooks %v", a.toolSignals("r1"))
	}
	// With nothing left, the value is the empty list.
	got, res, err := a.act(t, "r2", "b", `{"action_requests":[{"function":"null"}]}`)
	if err != nil || len(got) != 0 || string(res.Value) != "[]" {
		t.Fatalf("all null: %s, %v", res.Value, err)
	}
}
