package bus_test

// operate end to end: the scripted model asks for two tool calls, the
// worker's act stage runs them, and the result carries their responses.

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

func TestAcceptance_operate_with_actions_over_the_bus(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	tools := opstest.NewToolFuncs(map[string]opstest.ToolFunc{
		"add": func(_ context.Context, a map[string]any) (any, error) {
			x, _ := a["x"].(float64)
			y, _ := a["y"].(float64)
			return map[string]any{"sum": x + y}, nil
		},
		"upper": func(_ context.Context, a map[string]any) (any, error) {
			s, _ := a["s"].(string)
			return strings.ToUpper(s), nil
		},
	})
	startToolWorker(t, b, tools)
	reply := `{"answer": "done", "action_required": true, "action_requests": [` +
		`{"function": "add", "arguments": {"x": 1, "y": 2}}, {"function": "upper", "arguments": {"s": "hi"}}]}`
	bustest.MustResult(t, b.Do(t, "branch.create", "", map[string]any{
		"branch_id": "op", "tools": []string{"add", "upper"},
		"chat_model": map[string]any{"provider": "scripted", "replies": []string{reply}},
	}), nil)

	format := map[string]any{"title": "Work", "type": "object",
		"properties": map[string]any{"answer": map[string]any{"type": "string"}}, "required": []string{"answer"}}
	r := b.Do(t, "operate", "op", map[string]any{
		"instruction": "add 1 and 2, upper-case hi", "response_format": format, "actions": true, "handle_validation": "raise",
	})
	bustest.CheckSchema(t, r)
	var got map[string]any
	bustest.MustResult(t, r, &got)
	reqID, _ := r.Event.Extensions()[protocol.ExtRequestID].(string)

	// The value validates against the generated response schema: the
	// caller's fields, the generated ones and action_responses.
	respSchema := `{"type":"object","required":["answer","action_responses"],"properties":{
		"answer":{"type":"string"},"action_required":{"type":["boolean","null"]},
		"action_requests":{"type":"array","items":{"type":"object","required":["function"]}},
		"action_responses":{"type":"array","minItems":2,"maxItems":2,"items":{"type":"object","required":["function","arguments","output"]}}},
		"additionalProperties":false}`
	validateValue(t, respSchema, any(got))
	if out, _ := json.Marshal(got["action_responses"]); string(out) !=
		`[{"arguments":{"x":1,"y":2},"function":"add","output":{"sum":3}},{"arguments":{"s":"hi"},"function":"upper","output":"HI"}]` {
		t.Fatalf("action_responses %s", out)
	}

	// History: the middle's exchange, then the act stage's calls.
	evs := b.History(t, "op")
	var kinds []string
	for _, ev := range evs {
		for _, m := range ev.Messages {
			kinds = append(kinds, string(m.Kind))
		}
	}
	slices.Sort(kinds[2:])
	if strings.Join(kinds, " ") != "instruction assistant_response action_request action_request action_response action_response" {
		t.Fatalf("history messages %v", kinds)
	}

	// Events: run.start, the middle's two message.added, the four hooks and
	// the act stage's four message.added, then run.end.
	events := branchEvents(t, b, "op", 1+2+4+4+1)
	var types []string
	for _, ev := range events {
		var d protocol.SignalData
		if err := json.Unmarshal(ev.Data(), &d); err != nil {
			t.Fatal(err)
		}
		if d.Verb != "operate" || !strings.HasPrefix(d.RequestID, reqID) {
			t.Errorf("event %s data %s", ev.Type(), ev.Data())
		}
		types = append(types, ev.Type())
	}
	if types[0] != protocol.EventTypeRunStart || types[len(types)-1] != protocol.EventTypeRunEnd {
		t.Fatalf("events %v: want run.start first and run.end last", types)
	}
	count := map[string]int{}
	for _, ty := range types {
		count[ty]++
	}
	if count[protocol.EventTypeToolPre] != 2 || count[protocol.EventTypeToolPost] != 2 || count[protocol.EventTypeMessageAdded] != 6 ||
		count[protocol.EventTypeRunEnd] != 1 || count[protocol.EventTypeRunFailed] != 0 {
		t.Fatalf("events %v", types)
	}
}
