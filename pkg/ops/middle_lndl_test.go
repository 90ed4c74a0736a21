package ops_test

// The LNDL middle of ADR-0024 at the engine: operate with "middle":
// "lndl", the scripted provider answering LNDL, the act tools of
// actTools. Each test names the bullets it checks.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/lndl"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

// lndlBlock is a model reply with one lndl block holding body.
func lndlBlock(body string) string {
	return "Working on it.\n```lndl\n" + body + "\n```\n"
}

// sumFormat is the target of most tests: total (Any) and shout (str).
const sumFormat = `{"title":"Work","type":"object","properties":{"total":{"description":"the sum"},"shout":{"type":"string"}},"required":["total","shout"]}`

// lndlBranch creates branch id with the scripted replies and the tools.
func lndlBranch(t *testing.T, o *operateBundle, id string, replies []string, tools ...string) {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"branch_id": id, "tools": append([]string{}, tools...),
		"chat_model": map[string]any{"provider": "scripted", "replies": replies},
	})
	if err != nil {
		t.Fatal(err)
	}
	o.mustDo(t, "branch.create", "", string(b))
}

// rawOperate runs operate without checking its data against the schema
// (for data the schema refuses too).
func rawOperate(o *operateBundle, id, branch, data string) (*ops.Result, error) {
	return o.eng.Do(context.Background(), ops.Request{ID: id, Verb: "operate", BranchID: branch, Data: json.RawMessage(data)})
}

