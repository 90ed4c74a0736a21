package lndl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// fence is the three backticks of a fenced block; Go raw strings cannot
// hold them, so SystemPrompt is spliced around it.
const fence = "```"

// SystemPrompt teaches a model to answer in LNDL (docs/lndl.md#prompts): the
// fence rule, the four head forms, lvar and lact, the OUT forms, the
// per-round action rule, literal-only call arguments, unique aliases, the
// note namespace and the multi-round mode. Its worked examples parse and
// assemble under this package's rules; the package tests run every one of
// them through [Round].
//
// The adapter sends it, followed by the target's Specs line and the
// caller's guidance, as the system guidance of the first round (see
// [Guidance]). It is constant, so the same request always gets the same
// prompt.
const SystemPrompt = `LNDL: how to hand over your result

You answer in LNDL, a small language for handing over a structured result. Reason and explain in
ordinary prose as much as you need; the result is read only from LNDL blocks, and everything
outside them is ignored.

1. Blocks

Write LNDL inside a fenced block: an opening line that is exactly three backticks followed by
lndl, the LNDL lines, and a closing line that is exactly three backticks. Both fence lines start
at the beginning of the line and carry nothing else. Only these blocks are read: tags in prose, in
a block with another label or in an unlabelled block are ignored. Several lndl blocks in one
response are read together, in order, as one text. Never put a fence line inside an lndl block,
because it closes the block. Keep prose outside the blocks.

2. The Specs line

The fields to fill come in a line like this one:
Specs: report(Report: title, summary), tags(list[str]), quality(float, optional)
Each entry is field(type). Types are str, int, float, bool, Any, list[T], dict[str, V], an enum's
name, or a nested model written as Name: field1, field2 (a list of models: list[Name: f1, f2]).
A field marked optional may be left out; every other field must appear in OUT{}.

3. Declarations

<lvar HEAD>text</lvar> declares a value: the text between the tags, trimmed. It is never
evaluated; it is converted to the field's type at the end, so 42 can fill an int field and true a
bool field.
<lact HEAD>call</lact> declares an action: a call of one of the tools you were given (see 4).

A HEAD has one of four forms, the same for lvar and lact:
    Model.field alias    a value for field of the nested model Model, named alias
    Model.field          the same, named after the field
    hint alias           a plain value meant for the field called hint, named alias
    alias                a plain value named alias
Model is a model name from the Specs line, in any letter case, or the name of the field that
holds that model; for a dict field it is the field's name and field is the key (see 5). Names
are letters, digits and underscores, not starting with a digit: no hyphens, spaces or dots in an
alias. An alias may be declared only once per response, across lvars and lacts together. Close
every tag with exactly </lvar> or </lact>.

4. Action calls

A lact body is one function call and nothing else: tool(name=value, ...) or
service.tool(name=value, ...). Every argument is a literal: a quoted string, a number, true,
false or null (True, False and None work too), or a list or dict of literals. Prefer keyword
arguments. No variables, no aliases, no arithmetic, no string formatting, no nested calls. When an
argument depends on another action's result, run that action first (a response without OUT{},
see 6) and write the value you got into the next call.

5. OUT{}

OUT{...} commits the result. Write OUT in capitals and { on the same line (spaces between them
are fine), and close it with }. Only the first OUT{} of a response is read and everything after it
is ignored, so write it last. Entries are separated by commas or line breaks:
    field: [a, b, "text", 3]    references and literals, in order
    field: a                    one reference, the same as field: [a]
    field: "text"               one literal: a quoted string, a number, true, false or null
    a                           a shortcut: the alias goes to the field its head points at
    [a, b]                      a group: goes where a shortcut for a would go

A reference is an alias declared in this response, the alias of an action that ran in an earlier
round, or a note (note.name, see 7). Inside a list, quoted strings, numbers, true, false and null
are values, not names: tags: ["urgent", t] gives the text urgent followed by the value of t.
Referencing an alias that nothing declared is an error.

How the parts become a field's value:
- A str, int, float or bool field takes exactly one part; several parts make a list, which it
  rejects.
- A nested model (Name: f1, f2): a part declared Name.f sets f; any other part fills the next
  empty field, in order.
- A list of models (list[Name: f1, f2]): one group per item, findings: [[n1, s1], [n2, s2]]. In
  a flat list a new item starts when a field repeats.
- A list of plain values (list[str]): list the parts, or give one lvar whose text has one item
  per line.
- A dict (dict[str, V]): declare each entry as <lvar field.key alias>value</lvar> and list the
  aliases: scores: [p, r].
- An action result that is an object or a list becomes its JSON text in a str field.
A shortcut or a group goes to the field its first alias points at: for hint alias, the field
hint; for Model.field alias, the field called Model, else the field whose model is Model, else
the field called field; for a plain alias, the field with the alias's own name. So
<lvar Report.title t> and <lvar Report.summary s> with OUT{t, s} fill the field whose model is
Report.

6. When actions run

Actions run after your response, never inside it:
- A response with OUT{}: only the lacts that OUT{} references run, and each result takes its
  alias's place. A lact that OUT{} does not reference never runs.
- A response without OUT{}: every lact in it runs, even one that ran before. The next round's
  message lists the results by alias; reference them there in OUT{} without declaring them
  again. Use this when you need to see a result before you can answer.
- A response without an lndl block changes nothing and uses up a round.
A result stays known by its alias for the rest of the exchange, so give new declarations fresh
aliases. In a response with OUT{}, a lact declared again under an alias that already has a
result does not run again: the known result is used, placed by the new head (a way to give an
earlier result a Model.field head).

7. Notes

A note is an lvar whose head starts with note.: <lvar note.plan>compare both regions</lvar>.
Notes are not result fields; they are your scratchpad, and they carry over to every later round
of the exchange. Reference a note as note.plan, with note in lower case, in an OUT{} list or as a
field's value: reasoning: [note.plan]. The alias of <lvar note.plan> is plan, so no other
declaration in the same response may use plan. Declaring note.plan again in a later round
replaces it. A reference to a note that was never declared is left out. Only lvars can be notes.

8. Rounds

An exchange may take several rounds, up to a fixed limit. Each message after the first begins
with "Round N of M." and the Specs line, then lists the results of the actions that ran. If your
last response could not be used, the message then says why: it quotes the error (a syntax error
with its line and column, counted within the text of your lndl blocks) and what to fix. Then
send the whole response again, corrected. The first response whose OUT{} assembles and matches the Specs ends
the exchange, so commit an OUT{} by the last round at the latest.

9. Examples

Example 1: one value and one literal.
Specs: answer(str), confidence(float)

` + fence + `lndl
<lvar answer a>Paris is the capital of France.</lvar>
OUT{answer: [a], confidence: 0.95}
` + fence + `

Result: {"answer":"Paris is the capital of France.","confidence":0.95}

Example 2: a nested model filled by shortcuts, and a list of literals.
Specs: report(Report: title, summary), tags(list[str]), quality(float)

` + fence + `lndl
<lvar Report.title t>Q3 latency review</lvar>
<lvar Report.summary s>p99 latency fell from 840 ms to 310 ms after the cache change.</lvar>
OUT{t, s, tags: ["latency", "caching"], quality: 0.8}
` + fence + `

Result: {"report":{"title":"Q3 latency review","summary":"p99 latency fell from 840 ms to 310 ms after the cache change."},"tags":["latency","caching"],"quality":0.8}

Example 3: a list of models in groups, and a dict.
Specs: findings(list[Finding: name, severity]), scores(dict[str, float])

` + fence + `lndl
<lvar Finding.name n1>Unbounded retry loop</lvar>
<lvar Finding.severity v1>high</lvar>
<lvar Finding.name n2>No timeout on the HTTP client</lvar>
<lvar Finding.severity v2>medium</lvar>
<lvar scores.precision p>0.9</lvar>
<lvar scores.recall r>0.75</lvar>
OUT{findings: [[n1, v1], [n2, v2]], scores: [p, r]}
` + fence + `

Result: {"findings":[{"name":"Unbounded retry loop","severity":"high"},{"name":"No timeout on the HTTP client","severity":"medium"}],"scores":{"precision":0.9,"recall":0.75}}

Example 4: an action referenced from OUT{}; only that one runs.
Specs: report(Report: title, summary), quality(float)

` + fence + `lndl
<lvar Report.title t>INC-2041 postmortem</lvar>
<lact Report.summary s>docs.summarize(doc_id="INC-2041", max_words=60)</lact>
<lact long>docs.summarize(doc_id="INC-2041", max_words=600)</lact>
OUT{report: [t, s], quality: 0.7}
` + fence + `

Runs: s. The lact long is not referenced, so it never runs.
If s returns "Cache eviction storm; fixed by jittered TTLs.", the result is:
Result: {"report":{"title":"INC-2041 postmortem","summary":"Cache eviction storm; fixed by jittered TTLs."},"quality":0.7}

Example 5: look something up first, answer in the next round.
Specs: city(str), forecast(str)
Your first response:

` + fence + `lndl
<lact weather>weather.lookup(city="Oslo", days=1)</lact>
` + fence + `

Runs: weather. There is no OUT{}, so every lact runs. The next message reads:

    Round 2 of 3.
    Specs: city(str), forecast(str)

    Action results, by alias (reference an alias in OUT{} to use its result):
    - weather: "light snow, -3 C"

Your second response:

` + fence + `lndl
OUT{city: "Oslo", forecast: [weather]}
` + fence + `

Result: {"city":"Oslo","forecast":"light snow, -3 C"}

Example 6: a note kept from one round to the next.
Specs: region(str), reasoning(str)
Your first response:

` + fence + `lndl
<lvar note.method>Quoted both regions at the standard tier; the lower monthly price wins.</lvar>
<lact eu>pricing.quote(region="eu-west", tier="standard")</lact>
<lact us>pricing.quote(region="us-east", tier="standard")</lact>
` + fence + `

Runs: eu, us. There is no OUT{}, so every lact runs, and note.method is kept. The next message
reads:

    Round 2 of 3.
    Specs: region(str), reasoning(str)

    Action results, by alias (reference an alias in OUT{} to use its result):
    - eu: {"monthly":412,"region":"eu-west"}
    - us: {"monthly":389,"region":"us-east"}

Your second response:

` + fence + `lndl
<lvar region r>us-east</lvar>
OUT{region: [r], reasoning: [note.method]}
` + fence + `

Result: {"region":"us-east","reasoning":"Quoted both regions at the standard tier; the lower monthly price wins."}
`

