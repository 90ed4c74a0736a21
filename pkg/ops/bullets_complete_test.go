package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
)

// scriptedModel is a scripted model reference answering replies, as JSON.
func scriptedModel(replies ...string) string {
	b, err := json.Marshal(map[string]any{"provider": "scripted", "replies": replies})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// callTags names, for each model call the provider received, the model
// that answered it: the tag among tags whose text appears in the model's
// scripted replies ("?" for none).
func callTags(p *countingProvider, tags ...string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, c := range p.calls {
		replies := fmt.Sprint(c.Model.Options["replies"])
		tag := "?"
		for _, t := range tags {
			if strings.Contains(replies, t) {
				tag = t
				break
			}
		}
		out = append(out, tag)
	}
	return strings.Join(out, " ")
}

// 0021-D1-02: chat and parse models come from the branch's defaults unless
// the call overrides them — for both models and both verbs that use them:
// the branch's own parse_model is the default of a reformat round (not its
// chat_model), the chat model is the parse model only when the branch has
// none, and a request's chat_model and parse_model each override the
// branch's.
func TestBullet_0021_D1_02_branch_models_are_the_defaults(t *testing.T) {
	// Chat models answer no JSON (so communicate needs a reformat round);
	// parse models answer the integer that names them. Each has two
	// replies: a reformat call is the first model call of a parse and the
	// second of a communicate.
	var (
		branchChat   = scriptedModel("branch-chat: no JSON here", "branch-chat: no JSON here")
		requestChat  = scriptedModel("request-chat: no JSON here", "request-chat: no JSON here")
		branchParse  = scriptedModel(`branch-parse {"answer": 2}`, `branch-parse {"answer": 2}`)
		requestParse = scriptedModel(`request-parse {"answer": 3}`, `request-parse {"answer": 3}`)
		// The only model of a branch without a parse model: no JSON for
		// communicate's first call, an answer for its reformat round.
		onlyChat      = scriptedModel("only-chat: no JSON here", `only-chat {"answer": 1}`)
		onlyChatParse = scriptedModel(`only-chat {"answer": 1}`)
	)
	tags := []string{"branch-chat", "request-chat", "branch-parse", "request-parse", "only-chat"}
	tests := []struct {
		name       string
		branch     string // branch.create data
		verb, data string
		wantValue  string
		wantCalls  string // the model of each call, in order
	}{
		{
			name:   "parse: the branch's parse_model, not its chat_model",
			branch: `{"branch_id":"b","chat_model":` + branchChat + `,"parse_model":` + branchParse + `}`,
			verb:   "parse", data: parseReq("x", integerAnswer, `,"retry_initial_delay":0`),
			wantValue: `{"answer":2}`, wantCalls: "branch-parse",
		},
		{
			name:   "parse: the request's parse_model over the branch's",
			branch: `{"branch_id":"b","chat_model":` + branchChat + `,"parse_model":` + branchParse + `}`,
			verb:   "parse", data: parseReq("x", integerAnswer, `,"retry_initial_delay":0,"parse_model":`+requestParse),
			wantValue: `{"answer":3}`, wantCalls: "request-parse",
		},
		{
			name:   "parse: the branch's chat_model when it has no parse_model",
			branch: `{"branch_id":"b","chat_model":` + onlyChatParse + `}`,
			verb:   "parse", data: parseReq("x", integerAnswer, `,"retry_initial_delay":0`),
			wantValue: `{"answer":1}`, wantCalls: "only-chat",
		},
		{
			name:   "communicate: the branch's chat_model, then its parse_model",
			branch: `{"branch_id":"b","chat_model":` + branchChat + `,"parse_model":` + branchParse + `}`,
			verb:   "communicate", data: `{"instruction":"q","response_format":` + integerAnswer + `}`,
			wantValue: `{"answer":2}`, wantCalls: "branch-chat branch-parse",
		},
		{
			name:   "communicate: the request's chat_model, the branch's parse_model",
			branch: `{"branch_id":"b","chat_model":` + branchChat + `,"parse_model":` + branchParse + `}`,
			verb:   "communicate", data: `{"instruction":"q","chat_model":` + requestChat + `,"response_format":` + integerAnswer + `}`,
			wantValue: `{"answer":2}`, wantCalls: "request-chat branch-parse",
		},
		{
			name:   "communicate: the branch's chat_model, the request's parse_model",
			branch: `{"branch_id":"b","chat_model":` + branchChat + `,"parse_model":` + branchParse + `}`,
			verb:   "communicate", data: `{"instruction":"q","parse_model":` + requestParse + `,"response_format":` + integerAnswer + `}`,
			wantValue: `{"answer":3}`, wantCalls: "branch-chat request-parse",
		},
		{
			name:   "communicate: both overridden",
			branch: `{"branch_id":"b","chat_model":` + branchChat + `,"parse_model":` + branchParse + `}`,
			verb:   "communicate", data: `{"instruction":"q","chat_model":` + requestChat + `,"parse_model":` + requestParse + `,"response_format":` + integerAnswer + `}`,
			wantValue: `{"answer":3}`, wantCalls: "request-chat request-parse",
		},
		{
			name:   "communicate: the chat_model parses when the branch has no parse_model",
			branch: `{"branch_id":"b","chat_model":` + onlyChat + `}`,
			verb:   "communicate", data: `{"instruction":"q","response_format":` + integerAnswer + `}`,
			wantValue: `{"answer":1}`, wantCalls: "only-chat only-chat",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			b.mustDo(t, "branch.create", "", tt.branch)
			res, err := b.do(t, tt.verb, "b", tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Value) != tt.wantValue {
				t.Errorf("value %s, want %s", res.Value, tt.wantValue)
			}
			if got := callTags(b.prov, tags...); got != tt.wantCalls {
				t.Errorf("model calls by %q, want %q", got, tt.wantCalls)
			}
		})
	}
}