// instructions returns the instruction messages recorded on branch, in
// order, across all its events.
func (o *operateBundle) instructions(t *testing.T, branch string) []history.Message {
	t.Helper()
	evs, err := o.store.History(context.Background(), branch, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []history.Message
	for _, ev := range evs {
		for _, m := range ev.Messages {
			if m.Kind == history.KindInstruction {
				out = append(out, m)
			}
		}
	}
	return out
}

// rounds returns the lndl.round signals of the request id's rounds.
func (o *operateBundle) rounds(id string) []ops.Signal {
	o.signals.mu.Lock()
	defer o.signals.mu.Unlock()
	var out []ops.Signal
	for _, s := range o.signals.signals {
		if s.Type == ops.SignalLNDLRound && strings.HasPrefix(s.RequestID, id+"/") {
			out = append(out, s)
		}
	}
	return out
}

// outcomes renders the outcomes of rounds, e.g. "continue success".
func outcomes(rounds []ops.LNDLRound) string {
	var s []string
	for _, r := range rounds {
		s = append(s, r.Outcome)
	}
	return strings.Join(s, " ")
}

// 0024-D1-01 (Go form), 0024-D4-01, 0024-D4-03, 0024-D4-06, 0024-D2-08,
// 0024-D5-03: round one declares two lacts without OUT (both run, through
// act's stage, concurrently, as ordinary action requests), round two
// commits OUT citing their aliases; the value validates and the loop stops
// with a round to spare. The default budget is 3.
func TestLNDL_0024_D1_01_two_round_success(t *testing.T) {
	o := newOperateBundle(t)
	lndlBranch(t, o, "b", []string{
		lndlBlock("<lact s>add(x=1, y=2)</lact>\n<lact u>upper(s=\"hi\")</lact>"),
		lndlBlock("OUT{total: [s], shout: [u]}"),
	}, "add", "upper")
	res, err := o.operate(t, "op1", "b", `{"instruction":"add and shout","middle":"lndl","response_format":`+sumFormat+`}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Value); got != `{"shout":"HI","total":{"sum":3}}` {
		t.Fatalf("value %s", got)
	}
	if o.prov.count() != 2 {
		t.Fatalf("%d model calls, want 2", o.prov.count())
	}
	if o.tools.Calls(ops.ToolCallKey("op1/middle/round1/act", 0)) != 1 || o.tools.Calls(ops.ToolCallKey("op1/middle/round1/act", 1)) != 1 {
		t.Fatal("the two lacts of round 1 did not run once each")
	}
	if got := outcomes(opstest.LNDLRounds(t, res)); got != "continue success" {
		t.Fatalf("rounds %s", got)
	}
	r1 := opstest.LNDLRounds(t, res)[0]
	if r1.Budget != ops.DefaultRoundBudget || r1.BudgetLeft != 2 || compact(t, r1.Actions) != `[{"alias":"s","function":"add"},{"alias":"u","function":"upper"}]` {
		t.Fatalf("round 1 %+v", r1)
	}
	// Every exchange and the action messages are recorded, each stage
	// as one event.
	evs, err := o.store.History(context.Background(), "b", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var stages []string
	for _, ev := range evs[1:] {
		stages = append(stages, ev.RequestID+": "+kinds(ev.Messages))
	}
	want := []string{
		"op1/middle/round1: instruction assistant_response",
		"op1/middle/round1/act: action_request action_response action_request action_response",
		"op1/middle/round2: instruction assistant_response",
	}
	if strings.Join(stages, "\n") != strings.Join(want, "\n") {
		t.Fatalf("history:\n%s\nwant:\n%s", strings.Join(stages, "\n"), strings.Join(want, "\n"))
	}
	// The action requests carry the alias as their id.
	if id := evs[2].Messages[0].Metadata[ops.MetaActionID]; id != "s" {
		t.Fatalf("action request metadata %v", evs[2].Messages[0].Metadata)
	}
	// Round 2 is told the results.
	ins := o.instructions(t, "b")
	if got := ins[1].Content[history.KeyInstruction].(string); !strings.HasPrefix(got, "Round 2 of 3.") || !strings.Contains(got, `- s: {"sum":3}`) {
		t.Fatalf("round 2 instruction %q", got)
	}
	// One lndl.round signal per round, under the round's stage id.
	sigs := o.rounds("op1")
	if len(sigs) != 2 || sigs[0].RequestID != "op1/middle/round1" || sigs[1].Round.Outcome != ops.RoundSuccess || sigs[0].Verb != "operate" {
		t.Fatalf("round signals %+v", sigs)
	}
}

// 0024-D1-02: the LNDL prompt, parsing and rounds apply only to requests
// that select the middle; a plain operate gets none of them.
func TestLNDL_0024_D1_02_opt_in(t *testing.T) {
	o := newOperateBundle(t)
	lndlBranch(t, o, "b", []string{`{"total": 1, "shout": "A"}`})
	res, err := o.operate(t, "op1", "b", `{"instruction":"i","response_format":`+sumFormat+`}`)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) != `{"shout":"A","total":1}` || opstest.LNDLRounds(t, res) != nil || len(o.rounds("op1")) != 0 {
		t.Fatalf("plain operate: %s, rounds %v", res.Value, opstest.LNDLRounds(t, res))
	}
	if g, _ := o.instructions(t, "b")[0].Content[history.KeyGuidance].(string); strings.Contains(g, "LNDL") {
		t.Fatal("a plain operate was given the LNDL guidance")
	}
}

// 0024-D1-03: clear_messages clears once, with round one's exchange; the
// later rounds are not asked to clear, so the branch keeps every round.
func TestLNDL_0024_D1_03_clears_once(t *testing.T) {
	o := newOperateBundle(t)
	lndlBranch(t, o, "b", []string{"old", lndlBlock("<lact s>add(x=1, y=1)</lact>"), lndlBlock(`OUT{total: [s], shout: "X"}`)}, "add")
	if _, err := o.operate(t, "op0", "b", `{"instruction":"earlier","skip_validation":true}`); err != nil {
		t.Fatal(err)
	}
	if _, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","clear_messages":true,"response_format":`+sumFormat+`}`); err != nil {
		t.Fatal(err)
	}
	evs, err := o.store.History(context.Background(), "b", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var clears []string
	for _, ev := range evs {
		if ev.Clear {
			clears = append(clears, ev.RequestID)
		}
	}
	if strings.Join(clears, ",") != "op1/middle/round1" {
		t.Fatalf("clearing events %v", clears)
	}
	if got := kinds(o.branch(t, "b").Messages); got != "instruction assistant_response action_request action_response instruction assistant_response" {
		t.Fatalf("messages after the operate: %s", got)
	}
}

// 0024-D1-04, 0024-D1-05, 0024-D5-08 (as lionbus intends them): a budget
// that is not an integer from 1 to MaxRoundBudget, or a budget for another
// middle, is an invalid request, answered before any model call.
func TestLNDL_0024_D1_04_budget_checked_before_any_call(t *testing.T) {
	for _, budget := range []string{`0`, `-1`, `11`, `"x"`, `2.5`, `null`, `true`, `[3]`} {
		t.Run(budget, func(t *testing.T) {
			o := newOperateBundle(t)
			lndlBranch(t, o, "b", []string{lndlBlock(`OUT{total: 1, shout: "A"}`)})
			_, err := rawOperate(o, "op1", "b", `{"instruction":"i","middle":"lndl","round_budget":`+budget+`}`)
			if code(err) != ops.CodeInvalidRequest || !strings.Contains(err.Error(), "round_budget") {
				t.Fatalf("err = %v, want invalid_request about round_budget", err)
			}
			if o.prov.count() != 0 || len(o.instructions(t, "b")) != 0 {
				t.Fatal("a model was called")
			}
		})
	}
	o := newOperateBundle(t)
	lndlBranch(t, o, "b", []string{"x"})
	if _, err := rawOperate(o, "op1", "b", `{"instruction":"i","round_budget":2}`); code(err) != ops.CodeInvalidRequest || o.prov.count() != 0 {
		t.Fatalf("round_budget with the communicate middle: %v", err)
	}
	// 2.0 is the integer 2; the largest budget is accepted.
	for _, budget := range []string{"2.0", fmt.Sprint(ops.MaxRoundBudget)} {
		o := newOperateBundle(t)
		lndlBranch(t, o, "b", []string{lndlBlock(`OUT{total: 1, shout: "A"}`)})
		res, err := rawOperate(o, "op1", "b", `{"instruction":"i","middle":"lndl","round_budget":`+budget+`,"response_format":`+sumFormat+`}`)
		if err != nil {
			t.Fatalf("round_budget %s: %v", budget, err)
		}
		if want := strings.TrimSuffix(budget, ".0"); fmt.Sprint(opstest.LNDLRounds(t, res)[0].Budget) != want {
			t.Fatalf("budget %d, want %s", opstest.LNDLRounds(t, res)[0].Budget, want)
		}
	}
}

// 0024-D1-04, 0024-D1-06, 0024-D5-05, 0024-D5-06: budget 1 is one
// exchange; a round without OUT leaves no valid value, and running out of
// rounds is an error naming the budget, with no value.
func TestLNDL_0024_D5_05_exhaustion(t *testing.T) {
	tests := []struct {
		name    string
		budget  int
		replies []string
		calls   int
		msg     string
		lndlErr bool // the error wraps the last LNDL error
	}{
		{name: "budget 1 without OUT", budget: 1, replies: []string{lndlBlock("<lvar a>x</lvar>")}, calls: 1,
			msg: "no valid result in 1 round(s) (round_budget 1): no OUT{} was produced"},
		{name: "budget 2 of syntax errors", budget: 2, replies: []string{lndlBlock("<lvar a>x"), lndlBlock("<lvar a>x")}, calls: 2,
			msg: "(round_budget 2); last error: Parse error", lndlErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOperateBundle(t)
			lndlBranch(t, o, "b", append(tt.replies, lndlBlock(`OUT{total: 1, shout: "late"}`)))
			_, err := o.operate(t, "op1", "b", fmt.Sprintf(`{"instruction":"i","middle":"lndl","round_budget":%d,"response_format":%s}`, tt.budget, sumFormat))
			if code(err) != ops.CodeParse || !errors.Is(err, ops.ErrLNDLExhausted) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v, want parse_failed matching ErrLNDLExhausted with %q", err, tt.msg)
			}
			if errors.Is(err, lndl.ErrLNDL) != tt.lndlErr {
				t.Fatalf("errors.Is(err, lndl.ErrLNDL) = %v", !tt.lndlErr)
			}
			if o.prov.count() != tt.calls {
				t.Fatalf("%d model calls, want %d", o.prov.count(), tt.calls)
			}
			if n := len(o.rounds("op1")); n != tt.budget {
				t.Fatalf("%d round signals, want %d", n, tt.budget)
			}
		})
	}
}

