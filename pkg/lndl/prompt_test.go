package lndl_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/lndl"
)

// Target schemas of the prompt's examples and the conversation tests,
// written as pydantic 2 writes them.
const (
	schemaAnswer = `{"properties": {
	  "answer": {"title": "Answer", "type": "string"},
	  "confidence": {"title": "Confidence", "type": "number"}},
	  "required": ["answer", "confidence"], "title": "Answer", "type": "object"}`

	schemaReportTags = `{"$defs": {"Report": {"properties": {
	    "title": {"title": "Title", "type": "string"},
	    "summary": {"title": "Summary", "type": "string"}},
	    "required": ["title", "summary"], "title": "Report", "type": "object"}},
	  "properties": {
	    "report": {"$ref": "#/$defs/Report"},
	    "tags": {"items": {"type": "string"}, "title": "Tags", "type": "array"},
	    "quality": {"title": "Quality", "type": "number"}},
	  "required": ["report", "tags", "quality"], "title": "Review", "type": "object"}`

	schemaFindings = `{"$defs": {"Finding": {"properties": {
	    "name": {"title": "Name", "type": "string"},
	    "severity": {"title": "Severity", "type": "string"}},
	    "required": ["name", "severity"], "title": "Finding", "type": "object"}},
	  "properties": {
	    "findings": {"items": {"$ref": "#/$defs/Finding"}, "title": "Findings", "type": "array"},
	    "scores": {"additionalProperties": {"type": "number"}, "title": "Scores", "type": "object"}},
	  "required": ["findings", "scores"], "title": "Audit", "type": "object"}`

	schemaReport = `{"$defs": {"Report": {"properties": {
	    "title": {"title": "Title", "type": "string"},
	    "summary": {"title": "Summary", "type": "string"}},
	    "required": ["title", "summary"], "title": "Report", "type": "object"}},
	  "properties": {
	    "report": {"$ref": "#/$defs/Report"},
	    "quality": {"title": "Quality", "type": "number"}},
	  "required": ["report", "quality"], "title": "Analysis", "type": "object"}`

	schemaForecast = `{"properties": {
	  "city": {"title": "City", "type": "string"},
	  "forecast": {"title": "Forecast", "type": "string"}},
	  "required": ["city", "forecast"], "title": "Forecast", "type": "object"}`

	schemaRegion = `{"properties": {
	  "region": {"title": "Region", "type": "string"},
	  "reasoning": {"title": "Reasoning", "type": "string"}},
	  "required": ["region", "reasoning"], "title": "Choice", "type": "object"}`
)

// promptExample is one lndl block of SystemPrompt, in order, with the
// target and state it answers and the outcome the prompt documents.
type promptExample struct {
	// first is the block's first line; it keeps the table aligned with
	// the prompt.
	first  string
	schema string
	// round > 1 marks a block answering a later round; the prompt must
	// show that round's opening message, NextRoundPrompt(round,
	// maxRounds, target, results, nil), before the block.
	round, maxRounds int
	// results and notes are the state of earlier rounds.
	results map[string]any
	notes   map[string]any

	outcome lndl.Outcome
	// pending is the JSON of the pending actions.
	pending string
	// assembled is the JSON of RoundResult.Assembled (success only).
	assembled string
	// executed are the results of the pending actions (success only).
	executed map[string]any
	// value is the JSON of the validated value (success only); the
	// prompt shows it as "Result: <value>".
	value string
	// notesAfter is the scratchpad after the round.
	notesAfter map[string]any
	// shown is more text the prompt shows after the block.
	shown []string
}

var promptExamples = []promptExample{
	{
		first:      "<lvar answer a>Paris is the capital of France.</lvar>",
		schema:     schemaAnswer,
		outcome:    lndl.OutcomeSuccess,
		pending:    `[]`,
		assembled:  `{"answer":"Paris is the capital of France.","confidence":0.95}`,
		value:      `{"answer":"Paris is the capital of France.","confidence":0.95}`,
		notesAfter: map[string]any{},
	},
	{
		first:      "<lvar Report.title t>Q3 latency review</lvar>",
		schema:     schemaReportTags,
		outcome:    lndl.OutcomeSuccess,
		pending:    `[]`,
		assembled:  `{"report":{"title":"Q3 latency review","summary":"p99 latency fell from 840 ms to 310 ms after the cache change."},"tags":["latency","caching"],"quality":0.8}`,
		value:      `{"report":{"title":"Q3 latency review","summary":"p99 latency fell from 840 ms to 310 ms after the cache change."},"tags":["latency","caching"],"quality":0.8}`,
		notesAfter: map[string]any{},
	},
	{
		first:      "<lvar Finding.name n1>Unbounded retry loop</lvar>",
		schema:     schemaFindings,
		outcome:    lndl.OutcomeSuccess,
		pending:    `[]`,
		assembled:  `{"findings":[{"name":"Unbounded retry loop","severity":"high"},{"name":"No timeout on the HTTP client","severity":"medium"}],"scores":{"precision":"0.9","recall":"0.75"}}`,
		value:      `{"findings":[{"name":"Unbounded retry loop","severity":"high"},{"name":"No timeout on the HTTP client","severity":"medium"}],"scores":{"precision":0.9,"recall":0.75}}`,
		notesAfter: map[string]any{},
	},
	{
		first:      "<lvar Report.title t>INC-2041 postmortem</lvar>",
		schema:     schemaReport,
		outcome:    lndl.OutcomeSuccess,
		pending:    `[{"name":"s","function":"docs.summarize","arguments":{"doc_id":"INC-2041","max_words":60}}]`,
		assembled:  `{"report":{"title":"INC-2041 postmortem","summary":{"$action":{"name":"s","function":"docs.summarize","arguments":{"doc_id":"INC-2041","max_words":60}}}},"quality":0.7}`,
		executed:   map[string]any{"s": "Cache eviction storm; fixed by jittered TTLs."},
		value:      `{"report":{"title":"INC-2041 postmortem","summary":"Cache eviction storm; fixed by jittered TTLs."},"quality":0.7}`,
		notesAfter: map[string]any{},
		shown:      []string{`If s returns "Cache eviction storm; fixed by jittered TTLs.", the result is:`},
	},
	{
		first:      `<lact weather>weather.lookup(city="Oslo", days=1)</lact>`,
		schema:     schemaForecast,
		outcome:    lndl.OutcomeContinue,
		pending:    `[{"name":"weather","function":"weather.lookup","arguments":{"city":"Oslo","days":1}}]`,
		notesAfter: map[string]any{},
	},
	{
		first:      `OUT{city: "Oslo", forecast: [weather]}`,
		schema:     schemaForecast,
		round:      2,
		maxRounds:  3,
		results:    map[string]any{"weather": "light snow, -3 C"},
		outcome:    lndl.OutcomeSuccess,
		pending:    `[]`,
		assembled:  `{"city":"Oslo","forecast":"light snow, -3 C"}`,
		value:      `{"city":"Oslo","forecast":"light snow, -3 C"}`,
		notesAfter: map[string]any{},
	},
	{
		first:   "<lvar note.method>Quoted both regions at the standard tier; the lower monthly price wins.</lvar>",
		schema:  schemaRegion,
		outcome: lndl.OutcomeContinue,
		pending: `[{"name":"eu","function":"pricing.quote","arguments":{"region":"eu-west","tier":"standard"}},` +
			`{"name":"us","function":"pricing.quote","arguments":{"region":"us-east","tier":"standard"}}]`,
		notesAfter: map[string]any{"method": "Quoted both regions at the standard tier; the lower monthly price wins."},
		shown:      []string{"note.method is kept"},
	},
	{
		first:     "<lvar region r>us-east</lvar>",
		schema:    schemaRegion,
		round:     2,
		maxRounds: 3,
		results: map[string]any{
			"eu": map[string]any{"region": "eu-west", "monthly": 412},
			"us": map[string]any{"region": "us-east", "monthly": 389},
		},
		notes:      map[string]any{"method": "Quoted both regions at the standard tier; the lower monthly price wins."},
		outcome:    lndl.OutcomeSuccess,
		pending:    `[]`,
		assembled:  `{"region":"us-east","reasoning":"Quoted both regions at the standard tier; the lower monthly price wins."}`,
		value:      `{"region":"us-east","reasoning":"Quoted both regions at the standard tier; the lower monthly price wins."}`,
		notesAfter: map[string]any{"method": "Quoted both regions at the standard tier; the lower monthly price wins."},
	},
}

