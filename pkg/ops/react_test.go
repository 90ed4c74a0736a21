package ops_test

// interpret and react at the engine, with the scripted provider and the
// act tests' tools.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

// Scripted analyses: one that asks for add(1, 2) and another round, one
// that is done.
const (
	analysisAsksAdd = `{"analysis":"I need the sum first.","planned_actions":[{"action_type":"add","description":"add 1 and 2"}],` +
		`"extension_needed":true,"milestone":"sum","action_required":true,"action_requests":[{"function":"add","arguments":{"x":1,"y":2}}]}`
	analysisDone  = `{"analysis":"The sum is 3.","planned_actions":[],"extension_needed":false}`
	analysisAgain = `{"analysis":"More to do.","extension_needed":true}`
	answerFormat  = `{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`
)

// reactBranch creates branch id with the add tool and the scripted chat
// model answering replies in order.
func reactBranch(t *testing.T, a *operateBundle, id string, replies ...string) {
	t.Helper()
	raw := make([]json.RawMessage, len(replies))
	for i, r := range replies {
		raw[i] = json.RawMessage(mustJSON(t, r))
	}
	b, err := json.Marshal(map[string]any{"branch_id": id, "tools": []string{"add"},
		"chat_model": map[string]any{"provider": "scripted", "replies": raw}})
	if err != nil {
		t.Fatal(err)
	}
	a.mustDo(t, "branch.create", "", string(b))
}

