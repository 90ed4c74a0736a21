package ops_test

// The operate bullets of ADR-0022 D2 to D4 at the engine: a fixed middle
// (registered as "fixed") answers a scripted value and keeps what it was
// handed; the communicate middle runs with the scripted provider.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
)

// fixedMiddle answers value and records its inputs.
type fixedMiddle struct {
	mu    sync.Mutex
	value string
	ins   []ops.MiddleInput
}

func (m *fixedMiddle) Exchange(_ context.Context, in ops.MiddleInput) (*ops.MiddleResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ins = append(m.ins, in)
	return middleValue(m.value)
}

// operateBundle is an act bundle serving operate, with the scripted
// provider (counted) and the fixed middle.
type operateBundle struct {
	*actBundle
	fixed *fixedMiddle
}

func newOperateBundle(t *testing.T) *operateBundle {
	t.Helper()
	return newOperateBundleWith(t, nil)
}

// newOperateBundleWith is newOperateBundle with edit applied to the
// engine's configuration.
func newOperateBundleWith(t *testing.T, edit func(*ops.Config)) *operateBundle {
	t.Helper()
	prov := &countingProvider{}
	waits := &waitRecorder{}
	mids := ops.NewMiddles()
	fixed := &fixedMiddle{value: `"unset"`}
	if err := mids.Register("fixed", fixed); err != nil {
		t.Fatal(err)
	}
	cfg := ops.Config{
		Providers: ops.NewProviders(map[string]ops.Provider{"scripted": prov}),
		Middles:   mids, Sleep: waits.sleep,
	}
	if edit != nil {
		edit(&cfg)
	}
	a := newActBundle(t, cfg)
	a.prov, a.waits = prov, waits
	return &operateBundle{actBundle: a, fixed: fixed}
}

// operate runs an operate request, checking its data and result against
// their schemas.
func (o *operateBundle) operate(t *testing.T, id, branch, data string) (*ops.Result, error) {
	t.Helper()
	return o.doID(t, id, "operate", branch, data)
}

// value decodes a result value.
func value(t *testing.T, res *ops.Result) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(res.Value, &v); err != nil {
		t.Fatalf("value %s: %v", res.Value, err)
	}
	return v
}