// 0024-D2-04, 0024-D2-06, 0024-D2-07, 0024-D3-01, 0024-D5-04: round one
// sends the caller's instruction with the LNDL guidance (prompt, Specs
// line, caller's guidance); no round offers native tools or a native
// response format; round two sends "Round 2 of 3." with round one's
// parse error and the caller's guidance alone.
func TestLNDL_0024_D2_04_guidance_and_round_messages(t *testing.T) {
	o := newOperateBundle(t)
	lndlBranch(t, o, "b", []string{
		lndlBlock("<lvar a>unclosed"),
		"No fence this time: <lvar a>x</lvar> OUT{total: [a]}",
		"~~~LNDL\nOUT{total: 5, shout: \"Z\"}\n~~~\n",
	}, "add")
	res, err := o.operate(t, "op1", "b", `{"instruction":"do it","guidance":"be brief","middle":"lndl","actions":true,"response_format":`+sumFormat+`}`)
	if err != nil {
		t.Fatal(err)
	}
	// 0024-D3-01: a tilde fence tagged LNDL in another case is read.
	if got := outcomes(opstest.LNDLRounds(t, res)); got != "retry continue success" {
		t.Fatalf("rounds %s", got)
	}
	ins := o.instructions(t, "b")
	if len(ins) != 3 {
		t.Fatalf("%d instructions", len(ins))
	}
	g1, _ := ins[0].Content[history.KeyGuidance].(string)
	if !strings.HasPrefix(g1, strings.TrimRight(lndl.SystemPrompt, "\n")) ||
		!strings.HasSuffix(g1, "\n\nSpecs: total(Any), shout(str), action_requests(list[ActionRequest: arguments, function]), action_required(bool)\n\nbe brief") {
		t.Fatalf("round 1 guidance ends %q", g1[max(0, len(g1)-200):])
	}
	if ins[0].Content[history.KeyInstruction] != "do it" {
		t.Fatalf("round 1 instruction %v", ins[0].Content[history.KeyInstruction])
	}
	for i, m := range ins {
		if m.Content[history.KeyResponseFormat] != nil || m.Content[history.KeyToolSchemas] != nil {
			t.Fatalf("round %d offers native contracts: %v", i+1, m.Content)
		}
		if i > 0 && m.Content[history.KeyGuidance] != "be brief" {
			t.Fatalf("round %d guidance %q", i+1, m.Content[history.KeyGuidance])
		}
	}
	i2 := ins[1].Content[history.KeyInstruction].(string)
	if !strings.HasPrefix(i2, "Round 2 of 3.") || !strings.Contains(i2, "Unclosed lvar tag") {
		t.Fatalf("round 2 instruction %q", i2)
	}
	// Round 3 follows a continue: no repair message (0024-D2-07), but
	// the older error stays the last one (0024-D5-04, see the
	// exhaustion test).
	if i3 := ins[2].Content[history.KeyInstruction].(string); !strings.HasPrefix(i3, "Round 3 of 3. This is the last round") || strings.Contains(i3, "Error:") {
		t.Fatalf("round 3 instruction %q", i3)
	}
}