// promptBlock is one fenced lndl block of a text: its body and the byte
// offsets of its opening and closing fence lines.
type promptBlock struct {
	body       string
	start, end int // start of the opening line, end of the closing line
}

// scanLNDLBlocks finds the lndl blocks of text line by line, independently
// of lndl.Extract: an opening line is exactly "```lndl", a closing line
// exactly "```".
func scanLNDLBlocks(t *testing.T, text string) []promptBlock {
	t.Helper()
	var blocks []promptBlock
	var cur *promptBlock
	var body []string
	off := 0
	for _, line := range strings.SplitAfter(text, "\n") {
		bare := strings.TrimSuffix(line, "\n")
		switch {
		case cur == nil && bare == "```lndl":
			cur = &promptBlock{start: off}
			body = nil
		case cur == nil && strings.HasPrefix(bare, "```"):
			t.Fatalf("the prompt has a fence line %q outside an lndl block", bare)
		case cur != nil && bare == "```":
			cur.end = off + len(bare)
			cur.body = strings.Join(body, "")
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			if strings.HasPrefix(bare, "```") || strings.HasPrefix(bare, "~~~") {
				t.Fatalf("the prompt has a fence line %q inside an lndl block", bare)
			}
			body = append(body, line)
		}
		off += len(line)
	}
	if cur != nil {
		t.Fatalf("the prompt has an unclosed lndl block at byte %d", cur.start)
	}
	return blocks
}

func mustTarget(t *testing.T, schema string) *lndl.Target {
	t.Helper()
	if schema == "" {
		return nil
	}
	target, err := lndl.ParseTarget([]byte(schema))
	if err != nil {
		t.Fatalf("ParseTarget: %v", err)
	}
	return target
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal(%#v): %v", v, err)
	}
	return string(b)
}

func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}

func aliases(actions []lndl.Action) []string {
	names := make([]string, len(actions))
	for i, a := range actions {
		names[i] = a.Name
	}
	return names
}

// TestSystemPromptBlocks finds the prompt's lndl blocks twice, by a line
// scan and with Extract, and checks that both agree with the example
// table.
func TestSystemPromptBlocks(t *testing.T) {
	blocks := scanLNDLBlocks(t, lndl.SystemPrompt)
	extracted := lndl.Extract(lndl.SystemPrompt)
	if len(blocks) != len(extracted) {
		t.Fatalf("line scan finds %d blocks, Extract %d", len(blocks), len(extracted))
	}
	for i := range blocks {
		if blocks[i].body != extracted[i] {
			t.Errorf("block %d: line scan %q, Extract %q", i, blocks[i].body, extracted[i])
		}
	}
	if len(blocks) != len(promptExamples) {
		t.Fatalf("the prompt has %d lndl blocks, the example table %d", len(blocks), len(promptExamples))
	}
	if len(blocks) < 3 {
		t.Fatalf("the prompt has %d worked examples, want at least 3", len(blocks))
	}
	for i, b := range blocks {
		if first, _, _ := strings.Cut(b.body, "\n"); first != promptExamples[i].first {
			t.Errorf("block %d starts %q, the table says %q", i, first, promptExamples[i].first)
		}
	}
}

// TestSystemPromptExamples runs every lndl block of the prompt through
// Parse and Round with its example's target and state, and checks the
// outcome against the table and the table against what the prompt says
// around the block.
func TestSystemPromptExamples(t *testing.T) {
	blocks := scanLNDLBlocks(t, lndl.SystemPrompt)
	if len(blocks) != len(promptExamples) {
		t.Fatalf("the prompt has %d lndl blocks, the example table %d", len(blocks), len(promptExamples))
	}
	for i, ex := range promptExamples {
		b := blocks[i]
		t.Run(fmt.Sprintf("block%d", i+1), func(t *testing.T) {
			if _, err := lndl.Parse(lndl.NormalizeBlock(b.body)); err != nil {
				t.Fatalf("Parse: %v\n%s", err, b.body)
			}
			target := mustTarget(t, ex.schema)

			// What the prompt says before the block: the Specs line of a
			// first response, or the whole message opening a later round.
			prevEnd := 0
			if i > 0 {
				prevEnd = blocks[i-1].end
			}
			before := lndl.SystemPrompt[prevEnd:b.start]
			if ex.round > 1 {
				msg := indent(lndl.NextRoundPrompt(ex.round, ex.maxRounds, target, ex.results, nil), "    ")
				if !strings.Contains(before, msg) {
					t.Errorf("the prompt does not show the message opening round %d before the block:\n%s", ex.round, msg)
				}
			} else if specs := lndl.Render(target); !strings.Contains(before, "\n"+specs+"\n") {
				t.Errorf("the prompt does not show %q before the block", specs)
			}
			nextStart := len(lndl.SystemPrompt)
			if i+1 < len(blocks) {
				nextStart = blocks[i+1].start
			}
			after := lndl.SystemPrompt[b.end:nextStart]

			res := lndl.Round(lndl.RoundInput{
				Text:          "```lndl\n" + b.body + "```\n",
				Target:        target,
				ActionResults: ex.results,
				Notes:         ex.notes,
			})
			if res.Outcome != ex.outcome {
				t.Fatalf("outcome %v (err %v), want %v", res.Outcome, res.Err, ex.outcome)
			}
			if got := mustJSON(t, res.Pending); got != ex.pending {
				t.Errorf("pending\n got %s\nwant %s", got, ex.pending)
			}
			if got := mustJSON(t, res.Notes); got != mustJSON(t, ex.notesAfter) {
				t.Errorf("notes\n got %s\nwant %s", got, mustJSON(t, ex.notesAfter))
			}
			if len(res.Pending) > 0 {
				runs := "Runs: " + strings.Join(aliases(res.Pending), ", ") + "."
				if !strings.Contains(after, runs) {
					t.Errorf("the prompt does not say %q after the block", runs)
				}
			} else if strings.Contains(after, "Runs:") {
				t.Errorf("the prompt says an action runs after a block with none pending")
			}
			for _, s := range ex.shown {
				if !strings.Contains(after, s) {
					t.Errorf("the prompt does not say %q after the block", s)
				}
			}
			if ex.outcome != lndl.OutcomeSuccess {
				if res.Assembled != nil {
					t.Errorf("a %v has an assembled value", res.Outcome)
				}
				if strings.Contains(after, "Result:") {
					t.Errorf("the prompt shows a result after a %v", res.Outcome)
				}
				return
			}
			if got := mustJSON(t, res.Assembled); got != ex.assembled {
				t.Errorf("assembled\n got %s\nwant %s", got, ex.assembled)
			}
			resolved, err := res.Resolve(ex.executed)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			value, err := target.Validate(resolved)
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := mustJSON(t, value); got != ex.value {
				t.Errorf("value\n got %s\nwant %s", got, ex.value)
			}
			if want := "\nResult: " + ex.value + "\n"; !strings.Contains(after, want) {
				t.Errorf("the prompt does not show %q after the block", strings.TrimSpace(want))
			}
		})
	}
}

