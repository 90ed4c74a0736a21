package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/cmd/internal/render"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// demoBranch is the branch of the demo conversation. examples/communicate.json
// sends its request to the same branch.
const demoBranch = "demo"

// demoTimeout bounds each request of the demo.
const demoTimeout = 30 * time.Second

// demoSystem is the demo branch's system message.
const demoSystem = "You are a concise assistant in the lionbus demo."

// demoReplies is the script of the demo's chat model, one reply per model
// call on the branch. The second is JSON, so that a communicate with a
// response_format returns validated structured output; the third is the
// operate step's structured answer, asking for two tool calls. Each
// reports a token usage, as a real model does, which the worker's metrics
// count (lionbus_model_tokens_total).
var demoReplies = []any{
	demoReply("Hello! I am a scripted model, answering over NATS JetStream.", 31, 12),
	demoReply("Here you go:\n```json\n{\"city\": \"Paris\", \"country\": \"France\", \"population_millions\": 2.1}\n```", 58, 29),
	demoReply("```json\n{\"summary\": \"Asking the tools for the conversion and the saved note.\", \"action_required\": true, "+
		"\"action_requests\": [{\"function\": \"to_celsius\", \"arguments\": {\"fahrenheit\": 212}}, "+
		"{\"function\": \"note_get\", \"arguments\": {\"key\": \"motto\"}}]}\n```", 164, 61),
	demoReply("You're welcome. Goodbye!", 97, 6),
}

// demoReply is one scripted reply with its token usage.
func demoReply(text string, in, out int) map[string]any {
	return map[string]any{"text": text, "usage": map[string]any{"input_tokens": in, "output_tokens": out, "total_tokens": in + out}}
}

// demoCityFormat is the response_format of the demo's structured request.
var demoCityFormat = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"city":                map[string]any{"type": "string"},
		"country":             map[string]any{"type": "string"},
		"population_millions": map[string]any{"type": "number"},
	},
	"required":             []string{"city", "country", "population_millions"},
	"additionalProperties": false,
}

// demoStep is one communicate request of the demo.
type demoStep struct {
	instruction    string
	responseFormat map[string]any
}

// demoSteps are the communicate requests sent before the act and operate
// steps; demoLastStep is sent after them.
var demoSteps = []demoStep{
	{instruction: "Introduce yourself in one sentence."},
	{instruction: "Which city is the capital of France, and how many people live there?", responseFormat: demoCityFormat},
}

var demoLastStep = demoStep{instruction: "Thanks, that is all."}

// demoOperateInstruction is the instruction of the demo's operate step.
const demoOperateInstruction = `Convert 212 °F to Celsius, and read the note "motto".`

// demoReportFormat is the response_format of the demo's operate step. With
// actions, operate adds action_required and action_requests to what the
// model is asked for, and action_responses to the result.
var demoReportFormat = map[string]any{
	"title":      "Report",
	"type":       "object",
	"properties": map[string]any{"summary": map[string]any{"type": "string"}},
	"required":   []string{"summary"},
}