// 0024-D5-04: a continue keeps the last repair error, so exhaustion after
// a retry then a continue names the retry's error.
func TestLNDL_0024_D5_04_stale_error_explains_exhaustion(t *testing.T) {
	o := newOperateBundle(t)
	lndlBranch(t, o, "b", []string{lndlBlock("OUT{total: [nope], shout: \"A\"}"), "thinking, no block"})
	_, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","round_budget":2,"response_format":`+sumFormat+`}`)
	var mle *lndl.MissingLvarError
	if !errors.Is(err, ops.ErrLNDLExhausted) || !errors.As(err, &mle) || !strings.Contains(err.Error(), "undeclared alias 'nope'") {
		t.Fatalf("err = %v", err)
	}
}

// 0024-D2-05 (as lionbus intends it): guidance that is not a string is
// rendered as JSON text in round one's guidance; later rounds keep it as
// the caller gave it.
func TestLNDL_0024_D2_05_non_string_guidance(t *testing.T) {
	o := newOperateBundle(t)
	lndlBranch(t, o, "b", []string{"no block", lndlBlock(`OUT{total: 1, shout: "A"}`)})
	if _, err := o.operate(t, "op1", "b", `{"instruction":"i","guidance":{"tone":"dry","max":3},"middle":"lndl","response_format":`+sumFormat+`}`); err != nil {
		t.Fatal(err)
	}
	ins := o.instructions(t, "b")
	if g, _ := ins[0].Content[history.KeyGuidance].(string); !strings.HasSuffix(g, "\n\n"+`{"max":3,"tone":"dry"}`) {
		t.Fatalf("round 1 guidance ends %q", g[max(0, len(g)-80):])
	}
	if got := compact(t, ins[1].Content[history.KeyGuidance]); got != `{"max":3,"tone":"dry"}` {
		t.Fatalf("round 2 guidance %s", got)
	}
}

