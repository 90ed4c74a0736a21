package lndl_test

import (
	"encoding/json"
	"fmt"

	"github.com/lionbus/lionbus/pkg/lndl"
)

func ExampleRound() {
	target, err := lndl.ParseTarget([]byte(`{
	  "$defs": {"Report": {"properties": {"title": {"type": "string"}, "summary": {"type": "string"}},
	    "required": ["title", "summary"], "title": "Report", "type": "object"}},
	  "properties": {"report": {"$ref": "#/$defs/Report"}, "quality": {"type": "number"}},
	  "required": ["report", "quality"], "title": "Analysis", "type": "object"}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(lndl.Render(target))

	response := "Let me draft the report.\n\n```lndl\n" +
		"<lvar Report.title t>Architecture Analysis</lvar>\n" +
		"<lact Report.summary s>docs.summarize(text=\"The system uses NATS.\")</lact>\n" +
		"<lact unused>search(q=\"never run\")</lact>\n" +
		"OUT{report: [t, s], quality: 0.92}\n```"
	res := lndl.Round(lndl.RoundInput{Text: response, Target: target})
	fmt.Println(res.Outcome)
	for _, a := range res.Pending {
		fmt.Printf("run %s: %s %v\n", a.Name, a.Function, a.Arguments)
	}
	assembled, _ := json.Marshal(res.Assembled)
	fmt.Println(string(assembled))

	// The adapter runs the pending actions, then resolves.
	value, err := res.Resolve(map[string]any{"s": "A message bus with JetStream."})
	if err != nil {
		panic(err)
	}
	resolved, _ := json.Marshal(value)
	fmt.Println(string(resolved))
	// Output:
	// Specs: report(Report: title, summary), quality(float)
	// success
	// run s: docs.summarize map[text:The system uses NATS.]
	// {"report":{"title":"Architecture Analysis","summary":{"$action":{"name":"s","function":"docs.summarize","arguments":{"text":"The system uses NATS."}}}},"quality":0.92}
	// {"report":{"title":"Architecture Analysis","summary":"A message bus with JetStream."},"quality":0.92}
}
