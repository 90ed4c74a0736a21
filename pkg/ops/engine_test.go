package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
	"github.com/lionbus/lionbus/schemas"
)

// countingProvider wraps the scripted provider and records every call.
type countingProvider struct {
	mu    sync.Mutex
	calls []ops.Call
}

func (p *countingProvider) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	p.mu.Lock()
	p.calls = append(p.calls, call)
	p.mu.Unlock()
	return scripted.New().Complete(ctx, call)
}

func (p *countingProvider) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

func (p *countingProvider) last() ops.Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[len(p.calls)-1]
}

// signalRecorder keeps the signals it receives.
type signalRecorder struct {
	mu      sync.Mutex
	signals []ops.Signal
}

func (r *signalRecorder) Emit(_ context.Context, s ops.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.signals = append(r.signals, s)
	return nil
}

func (r *signalRecorder) types(requestID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.signals {
		if s.RequestID == requestID {
			out = append(out, string(s.Type))
		}
	}
	return out
}

type bundle struct {
	eng     *ops.Engine
	store   *opstest.MemoryStore
	prov    *countingProvider
	signals *signalRecorder
	waits   *waitRecorder
	n       int
}

// waitRecorder is an engine's Config.Sleep that keeps the waits asked for
// and returns at once.
type waitRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (w *waitRecorder) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.waits = append(w.waits, d)
	w.mu.Unlock()
	return ctx.Err()
}