// failingMiddle is an operate middle that counts its calls and fails
// each with err.
type failingMiddle struct {
	mu    sync.Mutex
	calls int
	err   error
}

func (m *failingMiddle) Exchange(context.Context, ops.MiddleInput) (*ops.MiddleResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	return nil, m.err
}

func (m *failingMiddle) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// 0022-D3-03: the coordinator makes a single adapter call per operation,
// with no retry loop of its own — also when the call fails, whether
// temporarily (the worker's redelivery, not operate, tries again) or for
// good, and when its result fails validation.
func TestBullet_0022_D3_03_one_middle_call_when_it_fails(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode ops.Code
	}{
		{"a temporary failure", &ops.Error{Code: ops.CodeUnavailable, Message: "store away", Temporary: true}, ops.CodeUnavailable},
		{"a provider failure", ops.Errorf(ops.CodeProvider, "the model answered 500"), ops.CodeProvider},
		{"a timeout", ops.Errorf(ops.CodeTimeout, "too slow"), ops.CodeTimeout},
		{"a plain error", errors.New("the middle broke"), ops.CodeInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failing := &failingMiddle{err: tt.err}
			o := newOperateBundleWith(t, func(cfg *ops.Config) {
				if err := cfg.Middles.Register("failing", failing); err != nil {
					t.Fatal(err)
				}
			})
			o.branchWith(t, "b", "add")
			_, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"failing","actions":true,"response_format":{"type":"object"}}`)
			if code(err) != tt.wantCode {
				t.Fatalf("err = %v, want code %s", err, tt.wantCode)
			}
			if n := failing.count(); n != 1 {
				t.Fatalf("%d middle calls, want 1", n)
			}
			if o.prov.count() != 0 {
				t.Fatalf("%d model calls besides the middle's", o.prov.count())
			}
		})
	}
	t.Run("a result that fails validation", func(t *testing.T) {
		o := newOperateBundle(t)
		o.fixed.value = `{"n":"not an integer"}`
		o.branchWith(t, "b", "add")
		_, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"fixed","handle_validation":"raise","response_format":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}`)
		if code(err) != ops.CodeSchemaRejected {
			t.Fatalf("err = %v, want %s", err, ops.CodeSchemaRejected)
		}
		if n := len(o.fixed.ins); n != 1 {
			t.Fatalf("%d middle calls, want 1", n)
		}
	})
}

// 0024-D1-06: the default budget of 3 bounds the model exchanges of one
// LNDL adapter call, whatever the rounds do: a round that runs tools and
// a round that fails to parse each spend one exchange, so a request with
// no round_budget whose rounds never commit a valid OUT ends after exactly
// three model calls, exhausted (a fourth reply that would succeed is never
// asked for), having run the tools of its rounds once each.
func TestBullet_0024_D1_06_default_budget_of_three_exhausted(t *testing.T) {
	o := newOperateBundle(t)
	lndlBranch(t, o, "b", []string{
		lndlBlock("<lact s>add(x=1, y=2)</lact>"),                                 // continue, one tool call
		lndlBlock("<lvar a>unclosed"),                                             // retry: a parse error
		lndlBlock("<lact u>upper(s=\"a\")</lact>\n<lact v>upper(s=\"b\")</lact>"), // continue, two tool calls
		lndlBlock(`OUT{total: 1, shout: "too late"}`),                             // never reached
	}, "add", "upper")
	_, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","actions":true,"response_format":`+sumFormat+`}`)
	if code(err) != ops.CodeParse || !errors.Is(err, ops.ErrLNDLExhausted) || !strings.Contains(err.Error(), "(round_budget 3)") {
		t.Fatalf("err = %v, want parse_failed matching ErrLNDLExhausted with round_budget 3", err)
	}
	if n := o.prov.count(); n != 3 {
		t.Fatalf("%d model calls, want 3", n)
	}
	if n := len(o.rounds("op1")); n != 3 {
		t.Fatalf("%d round signals, want 3", n)
	}
	tools := map[string]int{
		"round 1, add":      o.tools.Calls(ops.ToolCallKey("op1/middle/round1/act", 0)),
		"round 3, upper #1": o.tools.Calls(ops.ToolCallKey("op1/middle/round3/act", 0)),
		"round 3, upper #2": o.tools.Calls(ops.ToolCallKey("op1/middle/round3/act", 1)),
	}
	for call, n := range tools {
		if n != 1 {
			t.Errorf("%s ran %d times, want once", call, n)
		}
	}
}