// mustJSON quotes s as a JSON string.
func mustJSON(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lifecycle returns the run signals of request id and of its sub-requests
// ("id/..."), and the number of message.added signals of the
// sub-requests.
func lifecycle(r *signalRecorder, id string) (own, nested []string, added int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.signals {
		run := strings.HasPrefix(string(s.Type), "run.")
		switch {
		case s.RequestID == id && run:
			own = append(own, string(s.Type))
		case strings.HasPrefix(s.RequestID, id+"/") && run:
			nested = append(nested, s.RequestID+" "+string(s.Type))
		case strings.HasPrefix(s.RequestID, id+"/") && s.Type == ops.SignalMessageAdded:
			added++
		}
	}
	return own, nested, added
}

func TestReact_tool_extension_answer_and_redelivery(t *testing.T) {
	t.Parallel()
	o := newOperateBundle(t)
	reactBranch(t, o, "r", analysisAsksAdd, analysisDone, `{"answer":"3"}`)
	data := `{"instruction":"What is 1 + 2?","response_format":` + answerFormat + `,"return_analysis":true}`
	res, err := o.doID(t, "q1", "react", "r", data)
	if err != nil {
		t.Fatal(err)
	}
	if got := compact(t, value(t, res)); got != `{"answer":"3"}` {
		t.Fatalf("value %s", got)
	}
	if len(opstest.Analyses(t, res)) != 2 {
		t.Fatalf("analyses %s", opstest.Analyses(t, res))
	}
	var first map[string]any
	if err := json.Unmarshal(opstest.Analyses(t, res)[0], &first); err != nil {
		t.Fatal(err)
	}
	if got := compact(t, first["action_responses"]); got != `[{"arguments":{"x":1,"y":2},"function":"add","output":{"sum":3}}]` {
		t.Fatalf("round 0 action_responses %s", got)
	}
	if o.prov.count() != 3 {
		t.Fatalf("%d model calls, want 3", o.prov.count())
	}
	// History: round 0's exchange and act stage, round 1, the answer,
	// each under its stage id.
	br := o.branch(t, "r")
	if got := kinds(br.Messages); got != "instruction assistant_response action_request action_response instruction assistant_response instruction assistant_response" {
		t.Fatalf("history %s", got)
	}
	for _, id := range []string{"q1/react/0/middle", "q1/react/0/act", "q1/react/1/middle", "q1/react/answer/middle"} {
		if _, ok := br.Commits.Seq(id); !ok {
			t.Errorf("no commit %s in %v", id, br.Commits)
		}
	}
	// The extension round's instruction says what the model concluded
	// and how many rounds remain.
	ext, _ := br.Messages[4].Content[history.KeyInstruction].(string)
	if !strings.Contains(ext, "I need the sum first. (milestone: sum)") || !strings.Contains(ext, "2 more extension round") {
		t.Fatalf("extension instruction %q", ext)
	}
	// 0021-D4-04: one lifecycle, the react's; the rounds' messages are
	// still signalled.
	own, nested, added := lifecycle(o.signals, "q1")
	if strings.Join(own, " ") != "run.start run.end" || len(nested) != 0 || added != 8 {
		t.Fatalf("own %v, nested %v, %d message.added", own, nested, added)
	}

	// A redelivery answers every round from history: no model call.
	again, err := o.doID(t, "q1", "react", "r", data)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || string(again.Value) != string(res.Value) || len(opstest.Analyses(t, again)) != 2 || o.prov.count() != 3 {
		t.Fatalf("redelivery: replayed %v value %s, %d analyses, %d model calls", again.Replayed, again.Value, len(opstest.Analyses(t, again)), o.prov.count())
	}
	if n := len(o.branch(t, "r").Messages); n != len(br.Messages) {
		t.Fatalf("redelivery recorded again: %d messages, was %d", n, len(br.Messages))
	}
}

// 0021-D1-06: extension rounds default to 3, streamed or not; zero or
// less means none; above 100 is logged and lowered to 100.
func TestReact_0021_D1_06_extension_budget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		extra string // data fields
		want  int    // extension rounds run
		warn  bool
	}{
		{"0021-D1-06 default is 3", ``, 3, false},
		{"0021-D1-06 default is 3 when streaming", `,"stream":true`, 3, false},
		{"0021-D1-06 zero means none", `,"max_extensions":0`, 0, false},
		{"0021-D1-06 negative means none", `,"max_extensions":-4`, 0, false},
		{"0021-D1-06 a budget below the maximum", `,"max_extensions":2`, 2, false},
		{"0021-D1-06 above 100 clamps to 100", `,"max_extensions":250`, 100, true},
		{"extension_allowed false runs none", `,"extension_allowed":false,"max_extensions":5`, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := newOperateBundle(t)
			// Every analysis asks for another round: the budget alone
			// ends the loop.
			replies := make([]string, 0, 103)
			for range 102 {
				replies = append(replies, analysisAgain)
			}
			reactBranch(t, o, "r", append(replies[:tt.want+1], "final")...)
			res, err := o.doID(t, "q", "react", "r", `{"instruction":"loop","return_analysis":true`+tt.extra+`}`)
			if err != nil {
				t.Fatal(err)
			}
			if len(opstest.Analyses(t, res)) != tt.want+1 || string(res.Value) != `"final"` || o.prov.count() != tt.want+2 {
				t.Fatalf("%d analyses, value %s, %d model calls; want %d extension rounds", len(opstest.Analyses(t, res)), res.Value, o.prov.count(), tt.want)
			}
			if warned := len(o.logs.records(t, "max_extensions above the maximum")) > 0; warned != tt.warn {
				t.Fatalf("warning logged: %v, want %v", warned, tt.warn)
			}
		})
	}
}