func (w *waitRecorder) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.waits...)
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{store: opstest.NewMemoryStore(), prov: &countingProvider{}, signals: &signalRecorder{}, waits: &waitRecorder{}}
	clock := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	eng, err := ops.NewEngine(ops.Config{
		Store:     b.store,
		Providers: ops.NewProviders(map[string]ops.Provider{"scripted": b.prov}),
		Signals:   b.signals,
		Sleep:     b.waits.sleep,
		Clock: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			clock = clock.Add(time.Millisecond)
			return clock
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	b.eng = eng
	return b
}

// do runs a request and checks a successful result against its schema.
func (b *bundle) do(t *testing.T, verb, branch, data string) (*ops.Result, error) {
	t.Helper()
	b.n++
	return b.doID(t, fmt.Sprintf("req-%d", b.n), verb, branch, data)
}

func (b *bundle) doID(t *testing.T, id, verb, branch, data string) (*ops.Result, error) {
	t.Helper()
	if data != "" {
		if err := schemas.Validate("lionbus."+verb+".request", []byte(data)); err != nil {
			t.Fatalf("test request data does not match its schema: %v", err)
		}
	}
	res, err := b.eng.Do(context.Background(), ops.Request{ID: id, Verb: verb, BranchID: branch, Data: json.RawMessage(data)})
	if err == nil {
		out, merr := json.Marshal(res)
		if merr != nil {
			t.Fatal(merr)
		}
		if verr := schemas.Validate("lionbus."+verb+".result", out); verr != nil {
			t.Fatalf("%s result %s does not match its schema: %v", verb, out, verr)
		}
	}
	return res, err
}

func (b *bundle) mustDo(t *testing.T, verb, branch, data string) *ops.Result {
	t.Helper()
	res, err := b.do(t, verb, branch, data)
	if err != nil {
		t.Fatalf("%s %s: %v", verb, data, err)
	}
	return res
}

func (b *bundle) branch(t *testing.T, id string) *history.Branch {
	t.Helper()
	br, err := b.store.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return br
}

func code(err error) ops.Code {
	var oe *ops.Error
	if errors.As(err, &oe) {
		return oe.Code
	}
	return ""
}

func decodeBranch(t *testing.T, res *ops.Result) history.Branch {
	t.Helper()
	var b history.Branch
	if err := json.Unmarshal(res.Value, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEngine_Verbs(t *testing.T) {
	b := setup(t)
	want := "[act branch.clear branch.clone branch.create branch.delete branch.fork branch.forks branch.get branch.history branch.import branch.list chat chat_and_record communicate interpret operate parse react run]"
	if got := fmt.Sprint(b.eng.Verbs()); got != want {
		t.Fatalf("Verbs() = %s, want %s", got, want)
	}
	_, err := b.eng.Do(context.Background(), ops.Request{ID: "x", Verb: "nope"})
	if code(err) != ops.CodeUnknownVerb {
		t.Fatalf("unknown verb: err = %v, want %s", err, ops.CodeUnknownVerb)
	}
	if _, err := ops.NewEngine(ops.Config{}); err == nil {
		t.Fatal("NewEngine without a store succeeded")
	}
}

func TestEngine_branch_errors(t *testing.T) {
	tests := []struct {
		name     string
		verb     string
		branch   string
		data     string
		wantCode ops.Code
		wantMsg  string
	}{
		{"create with invalid id", "branch.create", "", `{"branch_id":"a.b"}`, ops.CodeInvalidRequest, "may only contain"},
		{"create with too long id", "branch.create", strings.Repeat("x", 129), `{}`, ops.CodeInvalidRequest, "at most 128"},
		{"create with conflicting ids", "branch.create", "b2", `{"branch_id":"b3"}`, ops.CodeInvalidRequest, "differ"},
		{"create existing", "branch.create", "", `{"branch_id":"main"}`, ops.CodeBranchExists, "main"},
		{"create with bad tool name", "branch.create", "", `{"tools":["ok","not ok"]}`, ops.CodeInvalidRequest, "tools[1]"},
		{"get missing", "branch.get", "nope", ``, ops.CodeBranchNotFound, "nope"},
		{"get without branch id", "branch.get", "", ``, ops.CodeInvalidRequest, "branch id is required"},
		{"clear missing", "branch.clear", "nope", ``, ops.CodeBranchNotFound, "nope"},
		{"delete missing", "branch.delete", "nope", ``, ops.CodeBranchNotFound, "nope"},
		{"history missing", "branch.history", "nope", `{}`, ops.CodeBranchNotFound, "nope"},
		{"clone missing", "branch.clone", "nope", `{}`, ops.CodeBranchNotFound, "nope"},
		{"clone onto itself", "branch.clone", "main", `{"branch_id":"main"}`, ops.CodeInvalidRequest, "being cloned"},
		{"communicate without instruction", "communicate", "main", `{"guidance":"g"}`, ops.CodeInvalidRequest, "instruction is required"},
		{"communicate on missing branch", "communicate", "nope", `{"instruction":"q"}`, ops.CodeBranchNotFound, "nope"},
		{"communicate with unknown provider", "communicate", "main", `{"instruction":"q","chat_model":"nosuch:m"}`, ops.CodeInvalidRequest, "unknown model provider"},
		{"communicate with bad schema", "communicate", "main", `{"instruction":"q","response_format":{"type":"no-such-type"}}`, ops.CodeInvalidRequest, "response_format"},
		{"communicate with remote ref", "communicate", "main", `{"instruction":"q","response_format":{"$ref":"file:///etc/passwd"}}`, ops.CodeInvalidRequest, "response_format"},
		{"communicate with negative retries", "communicate", "main", `{"instruction":"q","num_parse_retries":-1}`, ops.CodeInvalidRequest, "num_parse_retries"},
		{"communicate on branch without model", "communicate", "nomodel", `{"instruction":"q"}`, ops.CodeInvalidRequest, "no chat_model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			b.mustDo(t, "branch.create", "", `{"branch_id":"main","chat_model":"scripted:echo"}`)
			b.mustDo(t, "branch.create", "", `{"branch_id":"nomodel"}`)
			// Some of these data are also rejected by the request schema; the
			// engine must reject them on its own too.
			_, err := b.eng.Do(context.Background(), ops.Request{ID: "bad", Verb: tt.verb, BranchID: tt.branch, Data: json.RawMessage(tt.data)})
			if code(err) != tt.wantCode || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("err = %v, want code %s mentioning %q", err, tt.wantCode, tt.wantMsg)
			}
			if b.prov.count() != 0 {
				t.Fatalf("a failed request called the model %d times", b.prov.count())
			}
		})
	}
}

func TestEngine_bad_data_types(t *testing.T) {
	b := setup(t)
	b.mustDo(t, "branch.create", "", `{"branch_id":"main","chat_model":"scripted:echo"}`)
	tests := []struct {
		verb, branch, data, wantMsg string
	}{
		{"branch.create", "", `{"system":5}`, `"system" must be a string`},
		{"branch.create", "", `[1]`, "must be a JSON object"},
		{"branch.create", "", `{"chat_model":"nocolon"}`, "provider:model"},
		{"branch.history", "main", `{"limit":"ten"}`, `"limit" must be a number`},
		{"communicate", "main", `{"instruction":"q","skip_validation":"yes"}`, `"skip_validation" must be a boolean`},
		{"communicate", "main", `{"instruction":5}`, "instruction must be a string or an object"},
		{"communicate", "main", `{"instruction":["a"]}`, "instruction must be a string or an object"},
		{"communicate", "main", `{"instruction":"q","request_fields":5}`, "request_fields"},
		{"communicate", "main", `{not json`, "not valid JSON"},
		// Numbers no float64 holds are named as such, not as a wrong type.
		{"communicate", "main", `{"instruction":"q","chat_model":{"provider":"scripted","name":"echo","temperature":1e400}}`, "holds the number 1e400, which is out of range"},
		{"communicate", "main", `{"instruction":"q","response_format":{"type":"number","maximum":-1e999}}`, "data.response_format holds the number -1e999, which is out of range"},
		{"operate", "main", `{"instruction":"q","field_models":{"n":{"type":"number","minimum":2e308}}}`, "data.field_models.n holds the number 2e308, which is out of range"},
	}
	for _, tt := range tests {
		_, err := b.eng.Do(context.Background(), ops.Request{ID: "bad", Verb: tt.verb, BranchID: tt.branch, Data: json.RawMessage(tt.data)})
		if code(err) != ops.CodeInvalidRequest || !strings.Contains(err.Error(), tt.wantMsg) {
			t.Errorf("%s %s: err = %v, want invalid_request mentioning %q", tt.verb, tt.data, err, tt.wantMsg)
		}
		if err != nil && strings.Contains(err.Error(), "must be a JSON object, not") && strings.HasPrefix(tt.data, "{") {
			t.Errorf("%s %s: %v contradicts an object", tt.verb, tt.data, err)
		}
	}
}

func TestEngine_branch_lifecycle(t *testing.T) {
	b := setup(t)
	res := b.mustDo(t, "branch.create", "", `{"system":"Be brief.","chat_model":"scripted:echo","parse_model":{"provider":"scripted","replies":["x"]},"tools":["add"]}`)
	created := decodeBranch(t, res)
	if !ops.ValidID(created.ID) || res.BranchID != created.ID {
		t.Fatalf("generated id %q (result branch_id %q) is not a valid id", created.ID, res.BranchID)
	}
	if created.Settings.ParseModel == nil || created.Settings.ParseModel.Options["replies"] == nil || created.Settings.Tools[0] != "add" {
		t.Fatalf("settings not stored: %+v", created.Settings)
	}
	id := created.ID
	b.mustDo(t, "communicate", id, `{"instruction":"one"}`)
	b.mustDo(t, "communicate", id, `{"instruction":"two"}`)

	got := decodeBranch(t, b.mustDo(t, "branch.get", id, ``))
	if len(got.Messages) != 5 || got.ModelCalls != 2 {
		t.Fatalf("branch after two exchanges: %d messages, %d calls", len(got.Messages), got.ModelCalls)
	}

	clone := decodeBranch(t, b.mustDo(t, "branch.clone", id, `{"branch_id":"copy"}`))
	if clone.ID != "copy" || len(clone.Messages) != 5 || clone.ModelCalls != 2 {
		t.Fatalf("clone = %s with %d messages, %d calls", clone.ID, len(clone.Messages), clone.ModelCalls)
	}

	cleared := decodeBranch(t, b.mustDo(t, "branch.clear", id, ``))
	if len(cleared.Messages) != 1 || cleared.Messages[0].Kind != history.KindSystem {
		t.Fatalf("cleared branch messages = %+v", cleared.Messages)
	}
	if got := b.branch(t, "copy"); len(got.Messages) != 5 {
		t.Fatalf("clearing the source changed the clone: %d messages", len(got.Messages))
	}

	var page ops.HistoryPage
	if err := json.Unmarshal(b.mustDo(t, "branch.history", id, `{"limit":2}`).Value, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 2 || !page.More || page.Events[0].Type != history.EventCreated || page.Next != page.Events[1].Seq {
		t.Fatalf("first history page = %+v", page)
	}
	after := page.Next
	if err := json.Unmarshal(b.mustDo(t, "branch.history", id, fmt.Sprintf(`{"after":%d,"limit":5}`, after)).Value, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 2 || page.More || page.Events[1].Type != history.EventCleared {
		t.Fatalf("second history page = %+v", page)
	}

	b.mustDo(t, "branch.delete", id, ``)
	if _, err := b.do(t, "branch.get", id, ``); code(err) != ops.CodeBranchNotFound {
		t.Fatalf("get after delete: %v", err)
	}
}

func TestEngine_branch_redelivery(t *testing.T) {
	b := setup(t)
	first, err := b.doID(t, "c1", "branch.create", "", `{"branch_id":"main","chat_model":"scripted:echo"}`)
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.doID(t, "c1", "branch.create", "", `{"branch_id":"main","chat_model":"scripted:echo"}`)
	if err != nil || !again.Replayed || string(again.Value) != string(first.Value) {
		t.Fatalf("redelivered create = %+v, %v; want the same branch, replayed", again, err)
	}
	if _, err := b.doID(t, "k1", "branch.clone", "main", `{"branch_id":"copy"}`); err != nil {
		t.Fatal(err)
	}
	if res, err := b.doID(t, "k1", "branch.clone", "main", `{"branch_id":"copy"}`); err != nil || !res.Replayed {
		t.Fatalf("redelivered clone = %+v, %v", res, err)
	}
	if _, err := b.doID(t, "x1", "branch.clear", "main", ``); err != nil {
		t.Fatal(err)
	}
	if res, err := b.doID(t, "x1", "branch.clear", "main", ``); err != nil || !res.Replayed {
		t.Fatalf("redelivered clear = %+v, %v", res, err)
	}
	evs, _ := b.store.History(context.Background(), "main", 0, 0)
	if len(evs) != 2 {
		t.Fatalf("history has %d events after redeliveries, want 2", len(evs))
	}
}

func TestEngine_communicate(t *testing.T) {
	schema := `{"type":"object","properties":{"answer":{"type":"string"},"confidence":{"type":"number"}},"required":["answer"],"additionalProperties":false}`
	replies := func(rs ...string) string {
		return `{"provider":"scripted","replies":[` + strings.Join(rs, ",") + `]}`
	}
	tests := []struct {
		name      string
		model     string
		requests  []string // data of successive communicate requests
		want      []string // value JSON, or "error:<code>" for the last request
		wantCalls int
		wantMsgs  int
	}{
		{
			name: "echo", model: `"scripted:echo"`,
			requests: []string{`{"instruction":"hi there"}`, `{"instruction":{"task":"sum","of":[1,2]}}`},
			want:     []string{`"hi there"`, `"{\"of\":[1,2],\"task\":\"sum\"}"`}, wantCalls: 2, wantMsgs: 4,
		},
		{
			name: "replies in order, then exhausted", model: replies(`"one"`, `{"text":"two"}`),
			requests: []string{`{"instruction":"a"}`, `{"instruction":"b"}`, `{"instruction":"c"}`},
			want:     []string{`"one"`, `"two"`, "error:provider_error"}, wantCalls: 3, wantMsgs: 4,
		},
		{
			name: "structured answer in a fence", model: replies(`"Here:\n` + "```json" + `\n{\"answer\": \"4\", \"confidence\": 0.9}\n` + "```" + `"`),
			requests: []string{`{"instruction":"2+2?","response_format":` + schema + `}`},
			want:     []string{`{"answer":"4","confidence":0.9}`}, wantCalls: 1, wantMsgs: 2,
		},
		{
			name: "reformat round fixes the answer", model: replies(`"four"`, `"{\"answer\": \"4\"}"`),
			requests: []string{`{"instruction":"2+2?","response_format":` + schema + `}`},
			want:     []string{`{"answer":"4"}`}, wantCalls: 2, wantMsgs: 2,
		},
		{
			name: "parse fails after the retries", model: replies(`"four"`, `"still four"`, `"{\"answer\": 4}"`),
			requests: []string{`{"instruction":"2+2?","num_parse_retries":2,"response_format":` + schema + `}`},
			want:     []string{"error:parse_failed"}, wantCalls: 3, wantMsgs: 2,
		},
		{
			name: "retries are clamped to five", model: replies(`"a"`, `"b"`, `"c"`, `"d"`, `"e"`, `"f"`, `"g"`, `"h"`),
			requests: []string{`{"instruction":"q","num_parse_retries":50,"response_format":` + schema + `}`},
			want:     []string{"error:parse_failed"}, wantCalls: 6, wantMsgs: 2,
		},
		{
			name: "zero retries", model: replies(`"a"`),
			requests: []string{`{"instruction":"q","num_parse_retries":0,"response_format":` + schema + `}`},
			want:     []string{"error:parse_failed"}, wantCalls: 1, wantMsgs: 2,
		},
		{
			name: "skip validation returns the text", model: replies(`"four"`),
			requests: []string{`{"instruction":"q","skip_validation":true,"response_format":` + schema + `}`},
			want:     []string{`"four"`}, wantCalls: 1, wantMsgs: 2,
		},
		// 0021-D3-06: with request_fields and no response_format the keys
		// are matched to the fields (here by similarity: Answr, confidance),
		// keys that are no field are dropped, and a field not found is
		// left out of the value ({} for a reply without JSON).
		{
			name: "request fields", model: replies(`"{'Answr': 'four', confidance: 0.9, extra: 1,}"`, `"no json"`),
			requests: []string{`{"instruction":"q","request_fields":{"answer":"str","confidence":"float"}}`, `{"instruction":"q","request_fields":["answer"]}`},
			want:     []string{`{"answer":"four","confidence":0.9}`, `{}`}, wantCalls: 2, wantMsgs: 4,
		},
		{
			name: "final scripted error records nothing", model: replies(`{"error":"boom"}`),
			requests: []string{`{"instruction":"q"}`},
			want:     []string{"error:provider_error"}, wantCalls: 1, wantMsgs: 0,
		},
		{
			// The script position counts every recorded call on the branch,
			// whichever model made it.
			name: "chat_model override", model: replies(`"skipped"`, `"from branch"`),
			requests: []string{`{"instruction":"q","chat_model":"scripted:echo"}`, `{"instruction":"r"}`},
			want:     []string{`"q"`, `"from branch"`}, wantCalls: 2, wantMsgs: 4,
		},
		{
			name: "clear messages", model: `"scripted:echo"`,
			requests: []string{`{"instruction":"a"}`, `{"instruction":"b"}`, `{"instruction":"c","clear_messages":true}`},
			want:     []string{`"a"`, `"b"`, `"c"`}, wantCalls: 3, wantMsgs: 2,
		},
		{
			name: "plain content", model: `"scripted:echo"`,
			requests: []string{`{"plain_content":"verbatim"}`},
			want:     []string{`"verbatim"`}, wantCalls: 1, wantMsgs: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			b.mustDo(t, "branch.create", "", `{"branch_id":"main","system":"SYS","chat_model":`+tt.model+`}`)
			for i, data := range tt.requests {
				res, err := b.do(t, "communicate", "main", data)
				want := tt.want[i]
				if c, ok := strings.CutPrefix(want, "error:"); ok {
					if string(code(err)) != c {
						t.Fatalf("request %d: err = %v, want code %s", i, err, c)
					}
					continue
				}
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if string(res.Value) != want {
					t.Fatalf("request %d: value = %s, want %s", i, res.Value, want)
				}
			}
			if got := b.prov.count(); got != tt.wantCalls {
				t.Errorf("model calls = %d, want %d", got, tt.wantCalls)
			}
			br := b.branch(t, "main")
			if got := len(br.Messages) - 1; got != tt.wantMsgs {
				t.Errorf("recorded messages = %d, want %d", got, tt.wantMsgs)
			}
			if br.ModelCalls != uint64(tt.wantCalls) && !strings.Contains(tt.name, "records nothing") && !strings.Contains(tt.name, "exhausted") {
				t.Errorf("branch model calls = %d, want %d", br.ModelCalls, tt.wantCalls)
			}
		})
	}
}

func TestEngine_communicate_prompt_and_metadata(t *testing.T) {
	b := setup(t)
	b.mustDo(t, "branch.create", "", `{"branch_id":"main","system":"SYS","chat_model":{"provider":"scripted","replies":[
		{"text":"first","usage":{"input_tokens":3,"output_tokens":1,"total_tokens":4}},
		{"text":"not json","usage":{"input_tokens":5,"output_tokens":2,"total_tokens":7}},
		{"text":"{\"n\": 1}","usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}]}}`)
	res := b.mustDo(t, "communicate", "main", `{"instruction":"q1","guidance":"G"}`)
	if res.Usage == nil || res.Usage.TotalTokens != 4 {
		t.Fatalf("usage = %+v, want 4 total tokens", res.Usage)
	}
	first := b.prov.last()
	want := []ops.ChatMessage{{Role: history.RoleSystem, Content: "SYS"}, {Role: history.RoleUser, Content: "Guidance:\nG\n\nInstruction:\nq1"}}
	if fmt.Sprint(first.Messages) != fmt.Sprint(want) || first.Index != 0 || first.BranchID != "main" || first.Attempt != 1 {
		t.Fatalf("first call = %+v, want messages %v at index 0", first, want)
	}

	res = b.mustDo(t, "communicate", "main", `{"instruction":"q2","response_format":{"type":"object","required":["n"]}}`)
	if string(res.Value) != `{"n":1}` || res.Usage.TotalTokens != 9 {
		t.Fatalf("value %s usage %+v; want {\"n\":1} and 9 tokens summed over the reformat round", res.Value, res.Usage)
	}
	reformat := b.prov.last()
	if reformat.Index != 2 || !strings.Contains(reformat.Messages.Slice()[len(reformat.Messages.Slice())-1].Content, "text_to_format") {
		t.Fatalf("reformat call = %+v", reformat)
	}
	if len(reformat.Messages.Slice()) != 6 || reformat.Messages.Slice()[3].Content != "Instruction:\nq2" || reformat.Messages.Slice()[4].Content != "not json" {
		t.Fatalf("reformat prompt should hold the history and the failed exchange: %q", reformat.Messages)
	}

	br := b.branch(t, "main")
	resp := br.Messages[len(br.Messages)-1]
	if resp.Text() != "not json" || resp.Metadata["original_model_response"] == nil || resp.Metadata["model_response"] == nil {
		t.Fatalf("reformatted response metadata = %+v", resp.Metadata)
	}
	if br.ModelCalls != 3 {
		t.Fatalf("model calls = %d, want 3", br.ModelCalls)
	}
}

func TestEngine_communicate_is_idempotent(t *testing.T) {
	b := setup(t)
	b.mustDo(t, "branch.create", "", `{"branch_id":"main","chat_model":{"provider":"scripted","replies":["a","b","c"]}}`)
	first, err := b.doID(t, "same", "communicate", "main", `{"instruction":"q"}`)
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.doID(t, "same", "communicate", "main", `{"instruction":"q"}`)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || first.Replayed || string(again.Value) != `"a"` || again.DurationMS != first.DurationMS {
		t.Fatalf("redelivery = %+v, first = %+v", again, first)
	}
	if b.prov.count() != 1 || len(b.branch(t, "main").Messages) != 2 {
		t.Fatalf("redelivery called the model (%d calls) or doubled messages", b.prov.count())
	}

	// A recorded parse failure is answered again as the same failure.
	_, err1 := b.doID(t, "pf", "communicate", "main", `{"instruction":"q","num_parse_retries":0,"response_format":{"type":"object"}}`)
	_, err2 := b.doID(t, "pf", "communicate", "main", `{"instruction":"q","num_parse_retries":0,"response_format":{"type":"object"}}`)
	if code(err1) != ops.CodeParse || code(err2) != ops.CodeParse || b.prov.count() != 2 {
		t.Fatalf("parse failure replay: %v / %v, %d calls", err1, err2, b.prov.count())
	}
}

func TestEngine_communicate_concurrent_duplicates(t *testing.T) {
	b := setup(t)
	b.mustDo(t, "branch.create", "", `{"branch_id":"main","chat_model":{"provider":"scripted","replies":["a","b"]}}`)
	const n = 4
	var wg sync.WaitGroup
	results := make([]*ops.Result, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i], errs[i] = b.eng.Do(context.Background(), ops.Request{
				ID: "dup", Verb: "communicate", BranchID: "main", Data: json.RawMessage(`{"instruction":"q"}`),
			})
		}(i)
	}
	wg.Wait()
	fresh := 0
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			t.Fatalf("duplicate %d: %v", i, errs[i])
		}
		if string(results[i].Value) != `"a"` {
			t.Fatalf("duplicate %d value = %s, want \"a\"", i, results[i].Value)
		}
		if !results[i].Replayed {
			fresh++
		}
	}
	if fresh != 1 {
		t.Fatalf("%d duplicates were not marked replayed, want exactly one fresh result", fresh)
	}
	if br := b.branch(t, "main"); len(br.Messages) != 2 || br.ModelCalls != 1 {
		t.Fatalf("branch after duplicates: %d messages, %d model calls", len(br.Messages), br.ModelCalls)
	}
}