// TestSystemPromptNoteCarryOver shows that the note example depends on the
// carried-over scratchpad: without it, the reasoning field is empty and
// the value does not validate.
func TestSystemPromptNoteCarryOver(t *testing.T) {
	blocks := scanLNDLBlocks(t, lndl.SystemPrompt)
	target := mustTarget(t, schemaRegion)
	first := lndl.Round(lndl.RoundInput{Text: "```lndl\n" + blocks[6].body + "```\n", Target: target})
	second := func(notes map[string]any) (any, error) {
		res := lndl.Round(lndl.RoundInput{Text: "```lndl\n" + blocks[7].body + "```\n", Target: target, Notes: notes})
		v, err := res.Resolve(nil)
		if err != nil {
			return nil, err
		}
		return target.Validate(v)
	}
	v, err := second(first.Notes)
	if err != nil {
		t.Fatalf("with the carried notes: %v", err)
	}
	if got, want := mustJSON(t, v), promptExamples[7].value; got != want {
		t.Errorf("with the carried notes: %s, want %s", got, want)
	}
	var ve *lndl.ValidationError
	if _, err := second(nil); !errors.As(err, &ve) {
		t.Errorf("without notes: err %v, want a *ValidationError", err)
	}
}

func TestSystemPromptTeaches(t *testing.T) {
	// Each rule of docs/lndl.md#prompts, by a phrase the prompt must hold.
	for _, phrase := range []string{
		"Only these blocks are read",
		"Model.field alias", "Model.field ", "hint alias", "alias                a plain value",
		"<lvar HEAD>", "<lact HEAD>",
		"field: [a, b, \"text\", 3]", "a shortcut", "a group",
		"are values, not names",
		"only the lacts that OUT{} references run",
		"every lact in it runs",
		"Every argument is a literal",
		"An alias may be declared only once per response",
		"<lvar note.plan>", "carry over to every later round",
		"Round N of M.",
	} {
		if !strings.Contains(lndl.SystemPrompt, phrase) {
			t.Errorf("SystemPrompt does not contain %q", phrase)
		}
	}
}

func TestGuidance(t *testing.T) {
	target := mustTarget(t, schemaAnswer)
	body := strings.TrimRight(lndl.SystemPrompt, "\n")
	for _, tc := range []struct {
		name   string
		target *lndl.Target
		extra  string
		want   string
	}{
		{"prompt only", nil, "", body},
		{"with specs", target, "", body + "\n\nSpecs: answer(str), confidence(float)"},
		{"with specs and guidance", target, "Answer in English.", body + "\n\nSpecs: answer(str), confidence(float)\n\nAnswer in English."},
		{"blank guidance", target, " \n", body + "\n\nSpecs: answer(str), confidence(float)"},
		{"no fields", mustTarget(t, `{"properties": {}, "title": "Empty", "type": "object"}`), "x", body + "\n\nx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lndl.Guidance(tc.target, tc.extra); got != tc.want {
				t.Errorf("Guidance:\n%q\nwant\n%q", got[len(body):], tc.want[len(body):])
			}
		})
	}
}

func TestRoundPrompt(t *testing.T) {
	target := mustTarget(t, schemaAnswer)
	empty := mustTarget(t, `{"properties": {}, "title": "Empty", "type": "object"}`)
	const last = " This is the last round: commit your result in OUT{} now."
	for _, tc := range []struct {
		round, max int
		target     *lndl.Target
		want       string
	}{
		{2, 3, target, "Round 2 of 3.\nSpecs: answer(str), confidence(float)"},
		{3, 3, target, "Round 3 of 3." + last + "\nSpecs: answer(str), confidence(float)"},
		{1, 3, nil, "Round 1 of 3."},
		{2, 5, empty, "Round 2 of 5."},
		{0, 0, nil, "Round 1 of 1." + last},
		{-4, 2, nil, "Round 1 of 2."},
		{5, 3, nil, "Round 5 of 5." + last},
		{12, 100, target, "Round 12 of 100.\nSpecs: answer(str), confidence(float)"},
	} {
		t.Run(fmt.Sprintf("%d_of_%d", tc.round, tc.max), func(t *testing.T) {
			got := lndl.RoundPrompt(tc.round, tc.max, tc.target)
			if got != tc.want {
				t.Errorf("RoundPrompt(%d, %d):\n%q\nwant\n%q", tc.round, tc.max, got, tc.want)
			}
		})
	}
}

// roundErr returns the retry error of one response.
func roundErr(t *testing.T, text string, target *lndl.Target) error {
	t.Helper()
	res := lndl.Round(lndl.RoundInput{Text: text, Target: target})
	if res.Outcome != lndl.OutcomeRetry {
		t.Fatalf("outcome %v, want retry, for %q", res.Outcome, text)
	}
	return res.Err
}

