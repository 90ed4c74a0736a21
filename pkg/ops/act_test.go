package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

// act runs the calls, records each action request and response, in request
// order, in ONE history event holding the result, and then announces the
// messages.
func TestAct_records_calls_with_the_result(t *testing.T) {
	a := newActBundle(t, ops.Config{})
	a.branchWith(t, "b", "add", "upper")
	got, res, err := a.act(t, "act-1", "b", `{"action_requests":[
		{"id":"c1","function":"add","arguments":{"x":2,"y":3}},
		{"function":"upper","arguments":{"s":"hi"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"id":"c1","function":"add","arguments":{"x":2,"y":3},"output":{"sum":5}},{"function":"upper","arguments":{"s":"hi"},"output":"HI"}]`
	if s := compact(t, got); s != want {
		t.Fatalf("value %s\nwant  %s", s, want)
	}
	if res.BranchID != "b" || res.Replayed {
		t.Fatalf("result %+v", res)
	}

	ev := a.lastEvent(t, "b")
	if ev.Type != history.EventMessages || ev.RequestID != "act-1" || ev.ModelCalls != 0 {
		t.Fatalf("event %+v", ev)
	}
	if k := kinds(ev.Messages); k != "action_request action_response action_request action_response" {
		t.Fatalf("recorded %s", k)
	}
	var stored ops.Result
	if err := json.Unmarshal(ev.Result, &stored); err != nil || string(stored.Value) != want {
		t.Fatalf("recorded result %s (%v)", ev.Result, err)
	}
	req, resp := ev.Messages[0], ev.Messages[1]
	if req.Role != history.RoleAction || req.Content[history.KeyFunction] != "add" || req.Content[history.KeyActionResponseID] != resp.ID ||
		resp.Content[history.KeyActionRequestID] != req.ID || compact(t, resp.Content[history.KeyOutput]) != `{"sum":5}` {
		t.Fatalf("request %+v\nresponse %+v", req, resp)
	}
	if req.Metadata[ops.MetaCallID] != ops.ToolCallKey("act-1", 0) || req.Metadata[ops.MetaActionID] != "c1" {
		t.Fatalf("request metadata %v", req.Metadata)
	}
	if _, ok := ev.Messages[2].Metadata[ops.MetaActionID]; ok {
		t.Fatalf("a request without id has metadata %v", ev.Messages[2].Metadata)
	}
	// The branch folds the messages like any other.
	br := a.branch(t, "b")
	if seq, _ := br.Commits.Seq("act-1"); len(br.Messages) != 4 || seq != ev.Seq {
		t.Fatalf("branch has %d messages, commits %v", len(br.Messages), br.Commits)
	}
	// The messages are announced after the hooks, each once.
	sig := a.toolSignals("act-1")
	if n := len(sig); n != 8 || strings.Join(sig[4:], ",") != "message.added action_request,message.added action_response,message.added action_request,message.added action_response" {
		t.Fatalf("signals %v", sig)
	}
}

// A redelivered act is answered from history, with the same value, without
// calling a tool again; its messages are announced again.
func TestAct_redelivery_is_answered_from_history(t *testing.T) {
	a := newActBundle(t, ops.Config{})
	a.branchWith(t, "b", "add", "fails")
	data := `{"action_requests":[{"function":"add","arguments":{"x":1,"y":1}},{"function":"fails"}]}`
	first, _, err := a.act(t, "act-1", "b", data)
	if err != nil {
		t.Fatal(err)
	}
	again, res, err := a.act(t, "act-1", "b", data)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Replayed || compact(t, again) != compact(t, first) {
		t.Fatalf("replay %+v value %s, want replayed %s", res, compact(t, again), compact(t, first))
	}
	for i := range 2 {
		if n := a.tools.Calls(ops.ToolCallKey("act-1", i)); n != 1 {
			t.Fatalf("call %d ran %d times", i, n)
		}
	}
	if evs, _ := a.store.History(context.Background(), "b", 0, 0); len(evs) != 2 {
		t.Fatalf("%d history events, want the creation and one act", len(evs))
	}
	if n := len(a.hooks("act-1")); n != 4 {
		t.Fatalf("%d hook signals, want the first run's 4 only", n)
	}
	if n := strings.Count(strings.Join(a.toolSignals("act-1"), ","), "message.added"); n != 8 {
		t.Fatalf("%d message.added signals, want 4 per delivery", n)
	}
}

// Every call carries its idempotency key, the request and branch, and the
// request's deadline; the tool gets the arguments, {} for none.
func TestAct_invocations_carry_key_and_deadline(t *testing.T) {
	var mu = make(chan struct{}, 1)
	var seen []ops.ToolInvocation
	inv := ops.InvokerFunc(func(_ context.Context, call ops.ToolInvocation) (ops.ToolOutcome, error) {
		mu <- struct{}{}
		seen = append(seen, call)
		<-mu
		return ops.ToolOutcome{Output: "ok"}, nil
	})
	a := newActBundle(t, ops.Config{Tools: inv})
	a.branchWith(t, "b", "f", "g")
	deadline := time.Now().Add(time.Minute)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	_, err := a.eng.Do(ctx, ops.Request{ID: "r1", Verb: "act", BranchID: "b", Data: json.RawMessage(
		`{"strategy":"sequential","action_requests":[{"function":"f","arguments":{"a":1}},{"function":"g","arguments":null}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 {
		t.Fatalf("%d calls", len(seen))
	}
	for i, c := range seen {
		if c.IdempotencyKey != ops.ToolCallKey("r1", i) || c.RequestID != "r1" || c.BranchID != "b" || !c.Deadline.Equal(deadline) {
			t.Errorf("call %d: %+v", i, c)
		}
	}
	if compact(t, seen[0].Arguments) != `{"a":1}` || compact(t, seen[1].Arguments) != `{}` {
		t.Errorf("arguments %v, %v", seen[0].Arguments, seen[1].Arguments)
	}
	// Without a deadline on the request, none on the call.
	seen = nil
	if _, err := a.eng.Do(context.Background(), ops.Request{ID: "r2", Verb: "act", BranchID: "b", Data: json.RawMessage(
		`{"action_requests":[{"function":"f"}]}`)}); err != nil {
		t.Fatal(err)
	}
	if !seen[0].Deadline.IsZero() {
		t.Errorf("deadline %v without one on the request", seen[0].Deadline)
	}
}

// Invoker failures are error values with act's codes.
func TestAct_invoker_failures_are_values(t *testing.T) {
	unencodable := ops.InvokerFunc(func(_ context.Context, call ops.ToolInvocation) (ops.ToolOutcome, error) {
		switch call.Function {
		case "chan":
			return ops.ToolOutcome{Output: make(chan int)}, nil
		case "uncoded":
			return ops.ToolOutcome{Error: &ops.ToolError{Message: "no code"}}, nil
		}
		return ops.ToolOutcome{}, errors.New("connection reset")
	})
	tests := []struct {
		name     string
		tools    ops.Invoker
		function string
		code     string
		msg      string
	}{
		{"unknown tool", nil, "missing", ops.ActionErrorNoTool, `no such tool "missing"`},
		{"no tools at all", withoutTools, "add", ops.ActionErrorNoTool, "the worker has no tools"},
		{"transport failure", unencodable, "remote", ops.ActionErrorInvoker, "connection reset"},
		{"unencodable output", unencodable, "chan", ops.ToolErrorFailed, "not JSON-encodable"},
		{"tool error without code", unencodable, "uncoded", ops.ToolErrorFailed, "no code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newActBundle(t, ops.Config{Tools: tt.tools})
			a.branchWith(t, "b", tt.function)
			got, _, err := a.act(t, "r", "b", `{"action_requests":[{"function":"`+tt.function+`"}]}`)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Error == nil || got[0].Error.Code != tt.code || !strings.Contains(got[0].Error.Message, tt.msg) {
				t.Fatalf("responses %s, want error %s %q", compact(t, got), tt.code, tt.msg)
			}
		})
	}
}

// A request whose context ends while its calls run records nothing and
// fails with the context's error.
func TestAct_ended_request_records_nothing(t *testing.T) {
	a := newActBundle(t, ops.Config{})
	a.branchWith(t, "b", "waits")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := a.eng.Do(ctx, ops.Request{ID: "r", Verb: "act", BranchID: "b", Data: json.RawMessage(`{"action_requests":[{"function":"waits"}]}`)})
	if code(err) != ops.CodeTimeout {
		t.Fatalf("err = %v, want timeout", err)
	}
	if ev := a.lastEvent(t, "b"); ev.Type != history.EventCreated {
		t.Fatalf("recorded %s", ev.Type)
	}
}

func TestAct_bad_requests(t *testing.T) {
	a := newActBundle(t, ops.Config{})
	a.branchWith(t, "b", "add")
	many := `{"action_requests":[` + strings.Repeat(`{"function":"add"},`, ops.MaxActionRequests) + `{"function":"add"}]}`
	tests := []struct {
		name   string
		branch string
		data   string
		code   ops.Code
		msg    string
	}{
		{"no branch", "", `{}`, ops.CodeInvalidRequest, "branch id is required"},
		{"missing branch", "nope", `{}`, ops.CodeBranchNotFound, "nope"},
		{"no function", "b", `{"action_requests":[{"arguments":{}}]}`, ops.CodeInvalidRequest, "action_requests[0].function is required"},
		{"arguments not an object", "b", `{"action_requests":[{"function":"add","arguments":[1]}]}`, ops.CodeInvalidRequest, "must be an object"},
		{"too many", "b", many, ops.CodeInvalidRequest, "at most 256"},
		{"long id", "b", `{"action_requests":[{"id":"` + strings.Repeat("i", 257) + `","function":"add"}]}`, ops.CodeInvalidRequest, "id is longer than 256"},
		{"not an object", "b", `[]`, ops.CodeInvalidRequest, "must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a.eng.Do(context.Background(), ops.Request{ID: "r", Verb: "act", BranchID: tt.branch, Data: json.RawMessage(tt.data)})
			if code(err) != tt.code || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v, want %s containing %q", err, tt.code, tt.msg)
			}
		})
	}
	if n := a.tools.Calls(ops.ToolCallKey("r", 0)); n != 0 {
		t.Fatalf("a bad request called a tool %d times", n)
	}
	if _, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore(), MaxConcurrentTools: -1}); err == nil {
		t.Fatal("NewEngine accepted a negative MaxConcurrentTools")
	}
}