func TestEngine_communicate_concurrent_requests_all_land(t *testing.T) {
	b := setup(t)
	b.mustDo(t, "branch.create", "", `{"branch_id":"main","chat_model":"scripted:echo"}`)
	const n = 8
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := b.eng.Do(context.Background(), ops.Request{
				ID: fmt.Sprintf("r%d", i), Verb: "communicate", BranchID: "main",
				Data: json.RawMessage(fmt.Sprintf(`{"instruction":"q%d"}`, i)),
			})
			if err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	br := b.branch(t, "main")
	if len(br.Messages) != 2*n || br.Commits.Len() != n {
		t.Fatalf("%d messages and %d commits, want %d and %d", len(br.Messages), br.Commits.Len(), 2*n, n)
	}
	for i := 0; i < len(br.Messages); i += 2 {
		ins, res := br.Messages[i], br.Messages[i+1]
		if ins.Kind != history.KindInstruction || res.Kind != history.KindAssistantResponse || ins.Content["instruction"] != res.Text() {
			t.Fatalf("exchange %d is interleaved: %v / %v", i/2, ins.Content, res.Content)
		}
	}
}

func TestEngine_temporary_provider_error(t *testing.T) {
	b := setup(t)
	b.mustDo(t, "branch.create", "", `{"branch_id":"main","chat_model":{"provider":"scripted","replies":[
		{"text":"recovered","error":{"message":"overloaded","temporary":true,"attempts":1}}]}}`)
	req := ops.Request{ID: "t1", Verb: "communicate", BranchID: "main", Data: json.RawMessage(`{"instruction":"q"}`), Attempt: 1}
	_, err := b.eng.Do(context.Background(), req)
	var oe *ops.Error
	if !errors.As(err, &oe) || oe.Code != ops.CodeProvider || !oe.Temporary || !strings.Contains(oe.Message, "overloaded") {
		t.Fatalf("first attempt: err = %#v, want a temporary provider error", err)
	}
	req.Attempt = 2
	res, err := b.eng.Do(context.Background(), req)
	if err != nil || string(res.Value) != `"recovered"` {
		t.Fatalf("second attempt = %v, %v; want \"recovered\"", res, err)
	}
	// A temporary failure that will be retried emits no terminal signal:
	// the run ends once, with the retry (the second run.start has the
	// same event id on the bus, which stores it once).
	if got := b.signals.types("t1"); fmt.Sprint(got) != "[run.start run.start message.added message.added run.end]" {
		t.Fatalf("signals = %v", got)
	}

	// On the last delivery a temporary failure is final: run.failed.
	b.mustDo(t, "branch.create", "", `{"branch_id":"last","chat_model":{"provider":"scripted","replies":[
		{"text":"never","error":{"message":"overloaded","temporary":true,"attempts":10}}]}}`)
	last := ops.Request{ID: "t2", Verb: "communicate", BranchID: "last", Data: json.RawMessage(`{"instruction":"q"}`), Attempt: 3, LastAttempt: true}
	if _, err := b.eng.Do(context.Background(), last); err == nil {
		t.Fatal("no error on the last attempt")
	}
	if got := b.signals.types("t2"); fmt.Sprint(got) != "[run.start run.failed]" {
		t.Fatalf("signals on the last attempt = %v", got)
	}
}