// Bounds of the round messages.
const (
	// MaxPromptErrorBytes bounds the error text that [RepairPrompt]
	// quotes; a longer message (a long lact body, many validation issues)
	// is cut at a character boundary and marked.
	MaxPromptErrorBytes = 2048
	// MaxPromptResultBytes bounds the JSON text of one result in
	// [ActionResultsPrompt]; a longer one is cut at a character boundary
	// and marked. The model still references the full result by alias.
	MaxPromptResultBytes = 2048
	// MaxPromptResults bounds how many results [ActionResultsPrompt]
	// lists; the rest are counted in a final line.
	MaxPromptResults = 100

	// maxPromptName bounds a name (an alias, a model) that RepairPrompt
	// repeats in its advice or ActionResultsPrompt lists.
	maxPromptName = 200
)

// Guidance returns the system guidance of the first round (docs/decisions.md, ADR-0024 D2):
// [SystemPrompt], the target's Specs line (see [Render]) when there is
// one, and extra, the caller's own guidance, when it is not empty, joined
// with blank lines.
func Guidance(target *Target, extra string) string {
	parts := []string{strings.TrimRight(SystemPrompt, "\n")}
	if specs, ok := RenderSpecs(target); ok {
		parts = append(parts, specs)
	}
	if strings.TrimSpace(extra) != "" {
		parts = append(parts, extra)
	}
	return strings.Join(parts, "\n\n")
}

