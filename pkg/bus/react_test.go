package bus_test

// react end to end: the scripted model asks for a tool call in round 0,
// needs one extension round, then answers; the worker runs the tool, the
// rounds stream as chunks, and the react emits one lifecycle.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

func TestAcceptance_react_streams_rounds_over_the_bus(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	startToolWorker(t, b, opstest.NewToolFuncs(map[string]opstest.ToolFunc{
		"add": func(_ context.Context, a map[string]any) (any, error) {
			x, _ := a["x"].(float64)
			y, _ := a["y"].(float64)
			return map[string]any{"sum": x + y}, nil
		},
	}))
	replies := []string{
		`{"analysis": "I need the sum.", "planned_actions": [{"action_type": "add", "description": "add 2 and 5"}], "extension_needed": true,` +
			` "action_required": true, "action_requests": [{"function": "add", "arguments": {"x": 2, "y": 5}}]}`,
		`{"analysis": "add returned 7.", "planned_actions": [], "extension_needed": false, "milestone": "sum known"}`,
		`{"answer": 7}`,
	}
	bustest.MustResult(t, b.Do(t, "branch.create", "", map[string]any{
		"branch_id": "re", "tools": []string{"add"},
		"chat_model": map[string]any{"provider": "scripted", "replies": replies},
	}), nil)

	format := map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "number"}}, "required": []string{"answer"}}
	var chunks []ops.Chunk
	id, reply, err := b.Client.Stream(bustest.Ctx(t), "react", "re", map[string]any{
		"instruction": "What is 2 + 5? Use the add tool.", "response_format": format, "stream": true,
	}, func(c ops.Chunk) error {
		chunks = append(chunks, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	bustest.CheckSchema(t, reply)
	var answer map[string]any
	res := bustest.MustResult(t, reply, &answer)
	if answer["answer"] != float64(7) || len(opstest.Analyses(t, res)) != 2 {
		t.Fatalf("value %v, analyses %s", answer, opstest.Analyses(t, res))
	}
	var round0 map[string]any
	if err := json.Unmarshal(opstest.Analyses(t, res)[0], &round0); err != nil {
		t.Fatal(err)
	}
	if out, _ := json.Marshal(round0["action_responses"]); string(out) != `[{"arguments":{"x":2,"y":5},"function":"add","output":{"sum":7}}]` {
		t.Fatalf("round 0 action_responses %s", out)
	}

	// 0021-D2-08: one round chunk per round, in order, the answer last.
	var phases []string
	for i, c := range chunks {
		if c.Kind != ops.ChunkRound || c.Seq != uint64(i+1) {
			t.Fatalf("chunk %d: %+v", i, c)
		}
		phases = append(phases, c.Metadata["phase"].(string))
	}
	if strings.Join(phases, " ") != "analysis analysis answer" || chunks[1].Content != "add returned 7." {
		t.Fatalf("chunks %+v", chunks)
	}

	// History: round 0's exchange and tool call, the extension round, the
	// answer.
	var kinds []string
	for _, ev := range b.History(t, "re") {
		for _, m := range ev.Messages {
			kinds = append(kinds, string(m.Kind))
		}
	}
	if got := strings.Join(kinds, " "); got != "instruction assistant_response action_request action_response instruction assistant_response instruction assistant_response" {
		t.Fatalf("history %s", got)
	}

	// 0021-D4-04: one run.start and one terminal event, the react's; the
	// rounds publish their messages and hooks under their stage ids.
	events := branchEvents(t, b, "re", 1+2+2+2+2+2+1)
	count := map[string]int{}
	for _, ev := range events {
		var d protocol.SignalData
		if err := json.Unmarshal(ev.Data(), &d); err != nil {
			t.Fatal(err)
		}
		if d.Verb != "react" || (d.RequestID != id && !strings.HasPrefix(d.RequestID, id+"/react/")) {
			t.Errorf("event %s data %s", ev.Type(), ev.Data())
		}
		if strings.HasPrefix(ev.Type(), protocol.EventTypePrefix+"run.") && d.RequestID != id {
			t.Errorf("a round emitted %s: %s", ev.Type(), ev.Data())
		}
		count[ev.Type()]++
	}
	if events[0].Type() != protocol.EventTypeRunStart || events[len(events)-1].Type() != protocol.EventTypeRunEnd ||
		count[protocol.EventTypeRunStart] != 1 || count[protocol.EventTypeRunEnd] != 1 || count[protocol.EventTypeRunFailed] != 0 ||
		count[protocol.EventTypeMessageAdded] != 8 || count[protocol.EventTypeToolPre] != 1 || count[protocol.EventTypeToolPost] != 1 {
		t.Fatalf("events %v", count)
	}
}

func TestAcceptance_interpret_over_the_bus(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	startToolWorker(t, b, nil)
	bustest.MustResult(t, b.Do(t, "branch.create", "", map[string]any{
		"branch_id": "in", "chat_model": map[string]any{"provider": "scripted", "replies": []string{" Book the cheapest flight. "}},
	}), nil)
	r := b.Do(t, "interpret", "in", map[string]any{"text": "cheap flight pls", "domain": "travel"})
	bustest.CheckSchema(t, r)
	var got string
	bustest.MustResult(t, r, &got)
	if got != "Book the cheapest flight." {
		t.Fatalf("value %q", got)
	}
	if evs := b.History(t, "in"); len(evs) != 1 {
		t.Fatalf("interpret recorded: %d history events", len(evs))
	}
	if c := bustest.RemoteCode(t, b.Do(t, "interpret", "in", map[string]any{"text": ""})); c != protocol.CodeInvalidData && c != ops.CodeInvalidRequest {
		t.Fatalf("blank text: code %s", c)
	}
}