func TestEngine_chat_and_chat_and_record(t *testing.T) {
	b := setup(t)
	b.mustDo(t, "branch.create", "", `{"branch_id":"main","chat_model":{"provider":"scripted","replies":["r0","r1"]}}`)
	res := b.mustDo(t, "chat", "main", `{"instruction":"q"}`)
	if string(res.Value) != `"r0"` || len(b.branch(t, "main").Messages) != 0 {
		t.Fatalf("chat = %s and recorded %d messages; want r0 and nothing recorded", res.Value, len(b.branch(t, "main").Messages))
	}
	res = b.mustDo(t, "chat", "main", `{"instruction":"q"}`)
	if string(res.Value) != `"r0"` {
		t.Fatalf("unrecorded calls must not advance the script: got %s", res.Value)
	}
	res, err := b.doID(t, "rec", "chat_and_record", "main", `{"instruction":"q"}`)
	if err != nil || string(res.Value) != `"r0"` {
		t.Fatalf("chat_and_record = %v, %v", res, err)
	}
	res = b.mustDo(t, "chat", "main", `{"instruction":"q2"}`)
	if string(res.Value) != `"r1"` {
		t.Fatalf("after a recorded call the script advances: got %s", res.Value)
	}
	if br := b.branch(t, "main"); len(br.Messages) != 2 {
		t.Fatalf("chat_and_record recorded %d messages, want 2", len(br.Messages))
	}
	if got := b.signals.types("rec"); fmt.Sprint(got) != "[message.added message.added]" {
		t.Fatalf("chat_and_record signals = %v, want two message.added and no run lifecycle", got)
	}
}