// The outer policy and the action phase, with the fixed middle
// (0022-D3-01: the registered middle is used as it is).
func TestOperate_0022_D3_D4_fixed_middle(t *testing.T) {
	const format = `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`
	const twoCalls = `"action_requests":[{"function":"add","arguments":{"x":1,"y":2}},{"function":"upper","arguments":{"s":"a"}}]`
	tests := []struct {
		name    string
		reply   string // the middle's value
		data    string
		want    string // the result value, compact JSON
		code    ops.Code
		msg     string
		actions int // tool calls made
	}{
		// 0022-D3-05: skip_validation returns the raw result, no actions.
		{name: "0022-D3-05 skip_validation returns the raw result", reply: `{"n":"x",` + twoCalls + `}`,
			data: `{"instruction":"i","middle":"fixed","actions":true,"response_format":` + format + `,"skip_validation":true,"handle_validation":"raise"}`,
			want: `{"action_requests":[{"arguments":{"x":1,"y":2},"function":"add"},{"arguments":{"s":"a"},"function":"upper"}],"n":"x"}`},
		// 0022-D3-06: the three policies on a mismatch; what mismatches is
		// decided by the caller's response_format (0022-D2-01).
		{name: "0022-D3-06 raise quotes at most 200 characters", reply: `{"n":"` + strings.Repeat("z", 400) + `"}`,
			data: `{"instruction":"i","middle":"fixed","response_format":` + format + `,"handle_validation":"raise"}`,
			code: ops.CodeSchemaRejected, msg: `result: {"n":"zzz`},
		{name: "0022-D3-06 return_value passes the value through", reply: `{"n":"x"}`,
			data: `{"instruction":"i","middle":"fixed","response_format":` + format + `,"handle_validation":"return_value"}`,
			want: `{"n":"x"}`},
		{name: "0022-D3-06 return_value is the default", reply: `"text"`,
			data: `{"instruction":"i","middle":"fixed","response_format":` + format + `}`, want: `"text"`},
		{name: "0022-D3-06 return_none gives null", reply: `{"n":"x"}`,
			data: `{"instruction":"i","middle":"fixed","response_format":` + format + `,"handle_validation":"return_none"}`,
			want: `null`},
		// 0022-D3-07: a mismatch returns before the actions.
		{name: "0022-D3-07 return_value mismatch runs no actions", reply: `{"n":"x",` + twoCalls + `}`,
			data: `{"instruction":"i","middle":"fixed","actions":true,"response_format":` + format + `}`,
			want: `{"action_requests":[{"arguments":{"x":1,"y":2},"function":"add"},{"arguments":{"s":"a"},"function":"upper"}],"n":"x"}`},
		{name: "0022-D3-07 return_none mismatch runs no actions", reply: `{"n":"x",` + twoCalls + `}`,
			data: `{"instruction":"i","middle":"fixed","actions":true,"response_format":` + format + `,"handle_validation":"return_none"}`,
			want: `null`},
		// 0022-D3-08: without a response_format the generated value flows on.
		{name: "0022-D3-08 no caller format, actions still run", reply: `{"reason":null,` + twoCalls + `}`,
			data: `{"instruction":"i","middle":"fixed","actions":true,"reason":true}`, actions: 2,
			want: `{"action_requests":[{"arguments":{"x":1,"y":2},"function":"add"},{"arguments":{"s":"a"},"function":"upper"}],"action_responses":[{"arguments":{"x":1,"y":2},"function":"add","output":{"sum":3}},{"arguments":{"s":"a"},"function":"upper","output":"A"}],"reason":null}`},
		// 0022-D3-09: invoke_actions off stops after validation.
		{name: "0022-D3-09 invoke_actions false runs nothing", reply: `{"n":1,` + twoCalls + `}`,
			data: `{"instruction":"i","middle":"fixed","actions":true,"invoke_actions":false,"response_format":` + format + `}`,
			want: `{"action_requests":[{"arguments":{"x":1,"y":2},"function":"add"},{"arguments":{"s":"a"},"function":"upper"}],"n":1}`},
		// 0022-D4-01: requests come only from a structured result.
		{name: "0022-D4-01 a text result carries no requests", reply: `"call add please"`,
			data: `{"instruction":"i","middle":"fixed","actions":true}`, want: `"call add please"`},
		{name: "0022-D4-01 without actions the requests are not looked at", reply: `{` + twoCalls + `}`,
			data: `{"instruction":"i","middle":"fixed"}`,
			want: `{"action_requests":[{"arguments":{"x":1,"y":2},"function":"add"},{"arguments":{"s":"a"},"function":"upper"}]}`},
		// 0022-D4-02: null or empty requests dispatch and enrich nothing.
		{name: "0022-D4-02 null requests", reply: `{"n":1,"action_requests":null}`,
			data: `{"instruction":"i","middle":"fixed","actions":true,"response_format":` + format + `}`, want: `{"action_requests":null,"n":1}`},
		{name: "0022-D4-02 empty requests", reply: `{"n":1,"action_requests":[]}`,
			data: `{"instruction":"i","middle":"fixed","actions":true,"response_format":` + format + `}`, want: `{"action_requests":[],"n":1}`},
		// 0022-D4-09: null outputs are dropped; nothing left, no enrichment.
		{name: "0022-D4-09 only null outputs leave the result unenriched", reply: `{"n":1,"action_requests":[{"function":"null"}]}`,
			data: `{"instruction":"i","middle":"fixed","actions":true,"response_format":` + format + `}`, actions: 1,
			want: `{"action_requests":[{"function":"null"}],"n":1}`},
		// 0022-D4-11: enriched in place, the model's fields kept.
		{name: "0022-D4-11 enriched in place", reply: `{"n":7,"action_required":true,"action_requests":[{"function":"add","arguments":{"x":2,"y":2}}]}`,
			data: `{"instruction":"i","middle":"fixed","actions":true,"response_format":` + format + `,"handle_validation":"raise"}`, actions: 1,
			want: `{"action_requests":[{"arguments":{"x":2,"y":2},"function":"add"}],"action_required":true,"action_responses":[{"arguments":{"x":2,"y":2},"function":"add","output":{"sum":4}}],"n":7}`},
		// 0022-D2-04: a model cannot supply action_responses.
		{name: "0022-D2-04 model-made action_responses are dropped", reply: `{"n":1,"action_responses":[{"function":"add","arguments":{},"output":99}]}`,
			data: `{"instruction":"i","middle":"fixed","actions":true,"response_format":` + format + `}`, want: `{"n":1}`},
		// 0022-D4-05 through operate: a tool outside the selection is denied.
		{name: "0022-D4-05 tools outside the selection are denied", reply: `{"action_requests":[{"function":"upper","arguments":{"s":"a"}}]}`,
			data: `{"instruction":"i","middle":"fixed","actions":true,"tools":["add"]}`,
			want: `{"action_requests":[{"arguments":{"s":"a"},"function":"upper"}],"action_responses":[{"arguments":{"s":"a"},"error":{"code":"denied","message":"tool \"upper\" is not allowed on this branch"},"function":"upper"}]}`},
		{name: "malformed requests", reply: `{"action_requests":[{"arguments":{}}]}`,
			data: `{"instruction":"i","middle":"fixed","actions":true}`, code: ops.CodeAction},
		{name: "unknown middle", data: `{"instruction":"i","middle":"nope"}`, code: ops.CodeInvalidRequest, msg: "unknown middle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOperateBundle(t)
			o.fixed.value = tt.reply
			o.branchWith(t, "b", "add", "upper", "null")
			res, err := o.operate(t, "op1", "b", tt.data)
			if tt.code != "" {
				if code(err) != tt.code || !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("err = %v, want %s containing %q", err, tt.code, tt.msg)
				}
				if tt.code == ops.CodeSchemaRejected && strings.Count(err.Error(), "z") > 200 {
					t.Fatalf("the error quotes more than 200 characters: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := compact(t, value(t, res)); got != tt.want {
				t.Fatalf("value %s\nwant  %s", got, tt.want)
			}
			calls := 0
			for i := range 2 {
				calls += o.tools.Calls(ops.ToolCallKey("op1/act", i))
			}
			if calls != tt.actions {
				t.Fatalf("%d tool calls, want %d", calls, tt.actions)
			}
			// 0022-D3-03, 0022-D2-08, 0021-D5-01: exactly one middle call,
			// never retried.
			if n := len(o.fixed.ins); n != 1 {
				t.Fatalf("%d middle calls, want 1", n)
			}
		})
	}
}

