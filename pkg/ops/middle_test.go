package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
	"github.com/lionbus/lionbus/pkg/wire"
)

// textMiddle answers the instruction upper-cased, without touching a branch.
var textMiddle = ops.MiddleFunc(func(_ context.Context, in ops.MiddleInput) (*ops.MiddleResult, error) {
	s, _ := in.Instruction.(string)
	return &ops.MiddleResult{Value: strings.ToUpper(s)}, nil
})

// middleValue is a middle result answering raw, a JSON value, decoded.
func middleValue(raw string) (*ops.MiddleResult, error) {
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return nil, err
	}
	return &ops.MiddleResult{Value: v}, nil
}

// valueJSON is the JSON of a middle result's value, as the engine encodes it.
func valueJSON(res *ops.MiddleResult) string {
	b, err := json.Marshal(res.Value)
	if err != nil {
		return "unencodable: " + err.Error()
	}
	return string(b)
}

func TestMiddles_Register(t *testing.T) {
	t.Parallel()
	other := ops.MiddleFunc(func(context.Context, ops.MiddleInput) (*ops.MiddleResult, error) {
		return &ops.MiddleResult{Value: "other"}, nil
	})
	tests := []struct {
		name    string
		reg     string
		m       ops.Middle
		opts    []ops.RegisterOption
		wantErr error
		want    string // the value the entry answers afterwards
	}{
		{name: "new name", reg: "fresh", m: textMiddle, want: `"HI"`},
		{name: "duplicate refused", reg: "taken", m: other, wantErr: ops.ErrMiddleExists},
		{name: "duplicate with update", reg: "taken", m: other, opts: []ops.RegisterOption{ops.WithUpdate()}, want: `"other"`},
		// 0021-D5-03 (b): the built-in adapters are the engine's; a name
		// cannot be taken from them.
		{name: "communicate is built in", reg: ops.MiddleCommunicate, m: other, opts: []ops.RegisterOption{ops.WithUpdate()}, wantErr: ops.ErrMiddleExists},
		{name: "lndl is built in", reg: ops.MiddleLNDL, m: other, wantErr: ops.ErrMiddleExists},
		{name: "run_and_collect is built in", reg: ops.MiddleRunAndCollect, m: other, wantErr: ops.ErrMiddleExists},
		{name: "nil middle", reg: "x", m: nil, wantErr: ops.ErrInvalidMiddle},
		{name: "bad name", reg: "a.b", m: other, wantErr: ops.ErrInvalidMiddle},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg := ops.NewMiddles()
			if err := reg.Register("taken", textMiddle); err != nil {
				t.Fatal(err)
			}
			err := reg.Register(tt.reg, tt.m, tt.opts...)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Register(%q) = %v, want %v", tt.reg, err, tt.wantErr)
				}
				if fmt.Sprint(reg.Names()) != "[taken]" {
					t.Fatalf("a refused registration changed the registry: %v", reg.Names())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m, err := reg.Lookup(tt.reg)
			if err != nil {
				t.Fatal(err)
			}
			res, err := m.Exchange(context.Background(), middleIn(ops.MiddleInput{}, func(c *wire.CommunicateRequest) { c.Instruction = "hi" }))
			if err != nil || valueJSON(res) != tt.want {
				t.Fatalf("Exchange = %v, %v; want %s", res, err, tt.want)
			}
		})
	}
	var zero ops.Middles
	if _, err := zero.Lookup("x"); !errors.Is(err, ops.ErrUnknownMiddle) {
		t.Fatalf("zero value Lookup: %v", err)
	}
}

func TestEngine_Middle_selection(t *testing.T) {
	t.Parallel()
	reg := ops.NewMiddles()
	if err := reg.Register("upper", textMiddle); err != nil {
		t.Fatal(err)
	}
	eng, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore(), Middles: reg})
	if err != nil {
		t.Fatal(err)
	}
	if eng.Middles() != reg {
		t.Fatal("the engine does not use the configured registry")
	}
	tests := []struct {
		name     string
		middle   string
		wantCode ops.Code
	}{
		{"built-in communicate", ops.MiddleCommunicate, ""},
		{"registered", "upper", ""},
		{"unknown", "nope", ops.CodeInvalidRequest},
		{"built-in lndl", ops.MiddleLNDL, ""},
		{"built-in run_and_collect", ops.MiddleRunAndCollect, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := eng.Middle(tt.middle)
			if tt.wantCode != "" {
				if code(err) != tt.wantCode || !errors.Is(err, ops.ErrUnknownMiddle) || m != nil {
					t.Fatalf("Middle(%q) = %v, %v; want %s wrapping ErrUnknownMiddle", tt.middle, m, err, tt.wantCode)
				}
				return
			}
			if err != nil || m == nil {
				t.Fatalf("Middle(%q) = %v, %v", tt.middle, m, err)
			}
		})
	}
}