func TestEngine_result_values_validate(t *testing.T) {
	// Every verb's result is checked against schemas/lionbus.<verb>.result.json
	// by bundle.do; this drives each verb once with a non-trivial branch.
	b := setup(t)
	b.mustDo(t, "branch.create", "", `{"branch_id":"main","system":"S","chat_model":"scripted:echo","metadata":{"k":"v"}}`)
	b.mustDo(t, "communicate", "main", `{"instruction":"x","context":["c"]}`)
	b.mustDo(t, "chat_and_record", "main", `{"instruction":"y"}`)
	b.mustDo(t, "chat", "main", `{"instruction":"z"}`)
	for _, v := range []string{"branch.get", "branch.clone", "branch.history", "branch.clear", "branch.delete"} {
		b.mustDo(t, v, "main", `{}`)
	}
}

type failingStore struct{ history.Store }

func (failingStore) Load(context.Context, string) (*history.Branch, error) {
	return nil, errors.New("connection refused")
}

func TestEngine_store_failure_is_temporary(t *testing.T) {
	eng, err := ops.NewEngine(ops.Config{Store: failingStore{opstest.NewMemoryStore()}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = eng.Do(context.Background(), ops.Request{ID: "r", Verb: "branch.get", BranchID: "main"})
	var oe *ops.Error
	if !errors.As(err, &oe) || oe.Code != ops.CodeUnavailable || !oe.Temporary {
		t.Fatalf("err = %#v, want a temporary unavailable error", err)
	}
}

func TestEngine_canceled_context(t *testing.T) {
	b := setup(t)
	b.mustDo(t, "branch.create", "", `{"branch_id":"main","chat_model":"scripted:echo"}`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.eng.Do(ctx, ops.Request{ID: "r", Verb: "communicate", BranchID: "main", Data: json.RawMessage(`{"instruction":"q"}`)})
	if code(err) != ops.CodeCanceled {
		t.Fatalf("err = %v, want canceled", err)
	}
	ctx, cancel = context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err = b.eng.Do(ctx, ops.Request{ID: "r", Verb: "communicate", BranchID: "main", Data: json.RawMessage(`{"instruction":"q"}`)})
	var oe *ops.Error
	if !errors.As(err, &oe) || oe.Code != ops.CodeTimeout || !oe.Temporary {
		t.Fatalf("err = %v, want a temporary timeout", err)
	}
}

type failingSignals struct{}

func (failingSignals) Emit(context.Context, ops.Signal) error { return errors.New("observer down") }

type providerFunc func(ctx context.Context, call ops.Call) (*ops.Completion, error)

func (f providerFunc) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	return f(ctx, call)
}

func TestEngine_provider_failures_and_observers(t *testing.T) {
	tests := []struct {
		name      string
		prov      providerFunc
		wantCode  ops.Code
		temporary bool
	}{
		{"plain error is a final provider error", func(context.Context, ops.Call) (*ops.Completion, error) {
			return nil, errors.New("socket closed")
		}, ops.CodeProvider, false},
		{"wrapped temporary provider error", func(context.Context, ops.Call) (*ops.Completion, error) {
			return nil, fmt.Errorf("call: %w", &ops.ProviderError{Provider: "p", Message: "429", Temporary: true})
		}, ops.CodeProvider, true},
		{"network timeout is a temporary provider error", func(context.Context, ops.Call) (*ops.Completion, error) {
			return nil, &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
		}, ops.CodeProvider, true},
		{"nil completion", func(context.Context, ops.Call) (*ops.Completion, error) {
			return nil, nil
		}, ops.CodeProvider, false},
		{"deadline from the provider", func(context.Context, ops.Call) (*ops.Completion, error) {
			return nil, context.DeadlineExceeded
		}, ops.CodeTimeout, true},
		{"success despite a failing observer", func(context.Context, ops.Call) (*ops.Completion, error) {
			return &ops.Completion{Text: "ok"}, nil
		}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng, err := ops.NewEngine(ops.Config{
				Store:     opstest.NewMemoryStore(),
				Providers: ops.NewProviders(map[string]ops.Provider{"p": tt.prov}),
				Signals:   failingSignals{},
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := eng.Do(ctx, ops.Request{ID: "c", Verb: "branch.create", Data: json.RawMessage(`{"branch_id":"b","chat_model":"p:m"}`)}); err != nil {
				t.Fatal(err)
			}
			res, err := eng.Do(ctx, ops.Request{ID: "r", Verb: "communicate", BranchID: "b", Data: json.RawMessage(`{"instruction":"q"}`)})
			if tt.wantCode == "" {
				if err != nil || string(res.Value) != `"ok"` {
					t.Fatalf("result = %v, %v; want \"ok\"", res, err)
				}
				return
			}
			var oe *ops.Error
			if !errors.As(err, &oe) || oe.Code != tt.wantCode || oe.Temporary != tt.temporary {
				t.Fatalf("err = %#v, want code %s temporary %v", err, tt.wantCode, tt.temporary)
			}
		})
	}
}
