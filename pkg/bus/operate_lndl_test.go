package bus_test

// operate with "middle": "lndl" end to end (ADR-0024, issue 12's
// acceptance): a worker started by bus.Start, the embedded server, the
// scripted model answering LNDL, and a tool service counting the calls
// it sees.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/tools/toolschema"
	"github.com/rs/zerolog"
)

// toolService counts the calls each tool sees.
type toolService struct {
	mu    sync.Mutex
	calls map[string]int
}

// seen returns how many calls tool saw.
func (s *toolService) seen(tool string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[tool]
}

// lndlToolService serves the LNDL tests' tools — "add" ({x, y} → x+y),
// "upper" ({s} → s upper-cased) and "lookup" ({key} → a string) — from a
// remote tool service on b's server (the pkg/tools SDK, in a queue group,
// registered in the registry), and returns the worker's NATS invoker of
// the registry and the service's call counts.
func lndlToolService(t *testing.T, b *bustest.Bus) (ops.Invoker, *toolService) {
	t.Helper()
	svc := &toolService{calls: map[string]int{}}
	count := func(name string, f func(map[string]any) any) tools.Handler {
		return func(_ context.Context, a map[string]any) (any, error) {
			svc.mu.Lock()
			svc.calls[name]++
			svc.mu.Unlock()
			return f(a), nil
		}
	}
	obj := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":` + props + `}`)
	}
	ctx := bustest.Ctx(t)
	served, err := tools.Serve(ctx, b.NC, tools.ServiceConfig{Compile: toolschema.Compile, Name: "lndl-tools", Version: "1.0.0", Tools: []tools.Tool{
		{Name: "add", Description: "Adds x and y.", Parameters: obj(`{"x":{"type":"number"},"y":{"type":"number"}}`),
			Handler: count("add", func(a map[string]any) any {
				x, _ := a["x"].(float64)
				y, _ := a["y"].(float64)
				return x + y
			})},
		{Name: "upper", Description: "Upper-cases s.", Parameters: obj(`{"s":{"type":"string"}}`),
			Handler: count("upper", func(a map[string]any) any {
				s, _ := a["s"].(string)
				return strings.ToUpper(s)
			})},
		{Name: "lookup", Description: "Looks a key up.", Parameters: obj(`{"key":{"type":"string"}}`),
			Handler: count("lookup", func(a map[string]any) any {
				k, _ := a["key"].(string)
				return "value of " + k
			})},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = served.Stop(context.Background()) })
	reg, err := tools.OpenRegistry(ctx, b.JS, "", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	bustest.WaitFor(t, 10*time.Second, "the tools in the registry", func() bool { return len(reg.List()) == 3 })
	inv, err := tools.NewInvoker(b.NC, tools.InvokerConfig{Registry: reg, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return inv, svc
}

// lndlReply is a model reply with one lndl block.
func lndlReply(body string) string { return "Let me see.\n```lndl\n" + body + "\n```\n" }

// reportFormat is the target of the acceptance tests.
var reportFormat = map[string]any{"title": "Report", "type": "object",
	"properties": map[string]any{
		"total": map[string]any{"type": "number"},
		"shout": map[string]any{"type": "string"},
	},
	"required": []string{"total", "shout"}}

// reportSchema checks a value against reportFormat, strictly.
const reportSchema = `{"type":"object","required":["total","shout"],"additionalProperties":false,"properties":{
	"total":{"type":"number"},"shout":{"type":"string"}}}`

// lndlSetup starts a worker with the tool service and creates branch id
// with the scripted replies and every tool.
func lndlSetup(t *testing.T, id string, replies ...string) (*bustest.Bus, *toolService) {
	t.Helper()
	b := bustest.New(t, provision.Config{})
	tools, svc := lndlToolService(t, b)
	startToolWorker(t, b, tools)
	bustest.MustResult(t, b.Do(t, "branch.create", "", map[string]any{
		"branch_id": id, "tools": []string{"add", "upper", "lookup"},
		"chat_model": map[string]any{"provider": "scripted", "replies": replies},
	}), nil)
	return b, svc
}

// lndlOperate runs an operate with the LNDL middle and the report target;
// extra adds to the data.
func lndlOperate(t *testing.T, b *bustest.Bus, branch string, extra map[string]any) (map[string]any, *ops.Result, string) {
	t.Helper()
	data := map[string]any{"instruction": "add 1 and 2, upper-case hi", "middle": "lndl", "response_format": reportFormat}
	for k, v := range extra {
		data[k] = v
	}
	r := b.Do(t, "operate", branch, data)
	bustest.CheckSchema(t, r)
	var got map[string]any
	res := bustest.MustResult(t, r, &got)
	reqID, _ := r.Event.Extensions()[protocol.ExtRequestID].(string)
	return got, res, reqID
}

// roundEvents returns the data of the lndl.round events among events.
func roundEvents(t *testing.T, events []*eventLike) []ops.LNDLRound {
	t.Helper()
	var out []ops.LNDLRound
	for _, ev := range events {
		if ev.typ == protocol.EventTypeLNDLRound {
			out = append(out, *ev.data.Round)
		}
	}
	return out
}

// eventLike is a stored event's type and data.
type eventLike struct {
	typ  string
	data protocol.SignalData
}

// storedEvents reads the n events of branch (see branchEvents: each
// checked against its schema).
func storedEvents(t *testing.T, b *bustest.Bus, branch string, n int) []*eventLike {
	t.Helper()
	var out []*eventLike
	for _, ev := range branchEvents(t, b, branch, n) {
		e := &eventLike{typ: ev.Type()}
		if err := json.Unmarshal(ev.Data(), &e.data); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// Acceptance: round 1 declares two lacts without OUT (both remote tools
// run), round 2 commits OUT citing their aliases; the result validates
// against the target; the branch shows both exchanges and the action
// messages; each round is an lndl.round event (0024-D1-01, 0024-D4-01,
// 0024-D4-06, 0024-D2-08).
func TestAcceptance_operate_lndl_two_rounds(t *testing.T) {
	t.Parallel()
	b, svc := lndlSetup(t, "ln",
		lndlReply("<lact s>add(x=1, y=2)</lact>\n<lact u>upper(s=\"hi\")</lact>"),
		lndlReply("OUT{total: [s], shout: [u]}"))
	got, res, reqID := lndlOperate(t, b, "ln", nil)
	validateValue(t, reportSchema, any(got))
	if s, _ := json.Marshal(got); string(s) != `{"shout":"HI","total":3}` {
		t.Fatalf("value %s", s)
	}
	if svc.seen("add") != 1 || svc.seen("upper") != 1 {
		t.Fatalf("tool calls: add %d, upper %d", svc.seen("add"), svc.seen("upper"))
	}
	if len(opstest.LNDLRounds(t, res)) != 2 || opstest.LNDLRounds(t, res)[0].Outcome != ops.RoundContinue || opstest.LNDLRounds(t, res)[1].Outcome != ops.RoundSuccess {
		t.Fatalf("rounds %+v", opstest.LNDLRounds(t, res))
	}

	// History: each round's exchange and round 1's action messages.
	var stages []string
	for _, ev := range b.History(t, "ln")[1:] {
		var k []string
		for _, m := range ev.Messages {
			k = append(k, string(m.Kind))
		}
		stages = append(stages, strings.TrimPrefix(ev.RequestID, reqID)+": "+strings.Join(k, " "))
	}
	want := "/middle/round1: instruction assistant_response\n" +
		"/middle/round1/act: action_request action_response action_request action_response\n" +
		"/middle/round2: instruction assistant_response"
	if strings.Join(stages, "\n") != want {
		t.Fatalf("history:\n%s\nwant:\n%s", strings.Join(stages, "\n"), want)
	}

	// Events: run.start; round 1's two message.added, four hooks, four
	// message.added and lndl.round; round 2's two message.added and
	// lndl.round; run.end.
	events := storedEvents(t, b, "ln", 1+2+4+4+1+2+1+1)
	if events[0].typ != protocol.EventTypeRunStart || events[len(events)-1].typ != protocol.EventTypeRunEnd {
		t.Fatalf("first and last events %s, %s", events[0].typ, events[len(events)-1].typ)
	}
	rounds := roundEvents(t, events)
	if len(rounds) != 2 || rounds[0].Round != 1 || rounds[0].BudgetLeft != 2 || len(rounds[0].Actions) != 2 || rounds[1].Outcome != ops.RoundSuccess {
		t.Fatalf("round events %+v", rounds)
	}
	for _, ev := range events {
		if ev.typ == protocol.EventTypeLNDLRound && !strings.HasPrefix(ev.data.RequestID, reqID+"/middle/round") {
			t.Errorf("lndl.round request id %q", ev.data.RequestID)
		}
	}
	if end := events[len(events)-1].data.Result; end == nil || len(opstest.LNDLRounds(t, end)) != 2 {
		t.Fatalf("run.end result %+v", end)
	}
}

// Acceptance: OUT with a scratch lact runs only the referenced one; the
// tool service sees one call (0024-D4-02).
func TestAcceptance_operate_lndl_scratch_lact_not_run(t *testing.T) {
	t.Parallel()
	b, svc := lndlSetup(t, "ln",
		lndlReply("<lact s>add(x=2, y=2)</lact>\n<lact scratch>lookup(key=\"unused\")</lact>\nOUT{total: [s], shout: \"ok\"}"))
	got, _, _ := lndlOperate(t, b, "ln", nil)
	validateValue(t, reportSchema, any(got))
	if svc.seen("add") != 1 || svc.seen("lookup") != 0 {
		t.Fatalf("tool calls: add %d, lookup %d; want 1 and 0", svc.seen("add"), svc.seen("lookup"))
	}
}

// Acceptance: a syntax error in round 1; round 2's instruction carries
// the error, and round 2 succeeds (0024-D3-05, 0024-D2-07).
func TestAcceptance_operate_lndl_repair(t *testing.T) {
	t.Parallel()
	b, _ := lndlSetup(t, "ln",
		lndlReply("<lvar t>unclosed\nOUT{total: [t]}"),
		lndlReply("<lact s>add(x=1, y=1)</lact>\nOUT{total: [s], shout: \"fixed\"}"))
	got, res, _ := lndlOperate(t, b, "ln", nil)
	validateValue(t, reportSchema, any(got))
	if opstest.LNDLRounds(t, res)[0].Outcome != ops.RoundRetry || !strings.Contains(opstest.LNDLRounds(t, res)[0].Error, "Unclosed lvar tag") {
		t.Fatalf("round 1 %+v", opstest.LNDLRounds(t, res)[0])
	}
	var round2 string
	for _, ev := range b.History(t, "ln") {
		if strings.HasSuffix(ev.RequestID, "/middle/round2") {
			round2, _ = ev.Messages[0].Content[history.KeyInstruction].(string)
		}
	}
	if !strings.HasPrefix(round2, "Round 2 of 3.") || !strings.Contains(round2, "Unclosed lvar tag - missing </lvar>") {
		t.Fatalf("round 2 instruction %q", round2)
	}
}

// Acceptance: budget 1 with no OUT is an exhaustion error answer naming
// the budget; budget 0 or "x" is a request error, and no model is
// called (0024-D1-04, 0024-D1-05, 0024-D5-05).
func TestAcceptance_operate_lndl_budget(t *testing.T) {
	t.Parallel()
	b, svc := lndlSetup(t, "ln", lndlReply("<lact s>add(x=1, y=1)</lact>"), lndlReply(`OUT{total: [s], shout: "late"}`))
	for _, budget := range []any{0, "x", 11, 1.5} {
		r := b.Do(t, "operate", "ln", map[string]any{"instruction": "i", "middle": "lndl", "round_budget": budget, "response_format": reportFormat})
		bustest.CheckSchema(t, r)
		if c := bustest.RemoteCode(t, r); (c != ops.CodeInvalidRequest && c != protocol.CodeInvalidData) || !strings.Contains(string(r.Data), "round_budget") {
			t.Fatalf("round_budget %v: %s %s", budget, c, r.Data)
		}
	}
	if evs := b.History(t, "ln"); len(evs) != 1 {
		t.Fatalf("%d history events after the refused requests, want the creation only", len(evs))
	}
	r := b.Do(t, "operate", "ln", map[string]any{"instruction": "i", "middle": "lndl", "round_budget": 1, "response_format": reportFormat})
	bustest.CheckSchema(t, r)
	if c := bustest.RemoteCode(t, r); c != ops.CodeParse || !strings.Contains(string(r.Data), "(round_budget 1): no OUT{} was produced") {
		t.Fatalf("budget 1: %s %s", c, r.Data)
	}
	// The one round ran its lact: a continue round runs what it declares.
	if svc.seen("add") != 1 {
		t.Fatalf("add ran %d times", svc.seen("add"))
	}
}

// Acceptance: a note written in round 1 and referenced in round 3's OUT
// fills the field (0024-D3-11, as lionbus intends it).
func TestAcceptance_operate_lndl_note_across_rounds(t *testing.T) {
	t.Parallel()
	b, _ := lndlSetup(t, "ln",
		lndlReply("<lvar note.loud>SAVED IN ROUND ONE</lvar>\n<lact s>add(x=4, y=5)</lact>"),
		"I still need a moment.",
		lndlReply("OUT{total: [s], shout: [note.loud]}"))
	got, res, _ := lndlOperate(t, b, "ln", nil)
	validateValue(t, reportSchema, any(got))
	if s, _ := json.Marshal(got); string(s) != `{"shout":"SAVED IN ROUND ONE","total":9}` {
		t.Fatalf("value %s", s)
	}
	if n := len(opstest.LNDLRounds(t, res)); n != 3 {
		t.Fatalf("%d rounds", n)
	}
	if got := fmt.Sprint(opstest.LNDLRounds(t, res)[0].Notes, opstest.LNDLRounds(t, res)[1].Notes); got != "1 1" {
		t.Fatalf("notes kept: %s", got)
	}
}