// 0022-D3-04, 0022-D2-06, 0022-D2-07: what the middle is handed.
func TestOperate_0022_D3_04_middle_input(t *testing.T) {
	o := newOperateBundle(t)
	o.fixed.value = `{"n":1}`
	o.branchWith(t, "b", "add", "upper")
	data := `{"instruction":"i","middle":"fixed","actions":true,"reason":true,"tools":["add"],"clear_messages":true,
		"response_format":{"title":"Count","type":"object","properties":{"n":{"type":"integer"}}}}`
	if _, err := o.operate(t, "op1", "b", data); err != nil {
		t.Fatal(err)
	}
	in := o.fixed.ins[0]
	if !in.ClearMessages || in.SkipValidation || in.RequestID != "op1/middle" || in.Verb != "operate" || in.BranchID != "b" {
		t.Fatalf("input %+v", in)
	}
	var rf map[string]any
	if err := json.Unmarshal(in.ResponseFormat, &rf); err != nil {
		t.Fatal(err)
	}
	props := rf["properties"].(map[string]any)
	if rf["title"] != "CountRequest" || props["action_requests"] == nil || props["reason"] == nil || props["n"] == nil {
		t.Fatalf("response format %v", rf)
	}
	if props["action_responses"] != nil {
		t.Fatal("the request schema asks the model for action_responses (0022-D2-04)")
	}
	if got := compact(t, in.ToolSchemas); got != `[{"name":"add"}]` {
		t.Fatalf("tool schemas %s, want the selected tool", got)
	}
	// skip_validation is handed over too.
	o.fixed.value = `"raw"`
	if _, err := o.operate(t, "op2", "b", `{"instruction":"i","middle":"fixed","skip_validation":true}`); err != nil {
		t.Fatal(err)
	}
	if in := o.fixed.ins[1]; !in.SkipValidation || in.ResponseFormat != nil || in.ToolSchemas != nil {
		t.Fatalf("input %+v", in)
	}
}

// The lifecycle: run.start, then exactly one terminal signal (ADR-0021 D4).
func TestOperate_lifecycle_signals(t *testing.T) {
	o := newOperateBundle(t)
	o.branchWith(t, "b", "add")
	o.fixed.value = `{"action_requests":[{"function":"add","arguments":{"x":1,"y":1}}]}`
	if _, err := o.operate(t, "ok", "b", `{"instruction":"i","middle":"fixed","actions":true}`); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(o.signals.types("ok"), " "); got != "run.start run.end" {
		t.Fatalf("signals of ok: %s", got)
	}
	if got := strings.Join(o.toolSignals("ok/act"), " "); got != "tool.pre add tool.post add message.added action_request message.added action_response" {
		t.Fatalf("signals of the act stage: %s", got)
	}
	o.fixed.value = `{"n":"x"}`
	_, err := o.operate(t, "bad", "b", `{"instruction":"i","middle":"fixed","handle_validation":"raise","response_format":{"type":"object","properties":{"n":{"type":"integer"}}}}`)
	if code(err) != ops.CodeSchemaRejected {
		t.Fatalf("err = %v", err)
	}
	if got := strings.Join(o.signals.types("bad"), " "); got != "run.start run.failed" {
		t.Fatalf("signals of bad: %s", got)
	}
}

