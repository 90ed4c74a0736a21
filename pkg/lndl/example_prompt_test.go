package lndl_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lionbus/lionbus/pkg/lndl"
)

func ExampleRoundPrompt() {
	target, err := lndl.ParseTarget([]byte(`{"properties": {
	  "answer": {"type": "string"},
	  "detail": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}},
	  "required": ["answer"], "title": "Reply", "type": "object"}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(lndl.RoundPrompt(2, 3, target))
	fmt.Println(lndl.RoundPrompt(3, 3, target))
	// Output:
	// Round 2 of 3.
	// Specs: answer(str), detail(str, optional)
	// Round 3 of 3. This is the last round: commit your result in OUT{} now.
	// Specs: answer(str), detail(str, optional)
}

func ExampleRepairPrompt() {
	response := "```lndl\n<lvar a>Paris</lvar>\n<lvar a>Lyon</lvar>\nOUT{answer: [a]}\n```\n"
	res := lndl.Round(lndl.RoundInput{Text: response})
	fmt.Println(res.Outcome)
	fmt.Println(lndl.RepairPrompt(res.Err))
	// Output:
	// retry
	// Your last response could not be used.
	// Error: Parse error at line 2, column 19: Duplicate alias 'a' - aliases must be unique across lvars and lacts
	// Where: line 2, column 19 of the text inside your lndl blocks (read as one text).
	// Fix: every <lvar> and <lact> needs its own alias; rename one of the two and update OUT{} to match.
	// Send the whole response again, corrected.
}

func ExampleActionResultsPrompt() {
	fmt.Println(lndl.ActionResultsPrompt(map[string]any{
		"us":      map[string]any{"region": "us-east", "monthly": 389},
		"eu":      map[string]any{"region": "eu-west", "monthly": 412},
		"weather": "light snow, -3 C",
	}))
	// Output:
	// Action results, by alias (reference an alias in OUT{} to use its result):
	// - eu: {"monthly":412,"region":"eu-west"}
	// - us: {"monthly":389,"region":"us-east"}
	// - weather: "light snow, -3 C"
}

// The operate adapter's rounds: the first sends Guidance as the system
// guidance and the caller's instruction; every later one opens with
// NextRoundPrompt, carrying the results and notes of the round before.
func ExampleNextRoundPrompt() {
	target, err := lndl.ParseTarget([]byte(`{"properties": {
	  "city": {"type": "string"}, "forecast": {"type": "string"}},
	  "required": ["city", "forecast"], "title": "Forecast", "type": "object"}`))
	if err != nil {
		panic(err)
	}
	guidance := lndl.Guidance(target, "Answer for tomorrow.")
	fmt.Println(strings.HasPrefix(guidance, "LNDL: how to hand over your result"))
	fmt.Println(strings.HasSuffix(guidance, "Specs: city(str), forecast(str)\n\nAnswer for tomorrow."))

	first := lndl.Round(lndl.RoundInput{
		Text:   "```lndl\n<lact weather>weather.lookup(city=\"Oslo\", days=1)</lact>\n```\n",
		Target: target,
	})
	fmt.Println(first.Outcome, first.Pending[0].Name, first.Pending[0].Function)
	results := map[string]any{"weather": "light snow, -3 C"} // after running first.Pending

	fmt.Println(lndl.NextRoundPrompt(2, 3, target, results, nil))

	second := lndl.Round(lndl.RoundInput{
		Text:          "```lndl\nOUT{city: \"Oslo\", forecast: [weather]}\n```\n",
		Target:        target,
		ActionResults: results,
		Notes:         first.Notes,
	})
	value, err := second.Resolve(nil)
	if err == nil {
		value, err = target.Validate(value)
	}
	text, _ := json.Marshal(value)
	fmt.Println(second.Outcome, string(text), err)
	// Output:
	// true
	// true
	// continue weather weather.lookup
	// Round 2 of 3.
	// Specs: city(str), forecast(str)
	//
	// Action results, by alias (reference an alias in OUT{} to use its result):
	// - weather: "light snow, -3 C"
	// success {"city":"Oslo","forecast":"light snow, -3 C"} <nil>
}