// The communicate middle: one recorded exchange, owned by the middle,
// without a lifecycle of its own.
func TestCommunicateMiddle(t *testing.T) {
	t.Parallel()
	const schema = `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`
	const fenced = "The answer:\n```json\n{\"n\": 3}\n```"
	rawFenced, _ := json.Marshal(fenced)
	script := func(replies ...string) *history.ModelRef {
		b, _ := json.Marshal(map[string]any{"provider": "scripted", "replies": replies})
		var m history.ModelRef
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return &m
	}
	tests := []struct {
		name      string
		in        ops.MiddleInput
		seed      bool // record an exchange on the branch first
		wantValue string
		wantCode  ops.Code
		wantMsgs  int // messages on the branch afterwards
		check     func(t *testing.T, b *bundle, in ops.MiddleInput)
	}{
		{
			name: "records the exchange", in: middleIn(ops.MiddleInput{}, func(c *wire.CommunicateRequest) { c.Instruction = "hello" }),
			wantValue: `"hello"`, wantMsgs: 2,
		},
		{
			name: "parses into the response format",
			in: middleIn(ops.MiddleInput{}, func(c *wire.CommunicateRequest) {
				c.Instruction, c.ChatModel, c.ResponseFormat = "count", script(fenced), json.RawMessage(schema)
			}),
			wantValue: `{"n":3}`, wantMsgs: 2,
		},
		// 0021-D5-04, 0021-D3-04: skip_validation reaches the adapter, which
		// returns the raw text, still recorded.
		{
			name: "skip validation returns the raw text",
			in: middleIn(ops.MiddleInput{}, func(c *wire.CommunicateRequest) {
				c.Instruction, c.ChatModel, c.ResponseFormat, c.SkipValidation = "count", script(fenced), json.RawMessage(schema), true
			}),
			wantValue: string(rawFenced), wantMsgs: 2,
		},
		// 0021-D5-04: clear_messages is done by the adapter, before it
		// exchanges.
		{
			name: "clear messages", seed: true, in: middleIn(ops.MiddleInput{}, func(c *wire.CommunicateRequest) { c.Instruction, c.ClearMessages = "fresh", true }),
			wantValue: `"fresh"`, wantMsgs: 2,
		},
		{
			name: "keeps history", seed: true, in: middleIn(ops.MiddleInput{}, func(c *wire.CommunicateRequest) { c.Instruction = "more" }),
			wantValue: `"more"`, wantMsgs: 4,
		},
		{
			name: "tool schemas reach the instruction and the prompt",
			in: middleIn(ops.MiddleInput{ToolSchemas: []any{
				map[string]any{"name": "add", "parameters": map[string]any{"type": "object"}},
			}}, func(c *wire.CommunicateRequest) { c.Instruction = "use a tool" }),
			wantValue: `"use a tool"`, wantMsgs: 2,
			check: func(t *testing.T, b *bundle, _ ops.MiddleInput) {
				msgs := b.branch(t, "b").Messages
				if _, ok := msgs[0].Content[history.KeyToolSchemas]; !ok {
					t.Errorf("the instruction holds no tool schemas: %v", msgs[0].Content)
				}
				prompt := b.prov.last().Messages.Slice()
				if !strings.Contains(prompt[len(prompt)-1].Content, "Tools:") {
					t.Errorf("the prompt has no Tools section: %q", prompt[len(prompt)-1].Content)
				}
			},
		},
		// 0021-D5-05: failures are errors, not values; nothing is recorded.
		{
			name: "provider failure", in: middleIn(ops.MiddleInput{}, func(c *wire.CommunicateRequest) { c.Instruction, c.ChatModel = "x", script() }),
			wantCode: ops.CodeProvider, wantMsgs: 0,
		},
		{name: "bad response format", in: middleIn(ops.MiddleInput{}, func(c *wire.CommunicateRequest) { c.Instruction, c.ResponseFormat = "x", json.RawMessage(`[1]`) }), wantCode: ops.CodeInvalidRequest},
		{name: "no instruction", in: ops.MiddleInput{}, wantCode: ops.CodeInvalidRequest},
		{name: "no request id", in: middleIn(ops.MiddleInput{RequestID: "-"}, func(c *wire.CommunicateRequest) { c.Instruction = "x" }), wantCode: ops.CodeInvalidRequest},
		{name: "no such branch", in: middleIn(ops.MiddleInput{BranchID: "missing"}, func(c *wire.CommunicateRequest) { c.Instruction = "x" }), wantCode: ops.CodeBranchNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.mustDo(t, "branch.create", "", `{"branch_id":"b","chat_model":"scripted:echo"}`)
			if tt.seed {
				b.mustDo(t, "communicate", "b", `{"instruction":"earlier"}`)
			}
			in := tt.in
			switch in.RequestID {
			case "":
				in.RequestID = "op-1/middle"
			case "-":
				in.RequestID = ""
			}
			if in.BranchID == "" {
				in.BranchID = "b"
			}
			in.Verb = "operate"
			m, err := b.eng.Middle(ops.MiddleCommunicate)
			if err != nil {
				t.Fatal(err)
			}
			calls := b.prov.count()
			res, err := m.Exchange(context.Background(), in)
			if tt.wantCode != "" {
				if code(err) != tt.wantCode {
					t.Fatalf("err = %v, want code %s", err, tt.wantCode)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if valueJSON(res) != tt.wantValue {
				t.Fatalf("value = %s, want %s", valueJSON(res), tt.wantValue)
			}
			if in.BranchID == "b" {
				if n := len(b.branch(t, "b").Messages); n != tt.wantMsgs {
					t.Fatalf("%d messages on the branch, want %d", n, tt.wantMsgs)
				}
			}
			// 0021-D4-01: no start or terminal signal from the middle; the
			// messages it records are signalled under the caller's verb.
			types := b.signals.types(in.RequestID)
			for _, s := range types {
				if s != string(ops.SignalMessageAdded) {
					t.Fatalf("the middle emitted %v; only message.added is expected", types)
				}
			}
			if tt.wantCode == "" && len(types) != 2 {
				t.Fatalf("signals %v, want two message.added", types)
			}
			b.signals.mu.Lock()
			for _, s := range b.signals.signals {
				if s.RequestID == in.RequestID && s.Verb != "operate" {
					t.Errorf("signal %s is labelled %q, want the caller's verb", s.Type, s.Verb)
				}
			}
			b.signals.mu.Unlock()
			if tt.check != nil {
				tt.check(t, b, in)
			}
			if tt.wantCode != "" {
				return
			}
			// Redelivered, the exchange is answered from history without a
			// second model call.
			made := b.prov.count() - calls
			again, err := m.Exchange(context.Background(), in)
			if err != nil || !again.Replayed || valueJSON(again) != tt.wantValue || b.prov.count()-calls != made {
				t.Fatalf("redelivery: %+v, %v; model calls %d -> %d", again, err, made, b.prov.count()-calls)
			}
		})
	}
}

// A request selects its middle by name: the engine's communicate adapter,
// or a registered one such as this MiddleFunc.
func ExampleMiddle() {
	providers := ops.NewProviders(map[string]ops.Provider{scripted.Name: scripted.New()})
	middles := ops.NewMiddles()
	if err := middles.Register("upper", ops.MiddleFunc(func(_ context.Context, in ops.MiddleInput) (*ops.MiddleResult, error) {
		return &ops.MiddleResult{Value: strings.ToUpper(fmt.Sprint(in.Instruction))}, nil
	})); err != nil {
		panic(err)
	}
	eng, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore(), Providers: providers, Middles: middles})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := eng.Do(ctx, ops.Request{ID: "c1", Verb: "branch.create",
		Data: json.RawMessage(`{"branch_id":"demo","chat_model":"scripted:echo"}`)}); err != nil {
		panic(err)
	}
	for _, name := range []string{ops.MiddleCommunicate, "upper", "missing"} {
		m, err := eng.Middle(name)
		if err != nil {
			fmt.Println(errors.Is(err, ops.ErrUnknownMiddle), err)
			continue
		}
		res, err := m.Exchange(ctx, middleIn(ops.MiddleInput{RequestID: "op-1/" + name, BranchID: "demo", Verb: "operate"}, func(c *wire.CommunicateRequest) { c.Instruction = "one exchange" }))
		if err != nil {
			panic(err)
		}
		v, _ := json.Marshal(res.Value)
		fmt.Println(name, string(v))
	}
	// Output:
	// communicate "one exchange"
	// upper "ONE EXCHANGE"
	// true invalid_request: unknown middle "missing" (built-in: communicate, lndl, run_and_collect; registered: [upper])
}

// middleIn is in with its exchange (the communicate request it carries)
// set by ex.
func middleIn(in ops.MiddleInput, ex func(c *wire.CommunicateRequest)) ops.MiddleInput {
	ex(&in.CommunicateRequest)
	return in
}