// End to end with the communicate middle and the scripted provider: the
// model asks for two tool calls; the result validates against the
// response schema and carries their responses; the history holds the
// instruction, the response, two action requests and two action responses;
// a redelivery is answered from history.
func TestOperate_communicate_with_actions(t *testing.T) {
	o := newOperateBundle(t)
	reply := `{"answer":"done","action_required":true,"action_requests":[{"function":"add","arguments":{"x":1,"y":2}},{"function":"upper","arguments":{"s":"hi"}}]}`
	model, _ := json.Marshal(map[string]any{"provider": "scripted", "replies": []string{"```json\n" + reply + "\n```"}})
	o.mustDo(t, "branch.create", "", `{"branch_id":"b","tools":["add","upper"],"chat_model":`+string(model)+`}`)
	data := `{"instruction":"work","actions":true,"handle_validation":"raise",
		"response_format":{"title":"Work","type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}}`
	res, err := o.operate(t, "op1", "b", data)
	if err != nil {
		t.Fatal(err)
	}
	v := value(t, res).(map[string]any)
	want := `[{"arguments":{"x":1,"y":2},"function":"add","output":{"sum":3}},{"arguments":{"s":"hi"},"function":"upper","output":"HI"}]`
	if got := compact(t, v["action_responses"]); got != want || v["answer"] != "done" {
		t.Fatalf("value %s", res.Value)
	}
	br := o.branch(t, "b")
	if got := kinds(br.Messages); got != "instruction assistant_response action_request action_request action_response action_response" &&
		got != "instruction assistant_response action_request action_response action_request action_response" {
		t.Fatalf("messages: %s", got)
	}
	if n := o.prov.count(); n != 1 {
		t.Fatalf("%d model calls", n)
	}
	// A redelivery calls neither the model nor a tool.
	res2, err := o.operate(t, "op1", "b", data)
	if err != nil {
		t.Fatal(err)
	}
	if string(res2.Value) != string(res.Value) || !res2.Replayed || o.prov.count() != 1 || o.tools.Calls(ops.ToolCallKey("op1/act", 0)) != 1 {
		t.Fatalf("redelivery: %s replayed %v, %d model calls", res2.Value, res2.Replayed, o.prov.count())
	}
}

// 0022-D3-06, 0022-D3-07 with the communicate middle: an answer that does
// not parse into the generated schema is recorded; the policy then gives
// the text, null or the failure, and no tool runs.
func TestOperate_0022_D3_06_communicate_parse_failure(t *testing.T) {
	const text = `call add with {"x": 1} now`
	tests := []struct {
		handle string
		want   string
		code   ops.Code
	}{
		{handle: "return_value", want: `"call add with {\"x\": 1} now"`},
		{handle: "return_none", want: `null`},
		{handle: "raise", code: ops.CodeParse},
	}
	for _, tt := range tests {
		t.Run(tt.handle, func(t *testing.T) {
			o := newOperateBundle(t)
			model, _ := json.Marshal(map[string]any{"provider": "scripted", "replies": []string{text}})
			o.mustDo(t, "branch.create", "", `{"branch_id":"b","tools":["add"],"chat_model":`+string(model)+`}`)
			data := `{"instruction":"i","actions":true,"num_parse_retries":0,"handle_validation":"` + tt.handle + `",
				"response_format":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}`
			for _, id := range []string{"op1", "op1"} { // the second is a redelivery
				res, err := o.operate(t, id, "b", data)
				if tt.code != "" {
					if code(err) != tt.code {
						t.Fatalf("err = %v, want %s", err, tt.code)
					}
				} else if err != nil || string(res.Value) != tt.want {
					t.Fatalf("value %v err %v, want %s", res, err, tt.want)
				}
			}
			if n := o.tools.Calls(ops.ToolCallKey("op1/act", 0)); n != 0 {
				t.Fatalf("a tool ran %d times", n)
			}
			if got := kinds(o.branch(t, "b").Messages); got != "instruction assistant_response" {
				t.Fatalf("messages %s", got)
			}
			if n := o.prov.count(); n != 1 {
				t.Fatalf("%d model calls, want 1", n)
			}
		})
	}
}