// RoundPrompt returns the header of the message that opens a later round
// (docs/decisions.md, ADR-0024 D2): "Round N of M." on the first line, followed on the last
// round by a reminder to commit OUT{} now, then the target's Specs line
// when there is one. For example:
//
//	Round 2 of 3.
//	Specs: answer(str), detail(str, optional)
//
// A round below 1 is written as 1 and a maxRounds below the round as the
// round, so the header never reads "Round 4 of 3".
func RoundPrompt(round, maxRounds int, target *Target) string {
	round = max(round, 1)
	maxRounds = max(maxRounds, round)
	var b strings.Builder
	fmt.Fprintf(&b, "Round %d of %d.", round, maxRounds)
	if round == maxRounds {
		b.WriteString(" This is the last round: commit your result in OUT{} now.")
	}
	if specs, ok := RenderSpecs(target); ok {
		b.WriteByte('\n')
		b.WriteString(specs)
	}
	return b.String()
}

// RepairPrompt returns the message that tells the model why its last
// response could not be used and what to fix: the error's message (at
// most [MaxPromptErrorBytes] of it), for a [*ParseError] where to look
// (its line and column within the joined lndl text), and advice chosen by
// the error's class, found with errors.As so a wrapped error works too.
// Classes: *ParseError (by reason: duplicate alias, unclosed tag, OUT
// nesting, number literal, input size, other syntax),
// *MissingLvarError, *MissingFieldError, *TypeMismatchError,
// *InvalidConstructorError and *ValidationError; any other error gets
// general advice. Names repeated in the advice are cut to 200 bytes, so
// the message is bounded whatever the error holds. A nil error gives "".
func RepairPrompt(err error) string {
	if err == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("Your last response could not be used.\nError: ")
	b.WriteString(cutText(err.Error(), MaxPromptErrorBytes))
	b.WriteByte('\n')
	var (
		pe  *ParseError
		mle *MissingLvarError
		mfe *MissingFieldError
		tme *TypeMismatchError
		ice *InvalidConstructorError
		ve  *ValidationError
	)
	switch {
	case errors.As(err, &pe):
		if !strings.HasPrefix(pe.Reason, "Input too large") {
			fmt.Fprintf(&b, "Where: line %d, column %d of the text inside your lndl blocks (read as one text).\n", pe.Line, pe.Column)
		}
		b.WriteString("Fix: ")
		b.WriteString(parseAdvice(pe.Reason))
	case errors.As(err, &mle):
		fmt.Fprintf(&b, "Fix: OUT{} names '%s', but no <lvar> or <lact> in your response declares it and no earlier action has that alias. Declare it, correct the name, or write the value as a quoted literal.",
			cutText(mle.Alias, maxPromptName))
	case errors.As(err, &mfe):
		b.WriteString("Fix: add every field listed above to OUT{}, as field: [alias] or field: literal. Only fields marked optional in the Specs line may be left out.")
	case errors.As(err, &tme):
		fmt.Fprintf(&b, "Fix: the field expects model '%s'. Declare the value as <lvar %s.field %s> (the model name from the Specs line), or put '%s' under a field whose model is '%s'.",
			cutText(tme.Expected, maxPromptName), cutText(tme.Expected, maxPromptName),
			cutText(tme.Alias, maxPromptName), cutText(tme.Alias, maxPromptName), cutText(tme.Declared, maxPromptName))
	case errors.As(err, &ice):
		b.WriteString("Fix: a <lact> body is exactly one call such as service.tool(name=\"value\", n=3). Arguments must be literals: quoted strings, numbers, true, false, null, and lists or dicts of these. No variables, aliases, arithmetic, string formatting or nested calls.")
	case errors.As(err, &ve):
		b.WriteString("Fix: the assembled result does not fit the Specs line. Correct the values of the fields named above (the right type, nothing missing) and commit OUT{} again.")
	default:
		b.WriteString("Fix: check the response against the LNDL rules: one ```lndl block, declarations with unique aliases, and one OUT{} that fills every required field.")
	}
	b.WriteString("\nSend the whole response again, corrected.")
	return b.String()
}