// 0024-D2-01, 0024-D2-02, 0024-D2-03: the target is operate's generated
// schema (reason added), its fields in the caller's declaration order,
// optionals marked, nested models by name and fields; a target without
// fields adds no Specs line.
func TestLNDL_0024_D2_01_target_rendering(t *testing.T) {
	const format = `{"title":"Doc","type":"object","properties":{
		"zeta":{"type":"string"},
		"alpha":{"anyOf":[{"type":"integer"},{"type":"null"}],"default":null},
		"parts":{"type":"array","items":{"$ref":"#/$defs/Part"}}},
		"required":["zeta","parts"],
		"$defs":{"Part":{"title":"Part","type":"object","properties":{"name":{"type":"string"},"size":{"type":"integer"}},"required":["name"]}}}`
	tests := []struct {
		name, data, specs string
	}{
		{name: "generated, in declaration order", data: `{"instruction":"i","middle":"lndl","reason":true,"skip_validation":true,"response_format":` + format + `}`,
			specs: "Specs: zeta(str), alpha(int, optional), parts(list[Part: name, size]), reason(Reason: confidence_score, content, title)"},
		{name: "no fields, no Specs line", data: `{"instruction":"i","middle":"lndl","skip_validation":true,"response_format":{"type":"object","properties":{}}}`},
		{name: "no target, no Specs line", data: `{"instruction":"i","middle":"lndl","skip_validation":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOperateBundle(t)
			lndlBranch(t, o, "b", []string{lndlBlock(`OUT{zeta: "z", parts: []}`)})
			if _, err := o.operate(t, "op1", "b", tt.data); err != nil {
				t.Fatal(err)
			}
			g, _ := o.instructions(t, "b")[0].Content[history.KeyGuidance].(string)
			lines := strings.Split(g, "\n")
			last := lines[len(lines)-1]
			if tt.specs == "" {
				if g != strings.TrimRight(lndl.SystemPrompt, "\n") {
					t.Fatalf("guidance has more than the system prompt: %q", last)
				}
				return
			}
			if last != tt.specs {
				t.Fatalf("Specs line %q\nwant       %q", last, tt.specs)
			}
		})
	}
}

// 0024-D3-02, 0024-D3-03, 0024-D5-08 (as lionbus intends them): an empty
// reply and tags outside any fence are continue rounds, not errors.
func TestLNDL_0024_D3_02_empty_and_unfenced_continue(t *testing.T) {
	o := newOperateBundle(t)
	lndlBranch(t, o, "b", []string{"", "<lvar a>x</lvar>\nOUT{total: [a]}", lndlBlock(`OUT{total: 2, shout: "B"}`)})
	res, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","response_format":`+sumFormat+`}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomes(opstest.LNDLRounds(t, res)); got != "continue continue success" || string(res.Value) != `{"shout":"B","total":2}` {
		t.Fatalf("rounds %s, value %s", got, res.Value)
	}
}

// 0024-D3-06, 0024-D3-07, 0024-D3-08: a malformed call, a missing alias
// or required field, and OUT nested deeper than 32 are retries whose
// error is the next round's repair message.
func TestLNDL_0024_D3_06_language_errors_retry(t *testing.T) {
	tests := []struct {
		name, reply, errText string
	}{
		{name: "0024-D3-06 malformed call", reply: lndlBlock("<lact a>add(x=y)</lact>"), errText: "body is not a parseable function call"},
		{name: "0024-D3-07 missing alias", reply: lndlBlock(`OUT{total: [ghost], shout: "A"}`), errText: "undeclared alias 'ghost'"},
		{name: "0024-D3-07 missing field", reply: lndlBlock(`OUT{total: 1}`), errText: "missing required field(s): shout"},
		{name: "0024-D3-08 nesting deeper than 32", reply: lndlBlock("OUT{total: " + strings.Repeat("[", 40) + "1" + strings.Repeat("]", 40) + `, shout: "A"}`), errText: "nesting too deep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOperateBundle(t)
			lndlBranch(t, o, "b", []string{tt.reply, lndlBlock(`OUT{total: 1, shout: "A"}`)}, "add")
			res, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","response_format":`+sumFormat+`}`)
			if err != nil {
				t.Fatal(err)
			}
			if r := opstest.LNDLRounds(t, res)[0]; r.Outcome != ops.RoundRetry || !strings.Contains(r.Error, tt.errText) || len(r.Actions) != 0 {
				t.Fatalf("round 1 %+v", r)
			}
			if i2 := o.instructions(t, "b")[1].Content[history.KeyInstruction].(string); !strings.Contains(i2, tt.errText) {
				t.Fatalf("round 2 instruction %q", i2)
			}
			if o.tools.Calls(ops.ToolCallKey("op1/middle/round1/act", 0)) != 0 {
				t.Fatal("a retry round ran an action")
			}
		})
	}
}

// 0024-D3-11 (as lionbus intends it): a note written in round one fills
// a field from OUT in round three.
func TestLNDL_0024_D3_11_notes_cross_rounds(t *testing.T) {
	o := newOperateBundle(t)
	lndlBranch(t, o, "b", []string{
		lndlBlock("<lvar note.plan>LOUD</lvar>"),
		"Still thinking.",
		lndlBlock("OUT{total: 7, shout: [note.plan]}"),
	})
	res, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","response_format":`+sumFormat+`}`)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) != `{"shout":"LOUD","total":7}` {
		t.Fatalf("value %s", res.Value)
	}
	if n := opstest.LNDLRounds(t, res)[0].Notes; n != 1 {
		t.Fatalf("notes after round 1: %d", n)
	}
}

// 0024-D3-11: notes are bounded; a round leaving more than MaxLNDLNotes
// is a retry, and its notes are not kept.
func TestLNDL_0024_D3_11_notes_bounded(t *testing.T) {
	var b strings.Builder
	for i := range ops.MaxLNDLNotes + 1 {
		fmt.Fprintf(&b, "<lvar note.n%d>v</lvar>\n", i)
	}
	big := lndlBlock("<lvar note.big>" + strings.Repeat("x", ops.MaxLNDLNotesBytes) + "</lvar>")
	for _, tt := range []struct{ name, reply, errText string }{
		{"count", lndlBlock(b.String()), "65 notes, at most 64"},
		{"size", big, "at most 65536 are kept"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := newOperateBundle(t)
			lndlBranch(t, o, "b", []string{tt.reply, lndlBlock(`OUT{total: 1, shout: [note.n0]}`), lndlBlock(`OUT{total: 1, shout: "A"}`)})
			res, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","response_format":`+sumFormat+`}`)
			if err != nil {
				t.Fatal(err)
			}
			// Round 2 cannot use the dropped note: note.n0 resolves to
			// nothing, so shout is missing and validation rejects it.
			if got := outcomes(opstest.LNDLRounds(t, res)); got != "retry rejected success" || !strings.Contains(opstest.LNDLRounds(t, res)[0].Error, tt.errText) || opstest.LNDLRounds(t, res)[0].Notes != 0 {
				t.Fatalf("rounds %+v", opstest.LNDLRounds(t, res))
			}
		})
	}
}