// 0022-D4-03 through operate: the strategy reaches the act stage; with
// "sequential" (here the instruction's own, 0022-D1-08) each call ends
// before the next starts.
func TestOperate_0022_D4_03_sequential_strategy(t *testing.T) {
	o := newOperateBundle(t)
	o.branchWith(t, "b", "add", "upper")
	o.fixed.value = `{"action_requests":[{"function":"add","arguments":{"x":1,"y":1}},{"function":"upper","arguments":{"s":"a"}},{"function":"add","arguments":{"x":2,"y":2}}]}`
	data := `{"instruct":{"instruction":"i","actions":true,"action_strategy":"sequential"},"middle":"fixed"}`
	if _, err := o.operate(t, "op1", "b", data); err != nil {
		t.Fatal(err)
	}
	var hooks []string
	for _, s := range o.hooks("op1/act") {
		hooks = append(hooks, string(s.Type)+" "+s.Tool.Function)
	}
	if got := strings.Join(hooks, ", "); got != "tool.pre add, tool.post add, tool.pre upper, tool.post upper, tool.pre add, tool.post add" {
		t.Fatalf("hooks %s", got)
	}
}

// Native tool calls of a provider are mapped into the structured result's
// action requests (next to any it wrote itself, without doubles) and run.
func TestOperate_native_tool_calls_become_action_requests(t *testing.T) {
	o := newOperateBundle(t)
	reply := map[string]any{
		"text": "```json\n" + `{"answer":"done","action_requests":[{"function":"add","arguments":{"x":1,"y":2}}]}` + "\n```",
		"tool_calls": []map[string]any{
			{"id": "c1", "name": "add", "arguments": map[string]any{"x": 1, "y": 2}}, // the same as written: not doubled
			{"id": "c2", "name": "upper", "arguments": map[string]any{"s": "hi"}},
		},
	}
	model, _ := json.Marshal(map[string]any{"provider": "scripted", "replies": []any{reply}})
	o.mustDo(t, "branch.create", "", `{"branch_id":"b","tools":["add","upper"],"chat_model":`+string(model)+`}`)
	data := `{"instruction":"work","actions":true,
		"response_format":{"title":"Work","type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}}`
	res, err := o.operate(t, "op1", "b", data)
	if err != nil {
		t.Fatal(err)
	}
	v := value(t, res).(map[string]any)
	want := `[{"arguments":{"x":1,"y":2},"function":"add","output":{"sum":3}},{"arguments":{"s":"hi"},"function":"upper","output":"HI"}]`
	if got := compact(t, v["action_responses"]); got != want || v["action_required"] != true {
		t.Fatalf("value %s", res.Value)
	}
}

// recordingProvider is a ContextProvider that keeps what it is offered.
type recordingProvider struct {
	mu   sync.Mutex
	seen map[string][]ops.ActionResponse
	err  error
}

func (p *recordingProvider) Writeback(_ context.Context, branchID, requestID string, rs []ops.ActionResponse) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[branchID+"/"+requestID] = append(p.seen[branchID+"/"+requestID], rs...)
	return p.err
}

// 0022-D4-10: every non-null action response — a denial and a suppressed
// tool error included — is offered to the context providers; a provider
// that fails changes nothing.
func TestOperate_0022_D4_10_context_provider_writeback(t *testing.T) {
	ok := &recordingProvider{seen: map[string][]ops.ActionResponse{}}
	failing := &recordingProvider{seen: map[string][]ops.ActionResponse{}, err: errors.New("memory full")}
	o := newOperateBundleWith(t, func(c *ops.Config) { c.ContextProviders = []ops.ContextProvider{failing, ok} })
	reply := `{"answer":"done","action_requests":[{"function":"add","arguments":{"x":1,"y":2}},{"function":"secret","arguments":{}},{"function":"fail","arguments":{}}]}`
	model, _ := json.Marshal(map[string]any{"provider": "scripted", "replies": []string{reply}})
	o.mustDo(t, "branch.create", "", `{"branch_id":"b","tools":["add","fail"],"chat_model":`+string(model)+`}`)
	data := `{"instruction":"work","actions":true,
		"response_format":{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}}`
	res, err := o.operate(t, "op1", "b", data)
	if err != nil {
		t.Fatal(err)
	}
	got := ok.seen["b/op1"]
	if len(got) != 3 {
		t.Fatalf("offered %d responses, want 3 (a result, a denial, an error): %+v", len(got), got)
	}
	if got[0].Function != "add" || got[0].Error != nil || got[1].Function != "secret" || got[1].Error == nil || got[2].Error == nil {
		t.Fatalf("offered %+v", got)
	}
	if len(failing.seen["b/op1"]) != 3 {
		t.Fatal("the failing provider was not offered them")
	}
	if v := value(t, res).(map[string]any); len(v["action_responses"].([]any)) != 3 {
		t.Fatalf("value %s", res.Value)
	}
}