func TestRepairPrompt(t *testing.T) {
	target := mustTarget(t, schemaReport)
	answer := mustTarget(t, schemaAnswer)
	_, verr := answer.Validate(mustAssembled(t, "```lndl\nOUT{answer: \"x\", confidence: \"very\"}\n```", answer))
	if verr == nil {
		t.Fatal("Validate accepted a word for a float")
	}
	const resend = "\nSend the whole response again, corrected."
	for _, tc := range []struct {
		name string
		err  error
		want string // the whole message; "" for nil
		fix  string // else the start of the Fix line
	}{
		{name: "nil", err: nil, want: ""},
		{
			name: "duplicate alias",
			err:  roundErr(t, "```lndl\n<lvar a>x</lvar>\n<lvar a>y</lvar>\nOUT{answer: [a]}\n```", nil),
			want: "Your last response could not be used.\n" +
				"Error: Parse error at line 2, column 16: Duplicate alias 'a' - aliases must be unique across lvars and lacts\n" +
				"Where: line 2, column 16 of the text inside your lndl blocks (read as one text).\n" +
				"Fix: every <lvar> and <lact> needs its own alias; rename one of the two and update OUT{} to match." + resend,
		},
		{
			name: "missing alias",
			err:  roundErr(t, "```lndl\nOUT{answer: [a], confidence: 1}\n```", answer),
			want: "Your last response could not be used.\n" +
				"Error: OUT{} references undeclared alias 'a'\n" +
				"Fix: OUT{} names 'a', but no <lvar> or <lact> in your response declares it and no earlier action has that alias. " +
				"Declare it, correct the name, or write the value as a quoted literal." + resend,
		},
		{
			name: "other error",
			err:  errors.New("provider said no"),
			want: "Your last response could not be used.\n" +
				"Error: provider said no\n" +
				"Fix: check the response against the LNDL rules: one ```lndl block, declarations with unique aliases, and one OUT{} that fills every required field." + resend,
		},
		{
			name: "unclosed lvar",
			err:  roundErr(t, "```lndl\n<lvar a>x\nOUT{answer: [a]}\n```", nil),
			fix:  "Fix: close every <lvar ...> with exactly </lvar>.",
		},
		{
			name: "unclosed lact",
			err:  roundErr(t, "```lndl\n<lact a>f()\n```", nil),
			fix:  "Fix: close every <lact ...> with exactly </lact>.",
		},
		{
			name: "syntax",
			err:  roundErr(t, "```lndl\n<lvar a.b.c>x</lvar>\n```", nil),
			fix:  "Fix: check the tag at that position.",
		},
		{
			name: "nesting",
			err:  roundErr(t, "```lndl\nOUT{a: "+strings.Repeat("[", 40)+"}\n```", nil),
			fix:  "Fix: use at most two levels of brackets",
		},
		{
			name: "number",
			err:  roundErr(t, "```lndl\nOUT{a: 1.2.3}\n```", nil),
			fix:  "Fix: write numbers in OUT{} as plain decimals",
		},
		{
			name: "too large",
			err:  roundErr(t, strings.Repeat("x", lndl.MaxInputBytes+1), nil),
			fix:  "Fix: send a much shorter response",
		},
		{
			name: "missing field",
			err:  roundErr(t, "```lndl\n<lvar Report.title t>x</lvar>\nOUT{t}\n```", target),
			fix:  "Fix: add every field listed above to OUT{}",
		},
		{
			name: "type mismatch",
			err:  roundErr(t, "```lndl\n<lvar Summary.text t>x</lvar>\nOUT{report: [t], quality: 1}\n```", target),
			fix:  "Fix: the field expects model 'Report'. Declare the value as <lvar Report.field t>",
		},
		{
			name: "invalid call",
			err:  roundErr(t, "```lndl\n<lact a>fetch(url=base + \"/x\")</lact>\n```", nil),
			fix:  "Fix: a <lact> body is exactly one call",
		},
		{name: "validation", err: verr, fix: "Fix: the assembled result does not fit the Specs line."},
		{
			name: "wrapped",
			err:  fmt.Errorf("round 2: %w", roundErr(t, "```lndl\n<lact a>f(x=y)</lact>\n```", nil)),
			fix:  "Fix: a <lact> body is exactly one call",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := lndl.RepairPrompt(tc.err)
			if tc.fix == "" {
				if got != tc.want {
					t.Errorf("RepairPrompt:\n%s\nwant\n%s", got, tc.want)
				}
				return
			}
			lines := strings.Split(got, "\n")
			if lines[0] != "Your last response could not be used." {
				t.Errorf("first line %q", lines[0])
			}
			if want := "Error: " + tc.err.Error(); lines[1] != want {
				t.Errorf("error line %q, want %q", lines[1], want)
			}
			var pe *lndl.ParseError
			fixLine := lines[2]
			if errors.As(tc.err, &pe) && !strings.HasPrefix(pe.Reason, "Input too large") {
				want := fmt.Sprintf("Where: line %d, column %d of the text inside your lndl blocks (read as one text).", pe.Line, pe.Column)
				if lines[2] != want {
					t.Errorf("where line %q, want %q", lines[2], want)
				}
				fixLine = lines[3]
			}
			if !strings.HasPrefix(fixLine, tc.fix) {
				t.Errorf("fix line %q, want it to start %q", fixLine, tc.fix)
			}
			if !strings.HasSuffix(got, resend) {
				t.Errorf("message does not end %q", resend)
			}
		})
	}
}

// mustAssembled returns the resolved value of a success round.
func mustAssembled(t *testing.T, text string, target *lndl.Target) any {
	t.Helper()
	res := lndl.Round(lndl.RoundInput{Text: text, Target: target})
	v, err := res.Resolve(nil)
	if err != nil {
		t.Fatalf("Resolve: %v (round %v, %v)", err, res.Outcome, res.Err)
	}
	return v
}

func TestRepairPromptBounded(t *testing.T) {
	body := "f(x=" + strings.Repeat("é", 50000) + ")"
	err := roundErr(t, "```lndl\n<lact a>"+body+"</lact>\n```", nil)
	got := lndl.RepairPrompt(err)
	if len(got) > lndl.MaxPromptErrorBytes+1024 {
		t.Errorf("RepairPrompt of a %d-byte error is %d bytes", len(err.Error()), len(got))
	}
	errLine, _, _ := strings.Cut(strings.TrimPrefix(got, "Your last response could not be used.\nError: "), "\n")
	text, marker, ok := strings.Cut(errLine, "…")
	if !ok {
		t.Fatalf("long error not marked: %q", errLine[:80])
	}
	if len(text) > lndl.MaxPromptErrorBytes || !strings.HasPrefix(err.Error(), text) {
		t.Errorf("quoted %d bytes of the error, bound %d, or not its start", len(text), lndl.MaxPromptErrorBytes)
	}
	if want := fmt.Sprintf(" (%d more bytes)", len(err.Error())-len(text)); marker != want {
		t.Errorf("marker %q, want %q", marker, want)
	}
	if !strings.Contains(got, "Fix: a <lact> body is exactly one call") {
		t.Errorf("the cut message lost its advice")
	}

	long := strings.Repeat("q", 5000)
	for _, err := range []error{
		&lndl.TypeMismatchError{Alias: long, Declared: long, Expected: long},
		&lndl.MissingLvarError{Alias: long},
	} {
		if got := lndl.RepairPrompt(err); len(got) > 2*lndl.MaxPromptErrorBytes {
			t.Errorf("RepairPrompt of a %T with long names is %d bytes", err, len(got))
		}
	}
}

func TestRepairPromptClassesDiffer(t *testing.T) {
	errs := []error{
		&lndl.ParseError{Line: 1, Column: 1, Reason: "Expected GT, got DOT"},
		&lndl.MissingLvarError{Alias: "a"},
		&lndl.MissingFieldError{Fields: []string{"a"}},
		&lndl.TypeMismatchError{Alias: "a", Declared: "B", Expected: "C"},
		&lndl.InvalidConstructorError{Alias: "a", Body: "x"},
		&lndl.ValidationError{Issues: []lndl.ValidationIssue{{Loc: []any{"a"}, Type: "missing", Msg: "Field required"}}},
		errors.New("other"),
	}
	seen := map[string]int{}
	for i, err := range errs {
		got := lndl.RepairPrompt(err)
		i0 := strings.Index(got, "\nFix: ")
		if i0 < 0 {
			t.Fatalf("%T: no Fix line in %q", err, got)
		}
		fix, _, _ := strings.Cut(got[i0+1:], "\n")
		if j, ok := seen[fix]; ok {
			t.Errorf("%T and %T get the same advice %q", errs[j], err, fix)
		}
		seen[fix] = i
	}
}

type stringer struct{ s string }

func (s stringer) Error() string { return s.s }