// 0021-D2-08: a streamed react publishes each round as it completes, and
// the one result collects every round; a named operation calling react
// gets that one result.
func TestReact_0021_D2_08_streamed_rounds_are_collected(t *testing.T) {
	t.Parallel()
	outlet := &chunkOutlet{}
	ops_ := ops.NewOperations()
	o := newOperateBundleWith(t, func(c *ops.Config) { c.Chunks = outlet; c.Operations = ops_ })
	reactBranch(t, o, "r", analysisAsksAdd, analysisDone, "three")
	res, err := o.doID(t, "s1", "react", "r", `{"instruction":"What is 1 + 2?","stream":true}`)
	if err != nil {
		t.Fatal(err)
	}
	chunks := outlet.chunks("s1")
	var phases []string
	for i, c := range chunks {
		if c.Kind != ops.ChunkRound || c.Seq != uint64(i+1) || c.Metadata["round"] != i {
			t.Fatalf("chunk %d: %+v", i, c)
		}
		phases = append(phases, fmt.Sprint(c.Metadata["phase"]))
	}
	if strings.Join(phases, " ") != "analysis analysis answer" || chunks[0].Content != "I need the sum first." || chunks[2].Content != "three" {
		t.Fatalf("chunks %+v", chunks)
	}
	if len(opstest.Analyses(t, res)) != 2 || compact(t, chunks[1].Metadata["value"]) != compactRaw(t, opstest.Analyses(t, res)[1]) || string(res.Value) != `"three"` {
		t.Fatalf("result %s, analyses %s", res.Value, opstest.Analyses(t, res))
	}
	if outlet.closed["s1"] != 1 {
		t.Fatalf("chunk stream closed %d times", outlet.closed["s1"])
	}

	// A named operation composes react through the Doer and receives one
	// result holding every round.
	err = ops_.Register("deliberate", ops.OperationFunc(func(ctx context.Context, eng ops.Doer, req ops.Request) (*ops.Result, error) {
		sub, err := eng.Do(ctx, ops.Request{ID: req.ID + "/react", Verb: "react", BranchID: req.BranchID, Data: req.Data})
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(map[string]any{"rounds": len(opstest.Analyses(t, sub)), "answer": sub.Value})
		return &ops.Result{Value: v, BranchID: sub.BranchID}, err
	}))
	if err != nil {
		t.Fatal(err)
	}
	reactBranch(t, o, "n", analysisAsksAdd, analysisAgain, analysisDone, "four")
	got, err := o.eng.Do(context.Background(), ops.Request{ID: "op1", Verb: "op.deliberate", BranchID: "n",
		Data: json.RawMessage(`{"instruction":"go","stream":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Value) != `{"answer":"four","rounds":3}` || len(outlet.chunks("op1/react")) != 4 {
		t.Fatalf("named operation value %s, %d chunks", got.Value, len(outlet.chunks("op1/react")))
	}
}

// compactRaw re-encodes raw compactly with sorted keys.
func compactRaw(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return compact(t, v)
}

// 0021-D4-04: the nested-turn marker lives in the react's context: an
// ordinary operate running at the same time, on the same engine and
// branch, still emits its own lifecycle, while the react's rounds emit
// none.
func TestReact_0021_D4_04_nested_marker_does_not_silence_concurrent_requests(t *testing.T) {
	t.Parallel()
	inRound := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	prov := providerFunc(func(ctx context.Context, call ops.Call) (*ops.Completion, error) {
		switch {
		case call.RequestID == "R/react/0/middle":
			// Hold round 0 until the concurrent operate has run.
			once.Do(func() { close(inRound) })
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &ops.Completion{Text: analysisDone}, nil
		case strings.HasPrefix(call.RequestID, "R/"):
			return &ops.Completion{Text: "done"}, nil
		}
		return &ops.Completion{Text: "plain"}, nil
	})
	a := newActBundle(t, ops.Config{Providers: ops.NewProviders(map[string]ops.Provider{"p": prov})})
	a.mustDo(t, "branch.create", "", `{"branch_id":"b","chat_model":"p:m","tools":["add"]}`)
	errs := make(chan error, 1)
	go func() {
		_, err := a.eng.Do(context.Background(), ops.Request{ID: "R", Verb: "react", BranchID: "b", Data: json.RawMessage(`{"instruction":"think"}`)})
		errs <- err
	}()
	<-inRound
	if _, err := a.doID(t, "O", "operate", "b", `{"instruction":"plain please"}`); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(a.signals.types("O"), " "); got != "run.start run.end" {
		t.Fatalf("concurrent operate signals: %s", got)
	}
	if got := strings.Join(a.signals.types("O/middle"), " "); got != "message.added message.added" {
		t.Fatalf("concurrent operate's middle signals: %s", got)
	}
	own, nested, added := lifecycle(a.signals, "R")
	if strings.Join(own, " ") != "run.start run.end" || len(nested) != 0 || added != 4 {
		t.Fatalf("react: own %v, nested %v, %d message.added", own, nested, added)
	}
}

// A failed round ends the react with its error and one terminal signal;
// invalid data is refused before any model call or signal.
func TestReact_errors(t *testing.T) {
	t.Parallel()
	t.Run("failed round", func(t *testing.T) {
		o := newOperateBundle(t)
		reactBranch(t, o, "r", analysisAgain)
		// The script ends after round 0: round 1's call fails.
		_, err := o.doID(t, "f", "react", "r", `{"instruction":"x"}`)
		if code(err) != ops.CodeProvider {
			t.Fatalf("err %v, want %s", err, ops.CodeProvider)
		}
		if own, nested, _ := lifecycle(o.signals, "f"); strings.Join(own, " ") != "run.start run.failed" || len(nested) != 0 {
			t.Fatalf("own %v nested %v", own, nested)
		}
	})
	t.Run("analysis that is not one", func(t *testing.T) {
		o := newOperateBundle(t)
		reactBranch(t, o, "r", `{"extension_needed":"maybe"}`)
		_, err := o.doID(t, "f", "react", "r", `{"instruction":"x","num_parse_retries":0}`)
		if c := code(err); c != ops.CodeSchemaRejected && c != ops.CodeParse {
			t.Fatalf("err %v", err)
		}
	})
	tests := []struct {
		name, branch, data, msg string
	}{
		{"no instruction", "r", `{"stream":true}`, "data.instruction is required"},
		{"instruction of the wrong type", "r", `{"instruction":5}`, "data.instruction must be a string or an object"},
		{"instruct with instruction", "r", `{"instruct":{"instruction":"a"},"instruction":"b"}`, "exclude each other"},
		{"bad action_strategy", "r", `{"instruction":"a","action_strategy":"random"}`, "data.action_strategy"},
		{"a tool the branch lacks", "r", `{"instruction":"a","tools":["rm"]}`, "not one of the branch's tools"},
		{"bad response_format", "r", `{"instruction":"a","response_format":{"type":"nope"}}`, "response_format"},
		{"bad handle_validation", "r", `{"instruction":"a","handle_validation":"shrug"}`, "handle_validation"},
		{"interpret_domain too long", "r", `{"instruction":"a","interpret":true,"interpret_domain":"` + strings.Repeat("d", 300) + `"}`, "interpret_domain"},
		{"max_extensions not a number", "r", `{"instruction":"a","max_extensions":"3"}`, "max_extensions"},
		{"no branch", "", `{"instruction":"a"}`, "branch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOperateBundle(t)
			reactBranch(t, o, "r", analysisDone, "x")
			_, err := o.eng.Do(context.Background(), ops.Request{ID: "bad", Verb: "react", BranchID: tt.branch, Data: json.RawMessage(tt.data)})
			var oe *ops.Error
			if !errors.As(err, &oe) || oe.Code != ops.CodeInvalidRequest || !strings.Contains(oe.Message, tt.msg) {
				t.Fatalf("err %v, want %s mentioning %q", err, ops.CodeInvalidRequest, tt.msg)
			}
			if o.prov.count() != 0 || len(o.signals.types("bad")) != 0 {
				t.Fatalf("%d model calls, signals %v", o.prov.count(), o.signals.types("bad"))
			}
		})
	}
}

func TestInterpret(t *testing.T) {
	t.Parallel()
	o := newOperateBundle(t)
	o.mustDo(t, "branch.create", "", `{"branch_id":"i","chat_model":"scripted:echo"}`)
	res := o.mustDo(t, "interpret", "i", `{"text":"sum stuff","domain":"math","style":"formal","sample_writing":"Compute the total."}`)
	var got string
	if err := json.Unmarshal(res.Value, &got); err != nil {
		t.Fatal(err)
	}
	// The echo model answers the instruction: what interpret asks.
	if !strings.Contains(got, "Answer with the rewritten prompt and nothing else.") {
		t.Fatalf("value %q", got)
	}
	call := o.prov.last()
	prompt := fmt.Sprint(call.Messages)
	for _, want := range []string{"User input: sum stuff", "Domain: math", "Style of the rewritten prompt: formal", "Compute the total."} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q: %s", want, prompt)
		}
	}
	if n := len(o.branch(t, "i").Messages); n != 0 || len(o.signals.types("req-2")) != 0 {
		t.Fatalf("interpret recorded %d messages or signalled %v", n, o.signals.types("req-2"))
	}
	// interpret_model wins over chat_model, which wins over the branch's.
	res = o.mustDo(t, "interpret", "i", `{"text":"t","chat_model":{"provider":"scripted","replies":["chat"]},"interpret_model":{"provider":"scripted","replies":["  rewritten  "]}}`)
	if string(res.Value) != `"rewritten"` {
		t.Fatalf("value %s", res.Value)
	}
	res = o.mustDo(t, "interpret", "i", `{"text":"t","chat_model":{"provider":"scripted","replies":["chat"]}}`)
	if string(res.Value) != `"chat"` {
		t.Fatalf("value %s", res.Value)
	}
	for _, data := range []string{`{"text":"   "}`, `{}`, `{"text":"a","style":"` + strings.Repeat("s", 300) + `"}`} {
		if _, err := o.eng.Do(context.Background(), ops.Request{ID: "x", Verb: "interpret", BranchID: "i", Data: json.RawMessage(data)}); code(err) != ops.CodeInvalidRequest {
			t.Errorf("%s: err %v", data, err)
		}
	}
}

// react with interpret: round 0 gets the rewritten instruction; a
// redelivery does not call the interpret model again.
func TestReact_interpret_first(t *testing.T) {
	t.Parallel()
	o := newOperateBundle(t)
	reactBranch(t, o, "r", analysisDone, "ok")
	data := `{"instruction":"sum stuff","interpret":true,"interpret_model":{"provider":"scripted","replies":["Add 1 and 2, then report the total."]}}`
	if _, err := o.doID(t, "i1", "react", "r", data); err != nil {
		t.Fatal(err)
	}
	br := o.branch(t, "r")
	if got := br.Messages[0].Content[history.KeyInstruction]; got != "Add 1 and 2, then report the total." {
		t.Fatalf("round 0 instruction %v", got)
	}
	calls := o.prov.count()
	if calls != 3 {
		t.Fatalf("%d model calls, want 3 (interpret, round 0, answer)", calls)
	}
	res, err := o.doID(t, "i1", "react", "r", data)
	if err != nil || !res.Replayed || o.prov.count() != calls {
		t.Fatalf("redelivery: %v, replayed %v, %d model calls", err, res != nil && res.Replayed, o.prov.count())
	}
}

// A react redelivered after a temporary failure in round 1 answers round
// 0 from history (its model and tool are not called again) and goes on
// from round 1; the failed attempt emits no terminal signal, the retry
// one.
func TestReact_redelivery_resumes_after_committed_rounds(t *testing.T) {
	t.Parallel()
	o := newOperateBundle(t)
	o.mustDo(t, "branch.create", "", `{"branch_id":"r","tools":["add"],"chat_model":{"provider":"scripted","replies":[`+
		mustJSON(t, analysisAsksAdd)+`,{"text":`+mustJSON(t, analysisDone)+`,"error":{"message":"busy","temporary":true,"attempts":1}},"seven"]}}`)
	data := json.RawMessage(`{"instruction":"What is 1 + 2?"}`)
	_, err := o.eng.Do(context.Background(), ops.Request{ID: "q", Verb: "react", BranchID: "r", Data: data, Attempt: 1})
	var oe *ops.Error
	if !errors.As(err, &oe) || !oe.Temporary {
		t.Fatalf("first attempt: %v, want a temporary error", err)
	}
	if got := strings.Join(o.signals.types("q"), " "); got != "run.start" {
		t.Fatalf("first attempt signals %s", got)
	}
	res, err := o.eng.Do(context.Background(), ops.Request{ID: "q", Verb: "react", BranchID: "r", Data: data, Attempt: 2})
	if err != nil || string(res.Value) != `"seven"` || res.Replayed {
		t.Fatalf("second attempt: %v, %v", res, err)
	}
	round0 := 0
	o.prov.mu.Lock()
	for _, c := range o.prov.calls {
		if c.RequestID == "q/react/0/middle" {
			round0++
		}
	}
	o.prov.mu.Unlock()
	if round0 != 1 || o.tools.Calls(ops.ToolCallKey("q/react/0/act", 0)) != 1 {
		t.Fatalf("round 0 called the model %d times, add ran %d times", round0, o.tools.Calls(ops.ToolCallKey("q/react/0/act", 0)))
	}
	if got := strings.Join(o.signals.types("q"), " "); got != "run.start run.start run.end" {
		t.Fatalf("signals %s", got)
	}
}