// runDemo runs the scripted demo conversation through the Go client, as any
// other client would: it creates the demo branch, sends the communicate,
// act and operate requests, prints each result and then the branch
// history and the count of the events the run added. With reuse
// (a persistent store), a demo branch left by an earlier run is deleted
// first.
func runDemo(ctx context.Context, nc *nats.Conn, subj protocol.Subjects, reuse bool, out io.Writer) error {
	client, err := client.New(nc, client.Config{Prefix: subj.Prefix, Source: "/lionbus/demo"})
	if err != nil {
		return err
	}
	do := func(verb, branch string, data any) (*ops.Result, error) {
		ctx, cancel := context.WithTimeout(ctx, demoTimeout)
		defer cancel()
		reply, err := client.Do(ctx, verb, branch, data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", verb, err)
		}
		res, err := reply.Result()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", verb, err)
		}
		return res, nil
	}

	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	// Events of an earlier demo (a persistent store) are still in the
	// events stream: count only what this run adds.
	eventsBefore, err := demoEventCounts(ctx, js, subj)
	if err != nil {
		return err
	}

	fmt.Fprintf(out, "\n── demo: a scripted conversation, sent over %s.ops.* ──\n\n", subj.Prefix)

	// The branch of an earlier demo is deleted and purged: its tombstone
	// stays in its history, and this run lists what comes after it.
	var tombstone uint64
	if reuse {
		res, err := do("branch.delete", demoBranch, map[string]any{"purge": true})
		if err != nil && !isCode(err, ops.CodeBranchNotFound) {
			return err
		}
		if err == nil {
			var del struct {
				Seq uint64 `json:"seq"`
			}
			_ = json.Unmarshal(res.Value, &del)
			tombstone = del.Seq
		}
	}
	res, err := do("branch.create", "", map[string]any{
		"branch_id":  demoBranch,
		"system":     demoSystem,
		"chat_model": map[string]any{"provider": "scripted", "replies": demoReplies},
		"tools":      demoToolNames,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "branch.create   branch %q, system message, scripted chat model (%d replies), tools %s\n",
		res.BranchID, len(demoReplies), strings.Join(demoToolNames, ", "))

	communicate := func(step demoStep) error {
		data := map[string]any{"instruction": step.instruction}
		fmt.Fprintf(out, "\ncommunicate     %s\n", step.instruction)
		if step.responseFormat != nil {
			data["response_format"] = step.responseFormat
			fmt.Fprintf(out, "                response_format: %s\n", schemaSummary(step.responseFormat))
		}
		res, err := do("communicate", demoBranch, data)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  → %s\n", render.CompactValue(res.Value))
		if step.responseFormat != nil {
			fmt.Fprintf(out, "    (structured output: JSON extracted from the reply and valid against response_format)\n")
		}
		return nil
	}
	for _, step := range demoSteps {
		if err := communicate(step); err != nil {
			return err
		}
	}

	fmt.Fprintf(out, "\nact             %d tool calls, authorized against the branch's tools\n", len(demoActions))
	if res, err = do("act", demoBranch, map[string]any{"action_requests": demoActions}); err != nil {
		return err
	}
	var responses []ops.ActionResponse
	if err := json.Unmarshal(res.Value, &responses); err != nil {
		return fmt.Errorf("act: decode: %w", err)
	}
	printActionResponses(out, "  ", responses)

	fmt.Fprintf(out, "\noperate         %s\n", demoOperateInstruction)
	fmt.Fprintf(out, "                response_format: %s, actions: true\n", schemaSummary(demoReportFormat))
	res, err = do("operate", demoBranch, map[string]any{
		"instruction":       demoOperateInstruction,
		"response_format":   demoReportFormat,
		"actions":           true,
		"handle_validation": "raise",
	})
	if err != nil {
		return err
	}
	var report map[string]json.RawMessage
	if err := json.Unmarshal(res.Value, &report); err != nil {
		return fmt.Errorf("operate: decode: %w", err)
	}
	responses = nil
	if raw, ok := report["action_responses"]; ok {
		if err := json.Unmarshal(raw, &responses); err != nil {
			return fmt.Errorf("operate: decode action_responses: %w", err)
		}
		delete(report, "action_responses")
	}
	fmt.Fprintf(out, "  → %s\n", mustJSON(report))
	fmt.Fprintf(out, "    (structured output valid against response_format; the model's action_requests ran through the act stage)\n")
	fmt.Fprintf(out, "    action_responses:\n")
	printActionResponses(out, "      ", responses)

	if err := communicate(demoLastStep); err != nil {
		return err
	}

	res, err = do("branch.history", demoBranch, map[string]any{"limit": 100, "after": tombstone})
	if err != nil {
		return err
	}
	var page struct {
		Events []history.Event `json:"events"`
	}
	if err := json.Unmarshal(res.Value, &page); err != nil {
		return fmt.Errorf("branch.history: decode: %w", err)
	}
	fmt.Fprintf(out, "\nbranch.history  %d events on %s\n", len(page.Events), subj.History(demoBranch))
	for _, ev := range page.Events {
		fmt.Fprintf(out, "  #%-3d %s\n", ev.Seq, ev.Type)
		for _, m := range ev.Messages {
			fmt.Fprintf(out, "        %-10s %s\n", m.Role, render.Clip(render.MessageText(m), 80))
		}
	}

	eventsAfter, err := demoEventCounts(ctx, js, subj)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nevents          %s on %s\n", eventsSummary(eventsBefore, eventsAfter), subj.Events(demoBranch, ">"))
	return runDemoFaults(ctx, nc, js, subj, do, reuse, out)
}