// 0024-D4-02, 0024-D4-08: a round with OUT runs only the lacts OUT
// reaches; their results replace the placeholders.
func TestLNDL_0024_D4_02_only_reachable_lacts_run(t *testing.T) {
	o := newOperateBundle(t)
	lndlBranch(t, o, "b", []string{lndlBlock("<lact s>add(x=2, y=3)</lact>\n<lact scratch>upper(s=\"never\")</lact>\nOUT{total: [s], shout: \"A\"}")}, "add", "upper")
	res, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","response_format":`+sumFormat+`}`)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) != `{"shout":"A","total":{"sum":5}}` {
		t.Fatalf("value %s", res.Value)
	}
	if got := compact(t, opstest.LNDLRounds(t, res)[0].Actions); got != `[{"alias":"s","function":"add"}]` {
		t.Fatalf("actions %s", got)
	}
	if o.tools.Calls(ops.ToolCallKey("op1/middle/round1/act", 0)) != 1 || o.tools.Calls(ops.ToolCallKey("op1/middle/round1/act", 1)) != 0 {
		t.Fatal("want exactly the referenced lact run")
	}
}

// 0024-D4-07: a continue round overwrites an alias's result; an OUT round
// redeclaring a resolved alias reads the earlier result and runs nothing.
func TestLNDL_0024_D4_07_alias_rules(t *testing.T) {
	t.Run("continue overwrites", func(t *testing.T) {
		o := newOperateBundle(t)
		lndlBranch(t, o, "b", []string{
			lndlBlock("<lact a>add(x=1, y=2)</lact>"),
			lndlBlock("<lact a>add(x=10, y=20)</lact>"),
			lndlBlock(`OUT{total: [a], shout: "A"}`),
		}, "add")
		res, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","response_format":`+sumFormat+`}`)
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Value) != `{"shout":"A","total":{"sum":30}}` {
			t.Fatalf("value %s", res.Value)
		}
	})
	t.Run("OUT round reuses", func(t *testing.T) {
		o := newOperateBundle(t)
		lndlBranch(t, o, "b", []string{
			lndlBlock("<lact a>add(x=1, y=2)</lact>"),
			lndlBlock("<lact a>add(x=100, y=200)</lact>\nOUT{total: [a], shout: \"A\"}"),
		}, "add")
		res, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","response_format":`+sumFormat+`}`)
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Value) != `{"shout":"A","total":{"sum":3}}` || len(opstest.LNDLRounds(t, res)[1].Actions) != 0 {
			t.Fatalf("value %s, round 2 %+v", res.Value, opstest.LNDLRounds(t, res)[1])
		}
		if o.tools.Calls(ops.ToolCallKey("op1/middle/round2/act", 0)) != 0 {
			t.Fatal("the redeclared lact ran")
		}
	})
}

// 0024-D4-04, 0024-D4-09: calls go through act's governance (a tool the
// branch does not allow is denied as a value) and a failed tool is a
// value the next round sees and can use.
func TestLNDL_0024_D4_09_failures_are_values(t *testing.T) {
	o := newOperateBundle(t)
	lndlBranch(t, o, "b", []string{
		lndlBlock("<lact f>fails()</lact>\n<lact d>upper(s=\"x\")</lact>"),
		lndlBlock(`OUT{total: [f], shout: "recovered"}`),
	}, "fails")
	res, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","response_format":`+sumFormat+`}`)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) != `{"shout":"recovered","total":{"error":{"code":"bad_input","message":"x is required"}}}` {
		t.Fatalf("value %s", res.Value)
	}
	if got := compact(t, opstest.LNDLRounds(t, res)[0].Actions); got != `[{"alias":"f","function":"fails","error_code":"bad_input"},{"alias":"d","function":"upper","error_code":"denied"}]` {
		t.Fatalf("actions %s", got)
	}
	if i2 := o.instructions(t, "b")[1].Content[history.KeyInstruction].(string); !strings.Contains(i2, "x is required") {
		t.Fatalf("round 2 instruction %q", i2)
	}
	// The hooks of the allowed call, none for the denied one.
	if got := strings.Join(o.toolSignals("op1/middle/round1/act"), ", "); !strings.HasPrefix(got, "tool.pre fails, tool.error fails, message.added action_request") {
		t.Fatalf("signals of the act stage: %s", got)
	}
}