func TestActionResultsPrompt(t *testing.T) {
	ordered := lndl.NewObject(2)
	ordered.Set("z", 1)
	ordered.Set("a", 2)
	const head = "Action results, by alias (reference an alias in OUT{} to use its result):"
	for _, tc := range []struct {
		name    string
		results map[string]any
		want    string
	}{
		{"none", nil, ""},
		{"empty", map[string]any{}, ""},
		{"string", map[string]any{"weather": "light snow, -3 C"}, head + "\n- weather: \"light snow, -3 C\""},
		{
			"kinds",
			map[string]any{
				"m":   map[string]any{"region": "us-east", "monthly": 389, "tags": []any{"a", nil}},
				"o":   ordered,
				"n":   json.Number("12345678901234567890"),
				"f":   0.25,
				"b":   true,
				"nil": nil,
				"h":   "<b>&é</b>",
				"e":   stringer{"tool failed: timeout"},
				"l":   []any{1, "two", map[string]any{"k": false}},
			},
			head +
				"\n- b: true" +
				"\n- e: \"tool failed: timeout\"" +
				"\n- f: 0.25" +
				"\n- h: \"<b>&é</b>\"" +
				"\n- l: [1,\"two\",{\"k\":false}]" +
				"\n- m: {\"monthly\":389,\"region\":\"us-east\",\"tags\":[\"a\",null]}" +
				"\n- n: 12345678901234567890" +
				"\n- nil: null" +
				"\n- o: {\"z\":1,\"a\":2}",
		},
		{
			"not json",
			map[string]any{"nan": math.NaN(), "ch": make(chan int)},
			head + "\n- ch: (a chan int that cannot be written as JSON)\n- nan: (a float64 that cannot be written as JSON)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lndl.ActionResultsPrompt(tc.results); got != tc.want {
				t.Errorf("ActionResultsPrompt:\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestActionResultsPromptDeterministic(t *testing.T) {
	build := func(reverse bool) map[string]any {
		m := map[string]any{}
		for i := range 60 {
			k := i
			if reverse {
				k = 59 - i
			}
			m[fmt.Sprintf("r%02d", k)] = map[string]any{"i": k, "sq": k * k, "name": fmt.Sprint("n", k)}
		}
		return m
	}
	want := lndl.ActionResultsPrompt(build(false))
	for i := range 20 {
		if got := lndl.ActionResultsPrompt(build(i%2 == 1)); got != want {
			t.Fatalf("call %d differs:\n%s\nwant\n%s", i, got, want)
		}
	}
	lines := strings.Split(want, "\n")[1:]
	if len(lines) != 60 {
		t.Fatalf("%d lines, want 60", len(lines))
	}
	for i, l := range lines {
		if w := fmt.Sprintf("- r%02d: {\"i\":%d,\"name\":\"n%d\",\"sq\":%d}", i, i, i, i*i); l != w {
			t.Errorf("line %d %q, want %q", i, l, w)
		}
	}
}

func TestActionResultsPromptBounded(t *testing.T) {
	many := map[string]any{}
	for i := range lndl.MaxPromptResults + 50 {
		many[fmt.Sprintf("a%03d", i)] = i
	}
	lines := strings.Split(lndl.ActionResultsPrompt(many), "\n")
	if len(lines) != 1+lndl.MaxPromptResults+1 {
		t.Fatalf("%d lines, want %d", len(lines), lndl.MaxPromptResults+2)
	}
	if got, want := lines[len(lines)-1], "(50 more results not shown; their aliases can still be referenced.)"; got != want {
		t.Errorf("last line %q, want %q", got, want)
	}
	if got, want := lines[lndl.MaxPromptResults], fmt.Sprintf("- a%03d: %d", lndl.MaxPromptResults-1, lndl.MaxPromptResults-1); got != want {
		t.Errorf("last shown %q, want %q", got, want)
	}

	longAlias := strings.Repeat("a", 5000)
	if got := lndl.ActionResultsPrompt(map[string]any{longAlias: 1}); len(got) > 400 {
		t.Errorf("a 5000-byte alias gives a %d-byte message", len(got))
	}

	big := strings.Repeat("ü", 3000) // 6000 bytes
	got := lndl.ActionResultsPrompt(map[string]any{"doc": big})
	line := strings.Split(got, "\n")[1]
	shown := strings.TrimPrefix(line, "- doc: ")
	text, marker, ok := strings.Cut(shown, "…")
	if !ok {
		t.Fatalf("long result not marked: %q...", shown[:40])
	}
	if len(text) > lndl.MaxPromptResultBytes {
		t.Errorf("shown %d bytes of the result, bound %d", len(text), lndl.MaxPromptResultBytes)
	}
	if full := len(big) + 2; marker != fmt.Sprintf(" (%d more bytes)", full-len(text)) {
		t.Errorf("marker %q for %d of %d bytes", marker, len(text), full)
	}
	if !strings.HasPrefix(text, "\"üü") || strings.ContainsRune(text, '\uFFFD') {
		t.Errorf("result cut inside a character")
	}
}

func TestNextRoundPrompt(t *testing.T) {
	target := mustTarget(t, schemaForecast)
	results := map[string]any{"weather": "sun"}
	repair := &lndl.MissingLvarError{Alias: "w"}
	header := "Round 2 of 3.\nSpecs: city(str), forecast(str)"
	for _, tc := range []struct {
		name    string
		results map[string]any
		repair  error
		want    string
	}{
		{"header only", nil, nil, header},
		{"results", results, nil, header + "\n\n" + lndl.ActionResultsPrompt(results)},
		{"repair", nil, repair, header + "\n\n" + lndl.RepairPrompt(repair)},
		{"both", results, repair, header + "\n\n" + lndl.ActionResultsPrompt(results) + "\n\n" + lndl.RepairPrompt(repair)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lndl.NextRoundPrompt(2, 3, target, tc.results, tc.repair); got != tc.want {
				t.Errorf("NextRoundPrompt:\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	want := "Round 2 of 3.\nSpecs: city(str), forecast(str)\n\n" +
		"Action results, by alias (reference an alias in OUT{} to use its result):\n- weather: \"sun\""
	if got := lndl.NextRoundPrompt(2, 3, target, results, nil); got != want {
		t.Errorf("NextRoundPrompt:\n%s\nwant\n%s", got, want)
	}
}

// promptTool is a deterministic stand-in for a tool the operate adapter
// would call through act().
type promptTool func(args map[string]any) any

// exchange is the record of one conversation played by converse.
type exchange struct {
	outcomes []lndl.Outcome
	messages []string // the messages opening rounds 2, 3, ...
	calls    []string // every tool call, as "alias=function"
	repairs  []error  // the error behind every repair message
	errs     []error  // every round's RoundResult.Err
	value    any      // the validated value, nil when exhausted
	err      error    // the error of the last round when exhausted
}

// converse plays responses the way the operate adapter of ADR-0024 (docs/decisions.md) runs
// its rounds: a continue runs every pending action; a success candidate
// runs its pending actions, resolves and validates; a retry or a value
// that does not validate becomes the next round's repair message. Notes
// and action results carry over. Round N+1 opens with NextRoundPrompt.
func converse(t *testing.T, target *lndl.Target, tools map[string]promptTool, maxRounds int, responses ...string) exchange {
	t.Helper()
	var ex exchange
	known := map[string]any{}
	var notes map[string]any
	for round := 1; round <= maxRounds; round++ {
		if round > len(responses) {
			t.Fatalf("round %d has no scripted response", round)
		}
		res := lndl.Round(lndl.RoundInput{Text: responses[round-1], Target: target, ActionResults: known, Notes: notes})
		ex.outcomes = append(ex.outcomes, res.Outcome)
		ex.errs = append(ex.errs, res.Err)
		notes = res.Notes
		executed := map[string]any{}
		for _, a := range res.Pending {
			tool, ok := tools[a.Function]
			if !ok {
				t.Fatalf("round %d: no tool %q for %s", round, a.Function, a.Name)
			}
			executed[a.Name] = tool(a.Arguments)
			known[a.Name] = executed[a.Name]
			ex.calls = append(ex.calls, a.Name+"="+a.Function)
		}
		var repair error
		switch res.Outcome {
		case lndl.OutcomeRetry:
			repair = res.Err
		case lndl.OutcomeSuccess:
			v, err := res.Resolve(executed)
			if err == nil {
				v, err = target.Validate(v)
			}
			if err == nil {
				ex.value = v
				return ex
			}
			repair = err
		}
		ex.err = repair
		if repair != nil {
			ex.repairs = append(ex.repairs, repair)
		}
		if round < maxRounds {
			ex.messages = append(ex.messages, lndl.NextRoundPrompt(round+1, maxRounds, target, executed, repair))
		}
	}
	return ex
}

func num(v any) string {
	if n, ok := v.(json.Number); ok {
		return n.String()
	}
	return fmt.Sprint(v)
}

var promptTools = map[string]promptTool{
	"weather.lookup": func(args map[string]any) any {
		return fmt.Sprintf("%s, day %s: light snow, -3 C", args["city"], num(args["days"]))
	},
	"pricing.quote": func(args map[string]any) any {
		prices := map[string]int{"eu-west": 412, "us-east": 389}
		return map[string]any{"region": args["region"], "monthly": prices[args["region"].(string)]}
	},
	"search.web": func(args map[string]any) any {
		return []any{"https://wiki.example/inc-2041", "https://wiki.example/ttl-jitter"}
	},
	"docs.summarize": func(args map[string]any) any {
		return fmt.Sprintf("Summary of %s in %s words: cache eviction storm, fixed by jittered TTLs.", args["url"], num(args["max_words"]))
	},
}

func TestModelFollowingThePrompt(t *testing.T) {
	incident := `{"$defs": {"Report": {"properties": {
	    "title": {"title": "Title", "type": "string"},
	    "summary": {"title": "Summary", "type": "string"}},
	    "required": ["title", "summary"], "title": "Report", "type": "object"}},
	  "properties": {
	    "report": {"$ref": "#/$defs/Report"},
	    "sources": {"items": {"type": "string"}, "title": "Sources", "type": "array"},
	    "method": {"title": "Method", "type": "string"},
	    "confidence": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": null, "title": "Confidence"}},
	  "required": ["report", "sources", "method"], "title": "Incident", "type": "object"}`

	for _, tc := range []struct {
		name      string
		schema    string
		maxRounds int
		responses []string
		outcomes  []lndl.Outcome
		calls     []string
		value     string   // JSON of the validated value; "" when exhausted
		messages  []string // exact messages opening the later rounds; nil to skip
	}{
		{
			name:      "one round with prose around the block",
			schema:    schemaAnswer,
			maxRounds: 3,
			responses: []string{"The capital of France is not in doubt, so no tool is needed.\n\n" +
				"```lndl\n<lvar answer a>Paris</lvar>\nOUT {answer: a, confidence: 0.99}\n```\n\n" +
				"That is my final answer. (A tag out here, <lvar answer b>Lyon</lvar>, is not read.)\n"},
			outcomes: []lndl.Outcome{lndl.OutcomeSuccess},
			value:    `{"answer":"Paris","confidence":0.99}`,
		},
		{
			name:      "look up, then answer",
			schema:    schemaForecast,
			maxRounds: 3,
			responses: []string{
				"I need the forecast before I can answer.\n\n```lndl\n<lact weather>weather.lookup(city=\"Oslo\", days=1)</lact>\n```\n",
				"The lookup returned a forecast; committing it.\n\n```lndl\nOUT{city: \"Oslo\", forecast: [weather]}\n```\n",
			},
			outcomes: []lndl.Outcome{lndl.OutcomeContinue, lndl.OutcomeSuccess},
			calls:    []string{"weather=weather.lookup"},
			value:    `{"city":"Oslo","forecast":"Oslo, day 1: light snow, -3 C"}`,
			messages: []string{"Round 2 of 3.\nSpecs: city(str), forecast(str)\n\n" +
				"Action results, by alias (reference an alias in OUT{} to use its result):\n" +
				"- weather: \"Oslo, day 1: light snow, -3 C\""},
		},
		{
			name:      "two quotes and a note",
			schema:    schemaRegion,
			maxRounds: 3,
			responses: []string{
				"Plan: get both quotes.\n\n```lndl\n<lvar note.method>Lower standard-tier monthly price wins.</lvar>\n" +
					"<lact eu>pricing.quote(region=\"eu-west\", tier=\"standard\")</lact>\n" +
					"<lact us>pricing.quote(region=\"us-east\", tier=\"standard\")</lact>\n```\n",
				"us-east is cheaper (389 against 412).\n\n```lndl\n<lvar region r>us-east</lvar>\nOUT{region: [r], reasoning: [note.method]}\n```\n",
			},
			outcomes: []lndl.Outcome{lndl.OutcomeContinue, lndl.OutcomeSuccess},
			calls:    []string{"eu=pricing.quote", "us=pricing.quote"},
			value:    `{"region":"us-east","reasoning":"Lower standard-tier monthly price wins."}`,
			messages: []string{"Round 2 of 3.\nSpecs: region(str), reasoning(str)\n\n" +
				"Action results, by alias (reference an alias in OUT{} to use its result):\n" +
				"- eu: {\"monthly\":412,\"region\":\"eu-west\"}\n" +
				"- us: {\"monthly\":389,\"region\":\"us-east\"}"},
		},
		{
			name:      "three rounds: notes, results, a re-declared lact and shortcuts",
			schema:    incident,
			maxRounds: 4,
			responses: []string{
				"First I search.\n\n```lndl\n<lvar note.plan>Search, read the top hit, then report.</lvar>\n" +
					"<lact hits>search.web(query=\"INC-2041 cache eviction\", limit=2)</lact>\n```\n",
				"The first hit is the incident page. I will keep it and read it.\n\n```lndl\n" +
					"<lvar note.source>https://wiki.example/inc-2041</lvar>\n" +
					"<lact doc>docs.summarize(url=\"https://wiki.example/inc-2041\", max_words=30)</lact>\n```\n",
				"Everything is known now.\n\n```lndl\n<lvar Report.title t>INC-2041: cache eviction storm</lvar>\n```\n" +
					"The summary is the result of doc; declaring it again under its alias places it without running it again.\n\n" +
					"```lndl\n<lact Report.summary doc>docs.summarize(url=\"https://wiki.example/inc-2041\", max_words=30)</lact>\n" +
					"OUT{t, doc, sources: [hits], method: [note.plan], confidence: 0.8}\n```\n",
			},
			outcomes: []lndl.Outcome{lndl.OutcomeContinue, lndl.OutcomeContinue, lndl.OutcomeSuccess},
			calls:    []string{"hits=search.web", "doc=docs.summarize"},
			value: `{"report":{"title":"INC-2041: cache eviction storm",` +
				`"summary":"Summary of https://wiki.example/inc-2041 in 30 words: cache eviction storm, fixed by jittered TTLs."},` +
				`"sources":["https://wiki.example/inc-2041","https://wiki.example/ttl-jitter"],` +
				`"method":"Search, read the top hit, then report.","confidence":0.8}`,
		},
		{
			name:      "repair after a duplicate alias",
			schema:    schemaAnswer,
			maxRounds: 2,
			responses: []string{
				"```lndl\n<lvar answer a>Paris</lvar>\n<lact a>weather.lookup(city=\"Paris\", days=1)</lact>\nOUT{answer: [a], confidence: 0.9}\n```\n",
				"Renamed the second alias.\n\n```lndl\n<lvar answer a>Paris</lvar>\nOUT{answer: [a], confidence: 0.9}\n```\n",
			},
			outcomes: []lndl.Outcome{lndl.OutcomeRetry, lndl.OutcomeSuccess},
			value:    `{"answer":"Paris","confidence":0.9}`,
			messages: []string{"Round 2 of 2. This is the last round: commit your result in OUT{} now.\n" +
				"Specs: answer(str), confidence(float)\n\n" +
				"Your last response could not be used.\n" +
				"Error: Parse error at line 2, column 51: Duplicate alias 'a' - aliases must be unique across lvars and lacts\n" +
				"Where: line 2, column 51 of the text inside your lndl blocks (read as one text).\n" +
				"Fix: every <lvar> and <lact> needs its own alias; rename one of the two and update OUT{} to match.\n" +
				"Send the whole response again, corrected."},
		},
		{
			name:      "repair after a value that does not validate",
			schema:    schemaAnswer,
			maxRounds: 3,
			responses: []string{
				"```lndl\n<lact w>weather.lookup(city=\"Bergen\", days=2)</lact>\nOUT{answer: [w], confidence: \"high\"}\n```\n",
				"Confidence must be a number.\n\n```lndl\nOUT{answer: [w], confidence: 0.7}\n```\n",
			},
			outcomes: []lndl.Outcome{lndl.OutcomeSuccess, lndl.OutcomeSuccess},
			calls:    []string{"w=weather.lookup"},
			value:    `{"answer":"Bergen, day 2: light snow, -3 C","confidence":0.7}`,
			messages: []string{"Round 2 of 3.\nSpecs: answer(str), confidence(float)\n\n" +
				"Action results, by alias (reference an alias in OUT{} to use its result):\n" +
				"- w: \"Bergen, day 2: light snow, -3 C\"\n\n" +
				"Your last response could not be used.\n" +
				"Error: 1 validation error(s) against the target; confidence: input should be a valid number, unable to parse string as a number [float_parsing]\n" +
				"Fix: the assembled result does not fit the Specs line. Correct the values of the fields named above (the right type, nothing missing) and commit OUT{} again.\n" +
				"Send the whole response again, corrected."},
		},
		{
			name:      "no block is thinking, and the budget runs out",
			schema:    schemaAnswer,
			maxRounds: 2,
			responses: []string{
				"Let me think about this first.",
				"Still thinking; <lvar answer a>x</lvar> OUT{answer: [a]} outside a block is not read.",
			},
			outcomes: []lndl.Outcome{lndl.OutcomeContinue, lndl.OutcomeContinue},
			messages: []string{"Round 2 of 2. This is the last round: commit your result in OUT{} now.\nSpecs: answer(str), confidence(float)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := mustTarget(t, tc.schema)
			ex := converse(t, target, promptTools, tc.maxRounds, tc.responses...)
			if fmt.Sprint(ex.outcomes) != fmt.Sprint(tc.outcomes) {
				t.Errorf("outcomes %v, want %v (repairs %v)", ex.outcomes, tc.outcomes, ex.repairs)
			}
			if fmt.Sprint(ex.calls) != fmt.Sprint(tc.calls) {
				t.Errorf("tool calls %v, want %v", ex.calls, tc.calls)
			}
			if tc.value == "" {
				if ex.value != nil {
					t.Errorf("value %s, want none", mustJSON(t, ex.value))
				}
			} else if ex.value == nil {
				t.Errorf("no value; last error %v", ex.err)
			} else if got := mustJSON(t, ex.value); got != tc.value {
				t.Errorf("value\n got %s\nwant %s", got, tc.value)
			}
			if tc.messages != nil && fmt.Sprintf("%q", ex.messages) != fmt.Sprintf("%q", tc.messages) {
				t.Errorf("messages\n got %q\nwant %q", ex.messages, tc.messages)
			}
			// Every block the scripted model wrote parses, except in a
			// round whose error is a ParseError.
			for i := range ex.outcomes {
				blocks := lndl.Extract(tc.responses[i])
				if len(blocks) == 0 {
					continue
				}
				_, err := lndl.Parse(lndl.NormalizeBlock(strings.Join(blocks, "\n\n")))
				var pe *lndl.ParseError
				if (err != nil) != errors.As(ex.errs[i], &pe) {
					t.Errorf("response %d: Parse error %v, round error %v", i+1, err, ex.errs[i])
				}
			}
		})
	}
}

// TestSystemPromptClaims checks the rules the prompt states in prose, one
// response each.
func TestSystemPromptClaims(t *testing.T) {
	const (
		generic = `{"properties": {
		  "answer": {"type": "string"},
		  "count": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null},
		  "ok": {"anyOf": [{"type": "boolean"}, {"type": "null"}], "default": null},
		  "tags": {"anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}], "default": null}},
		  "required": ["answer"], "title": "Generic", "type": "object"}`
		findings = `{"$defs": {"Finding": {"properties": {
		    "name": {"type": "string"}, "severity": {"type": "string"}},
		    "required": ["name", "severity"], "title": "Finding", "type": "object"}},
		  "properties": {"findings": {"items": {"$ref": "#/$defs/Finding"}, "type": "array"}},
		  "required": ["findings"], "title": "Audit", "type": "object"}`
	)
	block := func(s string) string { return "Some prose.\n\n```lndl\n" + s + "\n```\nMore prose.\n" }
	for _, tc := range []struct {
		claim     string
		schema    string
		results   map[string]any
		notes     map[string]any
		text      string
		outcome   lndl.Outcome
		pending   []string
		assembled string // Resolve(nil) before validation
		value     string // validated value after Resolve(nil)
		errText   string // start of the retry error
	}{
		{
			claim: "tags in prose are ignored", schema: generic,
			text:    "<lvar answer a>x</lvar> OUT{answer: [a]}\n" + block("<lvar answer b>y</lvar>\nOUT{answer: [b]}"),
			outcome: lndl.OutcomeSuccess, value: `{"answer":"y","count":null,"ok":null,"tags":null}`,
		},
		{
			claim: "blocks are read together, in order", schema: generic,
			text:    block("<lvar answer a>x</lvar>") + "between\n" + block("OUT{answer: [a]}"),
			outcome: lndl.OutcomeSuccess, value: `{"answer":"x","count":null,"ok":null,"tags":null}`,
		},
		{
			claim: "a fence line inside an lndl block closes it", schema: generic,
			text:    "```lndl\n<lvar answer a>x\n```\n</lvar>\nOUT{answer: [a]}\n```\n",
			outcome: lndl.OutcomeRetry, errText: "Parse error at line 1, column 16: Unclosed lvar tag - missing </lvar>",
		},
		{
			claim: "42 fills an int field and true a bool field", schema: generic,
			text:    block("<lvar answer a>x</lvar>\n<lvar n>42</lvar>\n<lvar b>true</lvar>\nOUT{answer: [a], count: [n], ok: [b]}"),
			outcome: lndl.OutcomeSuccess, value: `{"answer":"x","count":42,"ok":true,"tags":null}`,
		},
		{
			claim: "an alias is declared once per response, across lvars and lacts", schema: generic,
			text:    block("<lvar a>x</lvar>\n<lact a>f()</lact>\nOUT{answer: [a]}"),
			outcome: lndl.OutcomeRetry, errText: "Parse error at line 2, column 18: Duplicate alias 'a' - aliases must be unique across lvars and lacts",
		},
		{
			claim: "the alias of note.plan is plan", schema: generic,
			text:    block("<lvar note.plan>x</lvar>\n<lvar plan>y</lvar>\nOUT{answer: [plan]}"),
			outcome: lndl.OutcomeRetry, errText: "Parse error at line 2, column 19: Duplicate alias 'plan' - aliases must be unique across lvars and lacts",
		},
		{
			claim: "a lact argument must be a literal", schema: generic,
			text:    block("<lact a>search(query=topic)</lact>"),
			outcome: lndl.OutcomeRetry, errText: "lact 'a' body is not a parseable function call: 'search(query=topic)'",
		},
		{
			claim: "OUT with a space before the brace", schema: generic,
			text:    block("<lvar answer a>x</lvar>\nOUT {answer: [a]}"),
			outcome: lndl.OutcomeSuccess, value: `{"answer":"x","count":null,"ok":null,"tags":null}`,
		},
		{
			claim: "only the first OUT is read", schema: generic,
			text:    block("<lvar answer a>x</lvar>\nOUT{answer: [a]}\n<lvar answer b>y</lvar>\nOUT{answer: [b], count: 3}"),
			outcome: lndl.OutcomeSuccess, value: `{"answer":"x","count":null,"ok":null,"tags":null}`,
		},
		{
			claim: "literals in a list are values, in order with references", schema: generic,
			text:      block("<lvar answer a>x</lvar>\n<lvar t>ops</lvar>\nOUT{answer: [a], tags: [\"urgent\", t, 3]}"),
			outcome:   lndl.OutcomeSuccess,
			assembled: `{"answer":"x","tags":["urgent","ops",3]}`, // 3 then fails validation: no str
		},
		{
			claim: "one lvar with one item per line fills a list", schema: generic,
			text:    block("<lvar answer a>x</lvar>\n<lvar tags t>first\nsecond\n</lvar>\nOUT{answer: [a], tags: [t]}"),
			outcome: lndl.OutcomeSuccess, value: `{"answer":"x","count":null,"ok":null,"tags":["first","second"]}`,
		},
		{
			claim: "a shortcut of a plain alias goes to the field of that name", schema: generic,
			text:    block("<lvar answer>x</lvar>\nOUT{answer}"),
			outcome: lndl.OutcomeSuccess, value: `{"answer":"x","count":null,"ok":null,"tags":null}`,
		},
		{
			claim: "a shortcut of hint alias goes to the field hint", schema: generic,
			text:    block("<lvar answer a>x</lvar>\n<lvar count c>7</lvar>\nOUT{a, c}"),
			outcome: lndl.OutcomeSuccess, value: `{"answer":"x","count":7,"ok":null,"tags":null}`,
		},
		{
			claim: "in a flat list of models a new item starts when a field repeats", schema: findings,
			text: block("<lvar Finding.name n1>a</lvar>\n<lvar Finding.severity s1>high</lvar>\n" +
				"<lvar Finding.name n2>b</lvar>\n<lvar Finding.severity s2>low</lvar>\nOUT{findings: [n1, s1, n2, s2]}"),
			outcome: lndl.OutcomeSuccess, value: `{"findings":[{"name":"a","severity":"high"},{"name":"b","severity":"low"}]}`,
		},
		{
			claim: "groups without a field go where their first alias points", schema: findings,
			text: block("<lvar Finding.name n1>a</lvar>\n<lvar Finding.severity s1>high</lvar>\n" +
				"<lvar Finding.name n2>b</lvar>\n<lvar Finding.severity s2>low</lvar>\nOUT{[n1, s1], [n2, s2]}"),
			outcome: lndl.OutcomeSuccess, value: `{"findings":[{"name":"a","severity":"high"},{"name":"b","severity":"low"}]}`,
		},
		{
			claim: "an object result becomes JSON text in a str field", schema: generic,
			results: map[string]any{"q": map[string]any{"region": "us-east", "monthly": 389}},
			text:    block("OUT{answer: [q]}"),
			outcome: lndl.OutcomeSuccess, value: `{"answer":"{\"monthly\":389,\"region\":\"us-east\"}","count":null,"ok":null,"tags":null}`,
		},
		{
			claim: "with OUT only referenced lacts run", schema: generic,
			text:    block("<lact answer a>f(x=1)</lact>\n<lact b>g(y=2)</lact>\nOUT{answer: [a]}"),
			outcome: lndl.OutcomeSuccess, pending: []string{"a"},
		},
		{
			claim: "without OUT every lact runs, even one that ran before", schema: generic,
			results: map[string]any{"a": "old"},
			text:    block("<lact a>f(x=1)</lact>\n<lact b>g(y=2)</lact>"),
			outcome: lndl.OutcomeContinue, pending: []string{"a", "b"},
		},
		{
			claim: "with OUT a re-declared lact with a result does not run again", schema: generic,
			results: map[string]any{"a": "known"},
			text:    block("<lact answer a>f(x=1)</lact>\nOUT{answer: [a]}"),
			outcome: lndl.OutcomeSuccess, value: `{"answer":"known","count":null,"ok":null,"tags":null}`,
		},
		{
			claim: "an earlier result is referenced without declaring it", schema: generic,
			results: map[string]any{"w": "snow"},
			text:    block("OUT{answer: w}"),
			outcome: lndl.OutcomeSuccess, value: `{"answer":"snow","count":null,"ok":null,"tags":null}`,
		},
		{
			claim: "notes carry over and are referenced as note.x", schema: generic,
			notes:   map[string]any{"plan": "from round one"},
			text:    block("OUT{answer: [note.plan]}"),
			outcome: lndl.OutcomeSuccess, value: `{"answer":"from round one","count":null,"ok":null,"tags":null}`,
		},
		{
			claim: "a note that was never declared is left out", schema: generic,
			text:    block("<lvar answer a>x</lvar>\nOUT{answer: [a], tags: [note.missing]}"),
			outcome: lndl.OutcomeSuccess, value: `{"answer":"x","count":null,"ok":null,"tags":null}`,
		},
		{
			claim: "a missing required field is an error", schema: generic,
			text:    block("<lvar count c>1</lvar>\nOUT{count: [c]}"),
			outcome: lndl.OutcomeRetry, errText: "OUT{} is missing required field(s): answer",
		},
		{
			claim: "a response without a block changes nothing", schema: generic,
			notes:   map[string]any{"plan": "kept"},
			text:    "Thinking, no block yet. <lact a>f()</lact>",
			outcome: lndl.OutcomeContinue,
		},
	} {
		t.Run(tc.claim, func(t *testing.T) {
			target := mustTarget(t, tc.schema)
			res := lndl.Round(lndl.RoundInput{Text: tc.text, Target: target, ActionResults: tc.results, Notes: tc.notes})
			if res.Outcome != tc.outcome {
				t.Fatalf("outcome %v (err %v), want %v", res.Outcome, res.Err, tc.outcome)
			}
			if tc.outcome == lndl.OutcomeRetry {
				if res.Err == nil || !strings.HasPrefix(res.Err.Error(), tc.errText) {
					t.Errorf("error %v, want %q", res.Err, tc.errText)
				}
				return
			}
			if got := aliases(res.Pending); fmt.Sprint(got) != fmt.Sprint(tc.pending) {
				t.Errorf("pending %v, want %v", got, tc.pending)
			}
			if fmt.Sprint(res.Notes) != fmt.Sprint(nonNil(tc.notes)) {
				t.Errorf("notes %v, want %v", res.Notes, tc.notes)
			}
			if tc.assembled == "" && tc.value == "" {
				return
			}
			v, err := res.Resolve(nil)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if tc.assembled != "" {
				if got := mustJSON(t, v); got != tc.assembled {
					t.Errorf("assembled\n got %s\nwant %s", got, tc.assembled)
				}
				return
			}
			if v, err = target.Validate(v); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := mustJSON(t, v); got != tc.value {
				t.Errorf("value\n got %s\nwant %s", got, tc.value)
			}
		})
	}
}

func nonNil(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