// demoEventCounts returns how many events of each type (the last subject
// token: run_start, message_added, ...) the events stream holds for the
// demo branch.
func demoEventCounts(ctx context.Context, js jetstream.JetStream, subj protocol.Subjects) (map[string]uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, demoTimeout)
	defer cancel()
	stream, err := js.Stream(ctx, subj.EventsStream())
	if err != nil {
		return nil, fmt.Errorf("events stream %s: %w", subj.EventsStream(), err)
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(subj.Events(demoBranch, ">")))
	if err != nil {
		return nil, fmt.Errorf("events stream %s: %w", subj.EventsStream(), err)
	}
	counts := make(map[string]uint64, len(info.State.Subjects))
	for subject, n := range info.State.Subjects {
		counts[subject[strings.LastIndexByte(subject, '.')+1:]] += n
	}
	return counts, nil
}

// eventOrder is the order event types are listed in: a run's own order,
// then any other type by name.
var eventOrder = []string{
	protocol.EventToken(ops.SignalRunStart),
	protocol.EventToken(ops.SignalMessageAdded),
	protocol.EventToken(ops.SignalRunEnd),
	protocol.EventToken(ops.SignalRunFailed),
	protocol.EventToken(ops.SignalToolPre),
	protocol.EventToken(ops.SignalToolPost),
	protocol.EventToken(ops.SignalToolError),
}

// eventsSummary renders the events added between two counts, e.g.
// "12 events (3 run_start, 6 message_added, 3 run_end)".
func eventsSummary(before, after map[string]uint64) string {
	added := make(map[string]uint64)
	var total uint64
	for tok, n := range after {
		if n > before[tok] {
			added[tok] = n - before[tok]
			total += n - before[tok]
		}
	}
	var parts []string
	for _, tok := range eventOrder {
		if n, ok := added[tok]; ok {
			parts = append(parts, fmt.Sprintf("%d %s", n, tok))
			delete(added, tok)
		}
	}
	for _, tok := range slices.Sorted(maps.Keys(added)) {
		parts = append(parts, fmt.Sprintf("%d %s", added[tok], tok))
	}
	if len(parts) == 0 {
		return "0 events"
	}
	return fmt.Sprintf("%d events (%s)", total, strings.Join(parts, ", "))
}

// printTryIt tells how to talk to the running worker from another terminal.
func printTryIt(out io.Writer, url string, subj protocol.Subjects) {
	fmt.Fprintf(out, `
── the worker keeps serving on %[1]s ──

From another terminal, with the NATS CLI (go install github.com/nats-io/natscli/nats@v0.5.0):

  nats --server %[1]s sub '%[2]s'
  nats --server %[1]s pub %[3]s "$(cat examples/communicate.json)"
  nats --server %[1]s sub '%[5]s'    # the run's lifecycle events

or with the publisher:

  go run ./cmd/publisher --nats %[1]s communicate --branch %[4]s --instruction "Hi" --chat-model scripted:echo
  go run ./cmd/publisher --nats %[1]s tools list       # the example tool services' tools (nats micro ls shows the services)
  go run ./cmd/publisher --nats %[1]s tools call calculate --args '{"op": "add", "a": 2, "b": 3}'

Ctrl-C to stop.
`, url, subj.RepliesWildcard(), subj.Op("communicate"), demoBranch, subj.Events(demoBranch, ">"))
}

// printActionResponses prints one line per action response, each after
// indent: the call, then its output or its error.
func printActionResponses(out io.Writer, indent string, responses []ops.ActionResponse) {
	for _, r := range responses {
		args, _ := json.Marshal(r.Arguments)
		if r.Error != nil {
			fmt.Fprintf(out, "%s%s %s → %s: %s\n", indent, r.Function, args, r.Error.Code, r.Error.Message)
			continue
		}
		fmt.Fprintf(out, "%s%s %s → %s\n", indent, r.Function, args, render.CompactValue(mustJSON(r.Output)))
	}
}

// mustJSON encodes a decoded JSON value again.
func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// isCode reports whether err is a lionbus.error answer with code.
func isCode(err error, code ops.Code) bool {
	var re *client.RemoteError
	return errors.As(err, &re) && re.Code == code
}

// schemaSummary renders an object schema's properties as {name: type, ...}.
func schemaSummary(schema map[string]any) string {
	props, _ := schema["properties"].(map[string]any)
	names := slices.Sorted(maps.Keys(props))
	for i, name := range names {
		p, _ := props[name].(map[string]any)
		names[i] = fmt.Sprintf("%s: %v", name, p["type"])
	}
	return "{" + strings.Join(names, ", ") + "}"
}
