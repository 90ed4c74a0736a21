package ops_test

// The chat, chat_and_record and communicate bullets of ADR-0021 D1 and D3
// (and chat_and_record's part of D4) at the engine, with the scripted
// provider.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

// history returns every event of a branch in the bundle's store.
func (b *bundle) history(t *testing.T, branch string) []history.Event {
	t.Helper()
	evs, err := b.store.History(context.Background(), branch, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// nonSystem returns the kinds and texts (an instruction's instruction) of
// the messages that are not the system message.
func nonSystem(ms []history.Message) []string {
	var out []string
	for _, m := range ms {
		switch m.Kind {
		case history.KindSystem:
		case history.KindInstruction:
			out = append(out, fmt.Sprintf("%s:%v", m.Kind, m.Content["instruction"]))
		default:
			out = append(out, fmt.Sprintf("%s:%s", m.Kind, m.Text()))
		}
	}
	return out
}

// userMessages counts the user messages of a model call.
func userMessages(call ops.Call) int {
	n := 0
	for _, m := range call.Messages.All() {
		if m.Role == history.RoleUser {
			n++
		}
	}
	return n
}

// 0021-D3-01: chat, chat_and_record and communicate each build one
// instruction and call the model once; the provider's usage comes back with
// the result.
func TestExchange_0021_D3_01_one_instruction_one_call(t *testing.T) {
	for _, verb := range []string{"chat", "chat_and_record", "communicate"} {
		t.Run(verb, func(t *testing.T) {
			b := setup(t)
			b.mustDo(t, "branch.create", "", `{"branch_id":"main","system":"SYS","chat_model":{"provider":"scripted","replies":[
				{"text":"done","usage":{"input_tokens":7,"output_tokens":2,"total_tokens":9}}]}}`)
			res := b.mustDo(t, verb, "main", `{"instruction":"sum","guidance":"be exact","context":["1","2"]}`)
			if n := b.prov.count(); n != 1 {
				t.Fatalf("%d model calls, want 1", n)
			}
			call := b.prov.last()
			if n := userMessages(call); n != 1 {
				t.Fatalf("the call carries %d user messages, want one instruction: %q", n, call.Messages)
			}
			last := call.Messages.Slice()[len(call.Messages.Slice())-1]
			for _, part := range []string{"be exact", "sum", "1", "2"} {
				if !strings.Contains(last.Content, part) {
					t.Errorf("the instruction %q lacks %q", last.Content, part)
				}
			}
			if string(res.Value) != `"done"` {
				t.Errorf("value %s, want \"done\"", res.Value)
			}
			if res.Usage == nil || res.Usage.InputTokens != 7 || res.Usage.OutputTokens != 2 || res.Usage.TotalTokens != 9 {
				t.Errorf("usage %+v, want the provider's 7/2/9", res.Usage)
			}
		})
	}
}

// 0021-D3-02: chat leaves the branch unchanged; a failed model call is
// answered provider_error, and no empty reply is used as an answer.
func TestChat_0021_D3_02_records_nothing_and_fails_as_provider_error(t *testing.T) {
	tests := []struct {
		name string
		prov providerFunc
		want string   // the value, when the call succeeds
		code ops.Code // the code, when it fails
	}{
		{name: "a reply", prov: func(context.Context, ops.Call) (*ops.Completion, error) {
			return &ops.Completion{Text: "hello"}, nil
		}, want: `"hello"`},
		{name: "a failed call", prov: func(context.Context, ops.Call) (*ops.Completion, error) {
			return nil, errors.New("connection reset")
		}, code: ops.CodeProvider},
		{name: "a failed call with an empty completion", prov: func(context.Context, ops.Call) (*ops.Completion, error) {
			return &ops.Completion{}, &ops.ProviderError{Provider: "p", Message: "overloaded"}
		}, code: ops.CodeProvider},
		{name: "no completion", prov: func(context.Context, ops.Call) (*ops.Completion, error) {
			return nil, nil
		}, code: ops.CodeProvider},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := opstest.NewMemoryStore()
			eng, err := ops.NewEngine(ops.Config{Store: store, Providers: ops.NewProviders(map[string]ops.Provider{"p": tt.prov})})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := eng.Do(ctx, ops.Request{ID: "c", Verb: "branch.create", Data: json.RawMessage(`{"branch_id":"b","system":"S","chat_model":"p:m"}`)}); err != nil {
				t.Fatal(err)
			}
			before, err := store.History(ctx, "b", 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			res, err := eng.Do(ctx, ops.Request{ID: "r", Verb: "chat", BranchID: "b", Data: json.RawMessage(`{"instruction":"q"}`), LastAttempt: true})
			if tt.code != "" {
				if code(err) != tt.code || res != nil {
					t.Fatalf("chat = %v, %v; want no result and %s", res, err, tt.code)
				}
			} else if err != nil || string(res.Value) != tt.want {
				t.Fatalf("chat = %v, %v; want %s", res, err, tt.want)
			}
			after, err := store.History(ctx, "b", 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(after) != len(before) {
				t.Fatalf("chat appended %d events to the branch", len(after)-len(before))
			}
			br, err := store.Load(ctx, "b")
			if err != nil {
				t.Fatal(err)
			}
			if got := nonSystem(br.Messages); len(got) != 0 || br.ModelCalls != 0 {
				t.Fatalf("chat recorded %q (%d model calls)", got, br.ModelCalls)
			}
		})
	}
}

// 0021-D3-03: communicate with clear_messages empties the history before
// the call (the model sees none of it), and after a successful call the
// branch records the instruction, then the response.
func TestCommunicate_0021_D3_03_clear_then_instruction_then_response(t *testing.T) {
	tests := []struct {
		name        string
		data        string
		wantHistory []string // the messages after the request, system left out
		wantPrompt  int      // messages the model was sent, system included
	}{
		{name: "appends after the history", data: `{"instruction":"c"}`,
			wantHistory: []string{"instruction:a", "assistant_response:a", "instruction:b", "assistant_response:b", "instruction:c", "assistant_response:c"}, wantPrompt: 6},
		{name: "clear_messages empties it first", data: `{"instruction":"c","clear_messages":true}`,
			wantHistory: []string{"instruction:c", "assistant_response:c"}, wantPrompt: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			b.mustDo(t, "branch.create", "", `{"branch_id":"main","system":"SYS","chat_model":"scripted:echo"}`)
			b.mustDo(t, "communicate", "main", `{"instruction":"a"}`)
			b.mustDo(t, "communicate", "main", `{"instruction":"b"}`)
			res, err := b.doID(t, "last", "communicate", "main", tt.data)
			if err != nil || string(res.Value) != `"c"` {
				t.Fatalf("communicate = %v, %v", res, err)
			}
			if got := len(b.prov.last().Messages.Slice()); got != tt.wantPrompt {
				t.Errorf("the model was sent %d messages, want %d: %q", got, tt.wantPrompt, b.prov.last().Messages)
			}
			br := b.branch(t, "main")
			if br.Messages[0].Kind != history.KindSystem {
				t.Errorf("the system message is gone: %v", br.Messages[0])
			}
			if got := nonSystem(br.Messages); !slices.Equal(got, tt.wantHistory) {
				t.Errorf("history %q\nwant    %q", got, tt.wantHistory)
			}
			var added []string
			b.signals.mu.Lock()
			for _, s := range b.signals.signals {
				if s.RequestID == "last" && s.Type == ops.SignalMessageAdded {
					added = append(added, string(s.Message.Kind))
				}
			}
			b.signals.mu.Unlock()
			if want := []string{"instruction", "assistant_response"}; !slices.Equal(added, want) {
				t.Errorf("message.added for %v, want %v", added, want)
			}
		})
	}
}

// appendFailingStore is a store whose appends of recorded messages fail.
type appendFailingStore struct{ *opstest.MemoryStore }

func (s appendFailingStore) Append(ctx context.Context, branchID string, ev history.Event) (*history.Branch, error) {
	if ev.Type == history.EventMessages {
		return nil, errors.New("disk full")
	}
	return s.MemoryStore.Append(ctx, branchID, ev)
}

// 0021-D3-08, 0021-D3-09, 0021-D3-10, 0021-D3-11, 0021-D4-02:
// chat_and_record calls the model once and records the instruction, then
// the response, in one event; its value is the reply text only, whatever
// the request asks; a failed call (or a failed append) records nothing; it
// emits one message.added per recorded message and no run lifecycle.
func TestChatAndRecord_0021_D3_08_to_11(t *testing.T) {
	tests := []struct {
		name        string
		reply       string // the scripted reply
		data        string
		failAppend  bool
		wantValue   string   // the value, or "" for a failure
		wantCode    ops.Code // the failure's code
		wantSignals string
	}{
		{name: "0021-D3-08 records instruction then response", reply: `"the answer"`, data: `{"instruction":"q"}`,
			wantValue: `"the answer"`, wantSignals: "message.added message.added"},
		// The original's flag for the message tuple is forced; here a caller
		// asking for it still gets the text.
		{name: "0021-D3-09 the value is the text only", reply: `"the answer"`, data: `{"instruction":"q","return_ins_res_message":true}`,
			wantValue: `"the answer"`, wantSignals: "message.added message.added"},
		{name: "0021-D3-10 a failed model call records nothing", reply: `{"error":"boom"}`, data: `{"instruction":"q"}`,
			wantCode: ops.CodeProvider, wantSignals: ""},
		{name: "0021-D3-10 a failed append records neither message", reply: `"the answer"`, data: `{"instruction":"q"}`, failAppend: true,
			wantCode: ops.CodeUnavailable, wantSignals: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := opstest.NewMemoryStore()
			var store history.Store = mem
			if tt.failAppend {
				store = appendFailingStore{mem}
			}
			prov := &countingProvider{}
			signals := &signalRecorder{}
			eng, err := ops.NewEngine(ops.Config{Store: store, Signals: signals,
				Providers: ops.NewProviders(map[string]ops.Provider{"scripted": prov})})
			if err != nil {
				t.Fatal(err)
			}
			b := &bundle{eng: eng, store: mem, prov: prov, signals: signals}
			b.mustDo(t, "branch.create", "", `{"branch_id":"main","system":"SYS","chat_model":{"provider":"scripted","replies":[`+tt.reply+`]}}`)
			before := len(b.history(t, "main"))
			res, err := b.doID(t, "rec", "chat_and_record", "main", tt.data)
			if n := prov.count(); n != 1 {
				t.Errorf("%d model calls, want 1", n)
			}
			got := strings.Join(signals.types("rec"), " ")
			if got != tt.wantSignals {
				t.Errorf("signals %q, want %q (no run lifecycle)", got, tt.wantSignals)
			}
			evs := b.history(t, "main")[before:]
			if tt.wantCode != "" {
				if code(err) != tt.wantCode || res != nil {
					t.Fatalf("chat_and_record = %v, %v; want %s", res, err, tt.wantCode)
				}
				if len(evs) != 0 || len(nonSystem(b.branch(t, "main").Messages)) != 0 {
					t.Fatalf("a failed chat_and_record recorded %d events: %+v", len(evs), evs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Value) != tt.wantValue {
				t.Fatalf("value %s, want %s", res.Value, tt.wantValue)
			}
			var text string
			if err := json.Unmarshal(res.Value, &text); err != nil {
				t.Fatalf("the value %s is not the reply text: %v", res.Value, err)
			}
			if len(evs) != 1 || evs[0].Type != history.EventMessages {
				t.Fatalf("recorded in %d events, want one messages event", len(evs))
			}
			want := []string{"instruction:q", "assistant_response:the answer"}
			if got := nonSystem(evs[0].Messages); !slices.Equal(got, want) {
				t.Fatalf("the event records %q, want %q", got, want)
			}
			if got := nonSystem(b.branch(t, "main").Messages); !slices.Equal(got, want) {
				t.Fatalf("the branch holds %q, want %q", got, want)
			}
		})
	}
}

// 0021-D1-04: each verb has one result shape, declared by its result schema
// (bundle.do validates every result against it); no request flag changes
// it: chat and chat_and_record answer the reply text whatever they are
// asked.
func TestEngine_0021_D1_04_one_result_shape_per_verb(t *testing.T) {
	const format = `{"type":"object","properties":{"n":{"type":"integer"}}}`
	tests := []struct {
		verb, data string
	}{
		{"chat", `{"instruction":"{\"n\":1}"}`},
		{"chat", `{"instruction":"{\"n\":1}","return_ins_res_message":true}`},
		{"chat", `{"instruction":"{\"n\":1}","response_format":` + format + `}`},
		{"chat", `{"instruction":"{\"n\":1}","clear_messages":true}`},
		{"chat_and_record", `{"instruction":"{\"n\":1}"}`},
		{"chat_and_record", `{"instruction":"{\"n\":1}","return_ins_res_message":true}`},
		{"chat_and_record", `{"instruction":"{\"n\":1}","response_format":` + format + `}`},
		{"chat_and_record", `{"instruction":"{\"n\":1}","clear_messages":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.verb+" "+tt.data, func(t *testing.T) {
			b := setup(t)
			b.mustDo(t, "branch.create", "", `{"branch_id":"main","chat_model":"scripted:echo"}`)
			res := b.mustDo(t, tt.verb, "main", tt.data)
			var text string
			if err := json.Unmarshal(res.Value, &text); err != nil || text != `{"n":1}` {
				t.Fatalf("value %s, want the reply text as a string", res.Value)
			}
		})
	}
}
