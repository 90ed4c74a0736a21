package ops

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

// planOf decodes data and plans it on a branch with a chat model, a parse
// model and the tools a and b.
func planOf(t *testing.T, data string) (*operatePlan, error) {
	t.Helper()
	var d operateData
	if err := decodeData(json.RawMessage(data), &d); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	b := &history.Branch{ID: "b"}
	b.Settings.ChatModel = &history.ModelRef{Provider: "chat"}
	b.Settings.ParseModel = &history.ModelRef{Provider: "branch-parse"}
	b.Settings.Tools = []string{"a", "b"}
	return d.plan(b)
}

// The preparer's bullets of ADR-0022 D1.
func TestOperatePlan_0022_D1(t *testing.T) {
	tests := []struct {
		name  string
		data  string
		code  Code   // expected failure
		msg   string // in the failure's message
		check func(t *testing.T, p *operatePlan)
	}{
		{
			// 0022-D1-01
			name: "0022-D1-01 parse model defaults to the chosen chat model", data: `{"instruction":"x","chat_model":{"provider":"mine"}}`,
			check: func(t *testing.T, p *operatePlan) {
				if p.chat.ChatModel.Provider != "mine" || p.chat.ParseModel.Provider != "mine" {
					t.Fatalf("chat %v parse %v, want mine and mine", p.chat.ChatModel, p.chat.ParseModel)
				}
			},
		},
		{
			name: "0022-D1-01 branch chat model by default", data: `{"instruction":"x"}`,
			check: func(t *testing.T, p *operatePlan) {
				if p.chat.ChatModel.Provider != "chat" || p.chat.ParseModel.Provider != "chat" {
					t.Fatalf("chat %v parse %v, want chat and chat", p.chat.ChatModel, p.chat.ParseModel)
				}
			},
		},
		{
			name: "0022-D1-01 explicit parse model", data: `{"instruction":"x","parse_model":{"provider":"p"}}`,
			check: func(t *testing.T, p *operatePlan) {
				if p.chat.ParseModel.Provider != "p" {
					t.Fatalf("parse %v, want p", p.chat.ParseModel)
				}
			},
		},
		{
			name: "0022-D1-02 instruct object", data: `{"instruct":{"instruction":"i","guidance":"g","context":[1]}}`,
			check: func(t *testing.T, p *operatePlan) {
				if p.chat.Instruction != "i" || p.chat.Guidance != "g" {
					t.Fatalf("instruction %v guidance %v", p.chat.Instruction, p.chat.Guidance)
				}
			},
		},
		{
			name: "0022-D1-02 loose instruction", data: `{"instruction":"i","context":"c"}`,
			check: func(t *testing.T, p *operatePlan) {
				if p.chat.Instruction != "i" || p.chat.Context != "c" {
					t.Fatalf("instruction %v context %v", p.chat.Instruction, p.chat.Context)
				}
			},
		},
		{name: "0022-D1-02 instruct and instruction exclude each other", data: `{"instruct":{"instruction":"i"},"instruction":"j"}`, code: CodeInvalidRequest},
		{name: "0022-D1-02 an instruction is required", data: `{"reason":true}`, code: CodeInvalidRequest},
		{
			name: "0022-D1-03 explicit flags are written into the instruction", data: `{"instruct":{"instruction":"i"},"reason":true,"actions":true,"action_strategy":"sequential"}`,
			check: func(t *testing.T, p *operatePlan) {
				if !p.reason || !p.actions || p.action == nil || !p.action.sequential {
					t.Fatalf("reason %v actions %v action %+v", p.reason, p.actions, p.action)
				}
			},
		},
		{
			name: "0022-D1-06 response_format is compiled for the chat stage", data: `{"instruction":"i","response_format":{"type":"object"}}`,
			check: func(t *testing.T, p *operatePlan) {
				if p.format == nil || p.validator == nil {
					t.Fatal("no response format")
				}
			},
		},
		{name: "0022-D1-06 a bad response_format", data: `{"instruction":"i","response_format":{"type":7}}`, code: CodeInvalidRequest},
		{
			name: "0022-D1-07 actions need invoke_actions", data: `{"instruction":"i","actions":true,"invoke_actions":false}`,
			check: func(t *testing.T, p *operatePlan) {
				if p.action != nil || !p.actions {
					t.Fatalf("action %+v actions %v", p.action, p.actions)
				}
			},
		},
		{
			name: "0022-D1-07 no actions, no action stage", data: `{"instruction":"i"}`,
			check: func(t *testing.T, p *operatePlan) {
				if p.action != nil {
					t.Fatalf("action %+v", p.action)
				}
			},
		},
		{
			name: "0022-D1-07 concurrent and suppressed by default", data: `{"instruction":"i","actions":true}`,
			check: func(t *testing.T, p *operatePlan) {
				if p.action == nil || p.action.sequential || !p.action.suppress {
					t.Fatalf("action %+v", p.action)
				}
			},
		},
		{
			// 0022-D1-08 (class c): an absent action_strategy lets the
			// instruction's own strategy win.
			name: "0022-D1-08 the instruction's strategy wins when none is given", data: `{"instruct":{"instruction":"i","actions":true,"action_strategy":"sequential"}}`,
			check: func(t *testing.T, p *operatePlan) {
				if p.action == nil || !p.action.sequential {
					t.Fatalf("action %+v, want sequential", p.action)
				}
			},
		},
		{
			name: "0022-D1-08 an explicit strategy beats the instruction's", data: `{"instruct":{"instruction":"i","actions":true,"action_strategy":"sequential"},"actions":true,"action_strategy":"concurrent"}`,
			check: func(t *testing.T, p *operatePlan) {
				if p.action == nil || p.action.sequential {
					t.Fatalf("action %+v, want concurrent", p.action)
				}
			},
		},
		{name: "0022-D1-07 an unknown strategy", data: `{"instruction":"i","actions":true,"action_strategy":"eager"}`, code: CodeInvalidRequest},
		{name: "0022-D1-09 a selected tool must be the branch's", data: `{"instruction":"i","tools":["zz"]}`, code: CodeInvalidRequest},
		{name: "0022-D1-10 request_model is removed", data: `{"instruction":"i","request_model":{}}`, code: CodeInvalidRequest, msg: "use response_format"},
		{name: "0022-D1-10 operative_model is removed", data: `{"instruction":"i","operative_model":null}`, code: CodeInvalidRequest, msg: "use response_format"},
		{name: "0022-D1-10 imodel is removed", data: `{"instruction":"i","imodel":"x"}`, code: CodeInvalidRequest, msg: "use chat_model"},
		// 0022-D1-11 (class c): an operative is refused, never taken and
		// ignored.
		{name: "0022-D1-11 operative is refused", data: `{"instruction":"i","operative":{"name":"X"}}`, code: CodeInvalidRequest, msg: "operative"},
		{
			name: "0022-D1-12 nameless field models are left out", data: `{"instruction":"i","field_models":{"":{"type":"string"},"score":{"type":"number"}}}`,
			check: func(t *testing.T, p *operatePlan) {
				if len(p.fields) != 1 || p.fields["score"] == nil {
					t.Fatalf("fields %v", p.fields)
				}
			},
		},
		{name: "0022-D1-12 a field model must be a schema object", data: `{"instruction":"i","field_models":{"score":3}}`, code: CodeInvalidRequest},
		{name: "0022-D1-12 a field model may not take a generated name", data: `{"instruction":"i","field_models":{"reason":{}}}`, code: CodeInvalidRequest},
		{name: "bad handle_validation", data: `{"instruction":"i","handle_validation":"ignore"}`, code: CodeInvalidRequest},
		{
			name: "defaults", data: `{"instruction":"i","clear_messages":true,"skip_validation":true}`,
			check: func(t *testing.T, p *operatePlan) {
				if p.middle != MiddleCommunicate || p.handle != handleReturnValue || !p.invokeActions ||
					!p.chat.ClearMessages || !p.chat.SkipValidation || !p.skip {
					t.Fatalf("plan %+v", p)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := planOf(t, tt.data)
			if tt.code != "" {
				oe, ok := err.(*Error)
				if !ok || oe.Code != tt.code || !strings.Contains(oe.Message, tt.msg) {
					t.Fatalf("err = %v, want %s containing %q", err, tt.code, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, p)
		})
	}
}

// The generated schemas of ADR-0022 D2.
func TestOperateSchemas_0022_D2(t *testing.T) {
	props := func(s map[string]any) []string {
		var out []string
		for k := range s["properties"].(map[string]any) {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	tests := []struct {
		name          string
		data          string
		none          bool
		title         string
		request, resp string // property names, sorted
	}{
		// 0022-D2-02: nothing asked for, nothing generated.
		{name: "0022-D2-02 none", data: `{"instruction":"i"}`, none: true},
		{name: "0022-D2-02 reason only", data: `{"instruction":"i","reason":true}`, title: "Operative",
			request: "[reason]", resp: "[reason]"},
		// 0022-D2-03, 0022-D2-04, 0022-D2-05
		{name: "0022-D2-04 actions: responses only in the response schema", data: `{"instruction":"i","actions":true,"response_format":{"title":"Plan","type":"object","properties":{"steps":{"type":"array"}},"required":["steps"]}}`,
			title: "Plan", request: "[action_requests action_required steps]", resp: "[action_requests action_required action_responses steps]"},
		{name: "0022-D2-03 field models join by name", data: `{"instruction":"i","reason":true,"field_models":{"score":{"type":"number"}}}`,
			title: "Operative", request: "[reason score]", resp: "[reason score]"},
		{name: "0022-D2-04 actions without invoke_actions still shape the schemas", data: `{"instruction":"i","actions":true,"invoke_actions":false}`,
			title: "Operative", request: "[action_requests action_required]", resp: "[action_requests action_required action_responses]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := planOf(t, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			s, err := buildSchemas(p)
			if err != nil {
				t.Fatal(err)
			}
			if tt.none {
				if s != nil {
					t.Fatalf("schemas %v", s)
				}
				return
			}
			if s.request["title"] != tt.title+"Request" || s.response["title"] != tt.title+"Response" {
				t.Fatalf("titles %v %v", s.request["title"], s.response["title"])
			}
			if got := strings.Join(props(s.request), " "); "["+got+"]" != tt.request {
				t.Fatalf("request properties [%s], want %s", got, tt.request)
			}
			if got := strings.Join(props(s.response), " "); "["+got+"]" != tt.resp {
				t.Fatalf("response properties [%s], want %s", got, tt.resp)
			}
			for _, x := range []map[string]any{s.request, s.response} {
				if _, err := compileSchema(x); err != nil {
					t.Fatalf("%v does not compile: %v", x["title"], err)
				}
			}
			if r, ok := s.request["properties"].(map[string]any)[fieldReason].(map[string]any); ok {
				if !slices.Contains(r["type"].([]any), any("null")) {
					t.Fatalf("reason is not nullable: %v", r)
				}
			}
		})
	}
	// A non-object response_format cannot take generated fields.
	p, err := planOf(t, `{"instruction":"i","reason":true,"response_format":{"type":"array"}}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := buildSchemas(p); err == nil {
		t.Fatal("an array response_format took a reason field")
	}
}