// 0024-D4-10, 0024-D5-01, 0024-D5-09 (the skip_validation exception):
// skip_validation still runs the bridge but returns the assembled value
// unvalidated, and operate applies nothing to it; the target carries the
// caller's constraints, so without it a value breaking them is rejected
// by the middle itself (0024-D5-02).
func TestLNDL_0024_D4_10_skip_validation(t *testing.T) {
	o := newOperateBundle(t)
	lndlBranch(t, o, "b", []string{lndlBlock(`<lact s>add(x=1, y=1)</lact>` + "\nOUT{total: [s], shout: 5}")}, "add")
	res, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","skip_validation":true,"response_format":`+sumFormat+`}`)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) != `{"total":{"sum":2},"shout":5}` || o.tools.Calls(ops.ToolCallKey("op1/middle/round1/act", 0)) != 1 {
		t.Fatalf("value %s", res.Value)
	}
	// 0024-D5-09: the caller's schema still decides under raise.
	o2 := newOperateBundle(t)
	lndlBranch(t, o2, "b", []string{lndlBlock(`OUT{total: 1, shout: "abc"}`)})
	strict := `{"type":"object","properties":{"total":{},"shout":{"type":"string","maxLength":2}},"required":["total","shout"]}`
	if _, err := o2.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","round_budget":1,"handle_validation":"raise","response_format":`+strict+`}`); code(err) != ops.CodeParse {
		t.Fatalf("err = %v", err)
	}
}

// 0024-D5-09, 0022-D4-01: outside skip_validation the middle's value
// faces operate's own steps: with actions, the action_requests the LNDL
// answer assembled (here a lact's list result) run in operate's act
// stage and their responses enrich the value.
func TestLNDL_0024_D5_09_value_faces_operate(t *testing.T) {
	tools := opstest.NewToolFuncs(map[string]opstest.ToolFunc{
		"add": func(_ context.Context, a map[string]any) (any, error) {
			x, _ := a["x"].(float64)
			y, _ := a["y"].(float64)
			return x + y, nil
		},
		"plan": func(context.Context, map[string]any) (any, error) {
			return []any{map[string]any{"function": "add", "arguments": map[string]any{"x": 1, "y": 2}}}, nil
		},
	})
	o := newOperateBundleWith(t, func(c *ops.Config) { c.Tools = tools })
	lndlBranch(t, o, "b", []string{lndlBlock("<lact p>plan()</lact>\nOUT{total: 1, shout: \"A\", action_requests: [p]}")}, "add", "plan")
	res, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","actions":true,"response_format":`+sumFormat+`}`)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := value(t, res).(map[string]any)
	if got := compact(t, v["action_responses"]); got != `[{"arguments":{"x":1,"y":2},"function":"add","output":3}]` {
		t.Fatalf("value %s", res.Value)
	}
	if tools.Calls(ops.ToolCallKey("op1/act", 0)) != 1 || tools.Calls(ops.ToolCallKey("op1/middle/round1/act", 0)) != 1 {
		t.Fatal("want plan run by the middle and add by operate's act stage")
	}
}

// 0024-D5-02, 0024-D5-03: a value that does not validate is never
// returned; the validation error is repair text, and the loop stops at
// the first valid round.
func TestLNDL_0024_D5_02_rejected_then_valid(t *testing.T) {
	o := newOperateBundle(t)
	lndlBranch(t, o, "b", []string{
		lndlBlock(`OUT{total: 1, shout: [x]}` + "\n<lvar x>" + "</lvar>"),
		lndlBlock(`OUT{total: 1, shout: 42}`),
		lndlBlock(`OUT{total: 1, shout: "ok"}`),
		lndlBlock(`OUT{total: 2, shout: "unused"}`),
	})
	res, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","round_budget":4,"response_format":`+sumFormat+`}`)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) != `{"shout":"ok","total":1}` || o.prov.count() != 3 {
		t.Fatalf("value %s after %d calls", res.Value, o.prov.count())
	}
	if r := opstest.LNDLRounds(t, res)[1]; r.Outcome != ops.RoundRejected || !strings.Contains(r.Error, "shout") || r.BudgetLeft != 2 {
		t.Fatalf("round 2 %+v", r)
	}
	if i3 := o.instructions(t, "b")[2].Content[history.KeyInstruction].(string); !strings.Contains(i3, "does not fit the Specs line") {
		t.Fatalf("round 3 instruction %q", i3)
	}
}

// 0024-D5-07, 0024-D3-10: a provider failure ends the invocation as it
// is, not as a retry.
func TestLNDL_0024_D5_07_transport_errors_pass_through(t *testing.T) {
	o := newOperateBundle(t)
	b, _ := json.Marshal(map[string]any{"branch_id": "b", "chat_model": map[string]any{"provider": "scripted",
		"replies": []any{lndlBlock("<lvar a>x</lvar>"), map[string]any{"error": "boom"}}}})
	o.mustDo(t, "branch.create", "", string(b))
	_, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","response_format":`+sumFormat+`}`)
	var pe *ops.ProviderError
	if code(err) != ops.CodeProvider || !errors.As(err, &pe) || errors.Is(err, ops.ErrLNDLExhausted) {
		t.Fatalf("err = %v, want the provider error", err)
	}
}