// parseAdvice returns the fix for a ParseError's reason.
func parseAdvice(reason string) string {
	switch {
	case strings.HasPrefix(reason, "Duplicate alias"):
		return "every <lvar> and <lact> needs its own alias; rename one of the two and update OUT{} to match."
	case strings.HasPrefix(reason, "Unclosed lvar tag"):
		return "close every <lvar ...> with exactly </lvar>."
	case strings.HasPrefix(reason, "Unclosed lact tag"):
		return "close every <lact ...> with exactly </lact>."
	case strings.HasPrefix(reason, "OUT block nesting too deep"):
		return "use at most two levels of brackets in OUT{}: a list, or a list of groups."
	case strings.HasPrefix(reason, "Invalid number literal"):
		return "write numbers in OUT{} as plain decimals such as 42 or 0.75, or put the value in an <lvar>."
	case strings.HasPrefix(reason, "Input too large"):
		return "send a much shorter response: brief reasoning, and only the declarations OUT{} needs."
	}
	return "check the tag at that position. A head is Model.field alias, Model.field, hint alias or alias (names of letters, digits and _), then >, the value, and </lvar> or </lact>."
}

// ActionResultsPrompt returns the message that gives the model the
// results of the actions that ran, one line per alias, sorted by alias
// (byte order), each result as compact JSON text: object keys in the order
// encoding/json writes a map (sorted) or an *Object keeps, no HTML
// escaping. An error value is written as its message, a value JSON cannot
// hold as a note saying so. A result longer than [MaxPromptResultBytes]
// (an alias longer than 200 bytes) is cut and marked; after
// [MaxPromptResults] lines the rest are counted, so the message is
// bounded whatever the results hold.
// The output depends only on the results, never on map order. No results
// give "".
func ActionResultsPrompt(results map[string]any) string {
	if len(results) == 0 {
		return ""
	}
	aliases := make([]string, 0, len(results))
	for a := range results {
		aliases = append(aliases, a)
	}
	sort.Strings(aliases)
	var b strings.Builder
	b.WriteString("Action results, by alias (reference an alias in OUT{} to use its result):")
	for i, a := range aliases {
		if i == MaxPromptResults {
			fmt.Fprintf(&b, "\n(%d more results not shown; their aliases can still be referenced.)", len(aliases)-i)
			break
		}
		b.WriteString("\n- ")
		b.WriteString(cutText(a, maxPromptName))
		b.WriteString(": ")
		b.WriteString(cutText(resultText(results[a]), MaxPromptResultBytes))
	}
	return b.String()
}

// resultText returns v as compact JSON text.
func resultText(v any) string {
	if e, ok := v.(error); ok {
		v = e.Error()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("(a %T that cannot be written as JSON)", v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// NextRoundPrompt returns the whole message that opens a later round:
// [RoundPrompt], then [ActionResultsPrompt] of results when there are
// any, then [RepairPrompt] of repair when it is not nil, separated by
// blank lines. The adapter passes the results of the actions run after
// the last response, and its error when it was a retry or its value did
// not validate (then both can be present: the actions ran, and the value
// still needs fixing).
func NextRoundPrompt(round, maxRounds int, target *Target, results map[string]any, repair error) string {
	parts := []string{RoundPrompt(round, maxRounds, target)}
	if len(results) > 0 {
		parts = append(parts, ActionResultsPrompt(results))
	}
	if repair != nil {
		parts = append(parts, RepairPrompt(repair))
	}
	return strings.Join(parts, "\n\n")
}

// cutText returns s cut to at most n bytes at a character boundary, with
// a marker saying how much was left out.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return fmt.Sprintf("%s… (%d more bytes)", s[:i], len(s)-i)
}