// A redelivered request replays every round and action stage from
// history: no model call, no tool call, the same value.
func TestLNDL_redelivery_replays(t *testing.T) {
	o := newOperateBundle(t)
	lndlBranch(t, o, "b", []string{
		lndlBlock("<lact s>add(x=1, y=2)</lact>"),
		lndlBlock("OUT{total: [s], shout: \"A\"}"),
	}, "add")
	data := `{"instruction":"i","middle":"lndl","response_format":` + sumFormat + `}`
	first, err := o.operate(t, "op1", "b", data)
	if err != nil {
		t.Fatal(err)
	}
	again, err := o.operate(t, "op1", "b", data)
	if err != nil {
		t.Fatal(err)
	}
	if string(again.Value) != string(first.Value) || !again.Replayed || first.Replayed || o.prov.count() != 2 ||
		o.tools.Calls(ops.ToolCallKey("op1/middle/round1/act", 0)) != 1 || outcomes(opstest.LNDLRounds(t, again)) != "continue success" {
		t.Fatalf("replay: %s (replayed %v), %d model calls", again.Value, again.Replayed, o.prov.count())
	}
}

// A target operate's response_format cannot give is a request error before
// any model call.
func TestLNDL_unusable_target(t *testing.T) {
	o := newOperateBundle(t)
	lndlBranch(t, o, "b", []string{"x"})
	_, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","response_format":{"type":"string"}}`)
	if code(err) != ops.CodeInvalidRequest || o.prov.count() != 0 {
		t.Fatalf("err = %v after %d calls", err, o.prov.count())
	}
}

// 0024-D1-07: parse parameters are accepted and unused: every round goes
// to the chat model, and no reformat round runs.
func TestLNDL_0024_D1_07_parse_parameters_unused(t *testing.T) {
	o := newOperateBundle(t)
	lndlBranch(t, o, "b", []string{"not lndl", lndlBlock(`OUT{total: 1, shout: "A"}`)})
	res, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","parse_model":"scripted:nope","num_parse_retries":5,"response_format":`+sumFormat+`}`)
	if err != nil {
		t.Fatal(err)
	}
	if o.prov.count() != 2 || o.prov.last().Model.Provider != "scripted" || o.prov.last().Model.Model != "" || len(opstest.LNDLRounds(t, res)) != 2 {
		t.Fatalf("%d calls, last to %v", o.prov.count(), o.prov.last().Model)
	}
}

// 0024-D3-04, 0024-D3-09: the conservative repairs apply (curly tags, a
// name= attribute, a lact missing ">"), and placeholders are found in
// nested lists.
func TestLNDL_0024_D3_04_normalized_replies(t *testing.T) {
	tests := []struct{ name, reply, want string }{
		{"curly tags", lndlBlock("{lact s}add(x=1, y=1){/lact}\nOUT{total: [s], shout: \"A\"}"), `{"shout":"A","total":{"sum":2}}`},
		{"name attribute", lndlBlock("<lvar name=\"u\">loud</lvar>\nOUT{total: 1, shout: [u]}"), `{"shout":"loud","total":1}`},
		{"missing >", lndlBlock("<lact s add(x=2, y=2)</lact>\nOUT{total: [s], shout: \"A\"}"), `{"shout":"A","total":{"sum":4}}`},
		{"nested group", lndlBlock("<lact s>add(x=3, y=3)</lact>\nOUT{total: [[s]], shout: \"A\"}"), `{"shout":"A","total":[{"sum":6}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOperateBundle(t)
			lndlBranch(t, o, "b", []string{tt.reply}, "add")
			res, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","round_budget":1,"response_format":`+sumFormat+`}`)
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Value) != tt.want {
				t.Fatalf("value %s, want %s", res.Value, tt.want)
			}
		})
	}
}

// 0024-D4-04: the request's tools selection narrows what a round may run,
// as it narrows operate's own act stage.
func TestLNDL_0024_D4_04_tools_selection(t *testing.T) {
	o := newOperateBundle(t)
	lndlBranch(t, o, "b", []string{lndlBlock("<lact s>add(x=1, y=1)</lact>\n<lact u>upper(s=\"x\")</lact>\nOUT{total: [s], shout: [u]}")}, "add", "upper")
	res, err := o.operate(t, "op1", "b", `{"instruction":"i","middle":"lndl","tools":["add"],"skip_validation":true,"response_format":`+sumFormat+`}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := compact(t, opstest.LNDLRounds(t, res)[0].Actions); got != `[{"alias":"s","function":"add"},{"alias":"u","function":"upper","error_code":"denied"}]` {
		t.Fatalf("actions %s", got)
	}
	if o.tools.Calls(ops.ToolCallKey("op1/middle/round1/act", 1)) != 0 {
		t.Fatal("a tool outside the selection ran")
	}
}
