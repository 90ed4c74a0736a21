package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/lionbus/lionbus/pkg/lndl"
)

// Bounds of `publisher lndl`.
const (
	// lndlMaxInput is the most bytes read from stdin (a response, a
	// body, a schema) and the longest line accepted in --vectors mode.
	lndlMaxInput = 16 << 20
	// lndlMaxFile is the largest --results, --notes or --executed file.
	lndlMaxFile = 16 << 20
)

const lndlUsage = `Usage: publisher lndl <stage> [flags] < input

Runs one stage of the LNDL pipeline (pkg/lndl) locally, without NATS.

Stages:
  round      classify one model response: outcome, pending actions,
             assembled value or error, validation, notes
  extract    fenced lndl blocks of a text
  normalize  a text after the conservative repairs
  parse      the declarations and the OUT block of a (normalized) text
  call       one lact body as a function call (--alias names the lact)
  render     the Specs line of a target schema

Flags:
  --vectors          read JSON Lines on stdin, each line the "input" object of
                     a conformance vector of the stage (or the whole vector
                     line, so a vector file can be piped in as it is), and
                     write one JSON line per input: the object the vector's
                     "expect" describes
  --target FILE      target JSON Schema (round, render; render also reads
                     the schema from stdin when --target is absent)
  --results FILE     JSON object, alias -> result of actions run in earlier
                     rounds (round)
  --notes FILE       JSON object, the scratchpad of earlier rounds (round)
  --executed FILE    JSON object, alias -> result of this round's pending
                     actions; the value is then resolved and validated (round)
  --alias NAME       the lact alias for call (default "a")

Without --vectors, stdin is the stage's text (the response for round, the
body for call, the schema for render) and the result is printed for
people (round) or as indented JSON (the other stages).

Exit status: 0 done; 1 the input was processed but failed (a round to
retry, a failed validation, a parse error, a malformed vector line);
2 usage error.

Example:
  publisher lndl round --target schema.json --results results.json < response.txt
  publisher lndl call --vectors < inputs.jsonl
  publisher lndl round --vectors < pkg/lndl/testdata/conformance/round.jsonl
`

// lndlStages maps each stage to the function turning one vector input
// into the vector's expect object.
var lndlStages = map[string]func(in json.RawMessage) (any, error){
	"extract":   lndlExtract,
	"normalize": lndlNormalize,
	"parse":     lndlParse,
	"call":      lndlCall,
	"round":     lndlRound,
	"render":    lndlRender,
}

// runLNDL runs `publisher lndl <stage> [flags]` and returns the exit
// status.
func runLNDL(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, lndlUsage)
		return 2
	}
	stage := args[0]
	switch stage {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, lndlUsage)
		return 0
	}
	run, ok := lndlStages[stage]
	if !ok {
		fmt.Fprintf(stderr, "publisher lndl: unknown stage %q\n\n%s", stage, lndlUsage)
		return 2
	}
	fs := flag.NewFlagSet("publisher lndl "+stage, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stdout, lndlUsage) }
	vectors := fs.Bool("vectors", false, "read vector inputs as JSON Lines")
	target := fs.String("target", "", "target JSON Schema file")
	results := fs.String("results", "", "earlier action results (JSON object file)")
	notes := fs.String("notes", "", "earlier notes (JSON object file)")
	executed := fs.String("executed", "", "this round's action results (JSON object file)")
	alias := fs.String("alias", "a", "lact alias for call")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "publisher lndl %s: unexpected argument %q\n", stage, fs.Arg(0))
		return 2
	}
	if *vectors {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for _, name := range []string{"target", "results", "notes", "executed", "alias"} {
			if set[name] {
				fmt.Fprintf(stderr, "publisher lndl %s: --%s cannot be used with --vectors (each line carries its input)\n", stage, name)
				return 2
			}
		}
		return lndlVectors(ctx, stage, run, stdin, stdout, stderr)
	}
	if stage != "round" && stage != "render" && (*target != "" || *results != "" || *notes != "" || *executed != "") {
		fmt.Fprintf(stderr, "publisher lndl %s: --target, --results, --notes and --executed apply to round (and --target to render)\n", stage)
		return 2
	}
	if stage == "render" && (*results != "" || *notes != "" || *executed != "") {
		fmt.Fprintf(stderr, "publisher lndl render: only --target applies\n")
		return 2
	}

	var text []byte
	if stage != "render" || *target == "" {
		var err error
		if text, err = lndlReadLimited(stdin, lndlMaxInput); err != nil {
			fmt.Fprintf(stderr, "publisher lndl %s: stdin: %v\n", stage, err)
			return 1
		}
	}
	switch stage {
	case "round":
		in := lndlRoundInput{Text: string(text)}
		for _, f := range []struct {
			path string
			dst  *json.RawMessage
		}{{*target, &in.Target}, {*results, &in.ActionResults}, {*notes, &in.Notes}, {*executed, &in.ExecutedResults}} {
			if f.path == "" {
				continue
			}
			raw, err := lndlReadFileLimited(f.path, lndlMaxFile)
			if err != nil {
				fmt.Fprintf(stderr, "publisher lndl round: %v\n", err)
				return 1
			}
			*f.dst = raw
		}
		return lndlRoundReport(ctx, in, *executed != "", stdout, stderr)
	case "render":
		schema := text
		if *target != "" {
			var err error
			if schema, err = lndlReadFileLimited(*target, lndl.MaxSchemaSize); err != nil {
				fmt.Fprintf(stderr, "publisher lndl render: %v\n", err)
				return 1
			}
		}
		return lndlPrint(run, map[string]any{"target": json.RawMessage(schema)}, stdout, stderr)
	case "call":
		return lndlPrint(run, map[string]any{"body": string(text), "alias": *alias}, stdout, stderr)
	}
	return lndlPrint(run, map[string]any{"text": string(text)}, stdout, stderr)
}

// lndlPrint runs one stage on one input and prints the result as indented
// JSON; an "error" result exits 1.
func lndlPrint(run func(json.RawMessage) (any, error), input map[string]any, stdout, stderr io.Writer) int {
	raw, err := json.Marshal(input)
	if err != nil {
		fmt.Fprintf(stderr, "publisher lndl: %v\n", err)
		return 1
	}
	out, err := run(raw)
	if err != nil {
		fmt.Fprintf(stderr, "publisher lndl: %v\n", err)
		return 1
	}
	if err := lndlWriteJSON(stdout, out, "  "); err != nil {
		fmt.Fprintf(stderr, "publisher lndl: %v\n", err)
		return 1
	}
	if o, ok := out.(*lndl.Object); ok && o.Has("error") {
		return 1
	}
	return 0
}

// lndlVectors reads vector inputs, one JSON object a line, and writes one
// result line per input. A line may also be a whole conformance vector (see
// lndlVectorLineInput), so a vector file can be piped in as it is. A line that is not a valid input gets an
// {"error": {"class": "InputError", ...}} line and the exit status 1.
func lndlVectors(ctx context.Context, stage string, run func(json.RawMessage) (any, error), stdin io.Reader, stdout, stderr io.Writer) int {
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 0, 64<<10), lndlMaxInput)
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	status := 0
	lineNo := 0
	for sc.Scan() {
		if err := ctx.Err(); err != nil {
			fmt.Fprintf(stderr, "publisher lndl: %v\n", err)
			return 1
		}
		lineNo++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		input, err := lndlVectorLineInput(stage, line)
		var out any
		if err == nil {
			out, err = run(input)
		}
		if err != nil {
			fmt.Fprintf(stderr, "publisher lndl: line %d: %v\n", lineNo, err)
			out = lndlErrorObject("InputError", err.Error())
			status = 1
		}
		if err := lndlWriteJSON(w, out, ""); err != nil {
			fmt.Fprintf(stderr, "publisher lndl: line %d: %v\n", lineNo, err)
			return 1
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(stderr, "publisher lndl: stdin line %d: %v\n", lineNo+1, err)
		return 1
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintf(stderr, "publisher lndl: %v\n", err)
		return 1
	}
	return status
}

// lndlVectorLineInput returns the stage input a --vectors line carries: the
// line itself, or, for a whole conformance vector line (an object with
// "stage", "input" and "expect"; no stage input has those keys), its
// "input", after checking the vector is one of this stage.
func lndlVectorLineInput(stage string, line []byte) (json.RawMessage, error) {
	var v struct {
		Stage  *string         `json:"stage"`
		Input  json.RawMessage `json:"input"`
		Expect json.RawMessage `json:"expect"`
	}
	if err := json.Unmarshal(line, &v); err != nil || v.Stage == nil || v.Input == nil || v.Expect == nil {
		// Not a whole vector: the line is the input (and run reports
		// what is wrong with it).
		return line, nil
	}
	if *v.Stage != stage {
		return nil, fmt.Errorf("a vector of stage %q given to stage %q", *v.Stage, stage)
	}
	return v.Input, nil
}

// lndlWriteJSON writes v as one JSON value and a newline, with <, > and &
// unescaped; indent "" writes it on one line.
func lndlWriteJSON(w io.Writer, v any, indent string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(lndlUnescapeHTML(buf.Bytes()))
	return err
}

// lndlUnescapeHTML turns the \u003c, \u003e and \u0026 escapes that
// values marshalling themselves (ordered objects) write back into <, >
// and &. Every backslash in JSON text starts an escape, so walking escape
// by escape is exact.
func lndlUnescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch string(b[i+2 : i+6]) {
			case "003c":
				out = append(out, '<')
				i += 5
				continue
			case "003e":
				out = append(out, '>')
				i += 5
				continue
			case "0026":
				out = append(out, '&')
				i += 5
				continue
			}
		}
		out = append(out, b[i], b[i+1])
		i++
	}
	return out
}

func lndlReadLimited(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("input larger than %d bytes", limit)
	}
	return data, nil
}

func lndlReadFileLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := lndlReadLimited(f, limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

// lndlDecodeInput decodes a vector input object into dst, rejecting unknown
// keys so a misspelled key is not silently ignored.
func lndlDecodeInput(raw json.RawMessage, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("input: %w", err)
	}
	if dec.More() {
		return errors.New("input: trailing data after the JSON object")
	}
	return nil
}

// lndlDecodeObject decodes an optional JSON object (alias or note name ->
// value); null or absent is nil.
func lndlDecodeObject(raw json.RawMessage, what string) (map[string]any, error) {
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %w", what, err)
	}
	return m, nil
}

// lndlErrorClass names the LNDL error class of err.
func lndlErrorClass(err error) string {
	var pe *lndl.ParseError
	var mle *lndl.MissingLvarError
	var mfe *lndl.MissingFieldError
	var tme *lndl.TypeMismatchError
	var ice *lndl.InvalidConstructorError
	switch {
	case errors.As(err, &pe):
		return "ParseError"
	case errors.As(err, &mle):
		return "MissingLvarError"
	case errors.As(err, &mfe):
		return "MissingFieldError"
	case errors.As(err, &tme):
		return "TypeMismatchError"
	case errors.As(err, &ice):
		return "InvalidConstructorError"
	case errors.Is(err, lndl.ErrInvalidTarget):
		return "InvalidTarget"
	}
	return "Error"
}

// lndlErrorSubstring is the part of an error message a vector's
// "substring" matches: a ParseError's reason, else the whole message.
func lndlErrorSubstring(err error) string {
	var pe *lndl.ParseError
	if errors.As(err, &pe) {
		return pe.Reason
	}
	return err.Error()
}

func lndlErrorObject(class, message string) *lndl.Object {
	e := lndl.NewObject(3)
	e.Set("class", class)
	e.Set("message", message)
	e.Set("substring", message)
	o := lndl.NewObject(1)
	o.Set("error", e)
	return o
}

// lndlError is the vectors' error object for err: class, message,
// substring, and line and column for a ParseError, cause for an
// InvalidConstructorError.
func lndlError(err error) *lndl.Object {
	o := lndlErrorObject(lndlErrorClass(err), err.Error())
	e, _ := o.Get("error")
	eo := e.(*lndl.Object)
	eo.Set("substring", lndlErrorSubstring(err))
	var pe *lndl.ParseError
	if errors.As(err, &pe) {
		eo.Set("line", pe.Line)
		eo.Set("column", pe.Column)
	}
	var ice *lndl.InvalidConstructorError
	if errors.As(err, &ice) && ice.Err != nil {
		eo.Set("cause", ice.Err.Error())
	}
	return o
}

type lndlTextInput struct {
	Text *string `json:"text"`
}

func lndlDecodeText(raw json.RawMessage) (string, error) {
	var in lndlTextInput
	if err := lndlDecodeInput(raw, &in); err != nil {
		return "", err
	}
	if in.Text == nil {
		return "", errors.New(`input: missing "text"`)
	}
	return *in.Text, nil
}

func lndlExtract(raw json.RawMessage) (any, error) {
	text, err := lndlDecodeText(raw)
	if err != nil {
		return nil, err
	}
	blocks := lndl.Extract(text)
	if blocks == nil {
		blocks = []string{}
	}
	o := lndl.NewObject(1)
	o.Set("blocks", blocks)
	return o, nil
}

func lndlNormalize(raw json.RawMessage) (any, error) {
	text, err := lndlDecodeText(raw)
	if err != nil {
		return nil, err
	}
	o := lndl.NewObject(1)
	o.Set("text", lndl.Normalize(text))
	return o, nil
}

func lndlParse(raw json.RawMessage) (any, error) {
	text, err := lndlDecodeText(raw)
	if err != nil {
		return nil, err
	}
	prog, err := lndl.Parse(text)
	if err != nil {
		return lndlError(err), nil
	}
	return lndlProgramObject(prog), nil
}

// lndlProgramObject renders a program in the parse vectors' shape.
func lndlProgramObject(p *lndl.Program) *lndl.Object {
	orNull := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	lvars := make([]any, 0, len(p.Lvars))
	for _, lv := range p.Lvars {
		o := lndl.NewObject(5)
		o.Set("model", orNull(lv.Model))
		o.Set("field", orNull(lv.Field))
		o.Set("alias", lv.Alias)
		o.Set("content", lv.Content)
		o.Set("extra_id", orNull(lv.Hint))
		lvars = append(lvars, o)
	}
	lacts := make([]any, 0, len(p.Lacts))
	for _, la := range p.Lacts {
		o := lndl.NewObject(5)
		o.Set("model", orNull(la.Model))
		o.Set("field", orNull(la.Field))
		o.Set("alias", la.Alias)
		o.Set("call", la.Call)
		o.Set("extra_id", orNull(la.Hint))
		lacts = append(lacts, o)
	}
	var out any
	if p.Out != nil {
		pairs := []any{}
		for _, f := range p.Out.Fields(p.DefaultBinding()) {
			pairs = append(pairs, []any{f.Key, lndlOutValue(f.Value, true)})
		}
		out = pairs
	}
	o := lndl.NewObject(3)
	o.Set("lvars", lvars)
	o.Set("lacts", lacts)
	o.Set("out", out)
	return o
}

// lndlOutValue renders an OUT value as the parse vectors do: a string literal
// is a plain string at the top level and {"str": ...} inside lists, where
// a plain string is a reference.
func lndlOutValue(v lndl.Value, top bool) any {
	switch v.Kind {
	case lndl.ValueBool:
		return v.Bool
	case lndl.ValueInt, lndl.ValueFloat:
		return json.Number(v.Text)
	case lndl.ValueString:
		if top {
			return v.Text
		}
		return map[string]any{"str": v.Text}
	case lndl.ValueRef:
		return v.Text
	case lndl.ValueList:
		items := make([]any, len(v.List))
		for i, it := range v.List {
			items[i] = lndlOutValue(it, false)
		}
		return items
	}
	return nil
}

func lndlCall(raw json.RawMessage) (any, error) {
	var in struct {
		Body  *string `json:"body"`
		Alias *string `json:"alias"`
	}
	if err := lndlDecodeInput(raw, &in); err != nil {
		return nil, err
	}
	if in.Body == nil || in.Alias == nil {
		return nil, errors.New(`input: "body" and "alias" are required`)
	}
	c, err := lndl.ParseCall(*in.Alias, *in.Body)
	if err != nil {
		return lndlError(err), nil
	}
	o := lndl.NewObject(2)
	o.Set("function", c.Function)
	o.Set("arguments", c.Arguments)
	return o, nil
}

func lndlRender(raw json.RawMessage) (any, error) {
	var in struct {
		Target json.RawMessage `json:"target"`
	}
	if err := lndlDecodeInput(raw, &in); err != nil {
		return nil, err
	}
	tg, err := lndlParseTargetRaw(in.Target)
	if err != nil {
		return lndlError(err), nil
	}
	o := lndl.NewObject(1)
	if s, ok := lndl.RenderSpecs(tg); ok {
		o.Set("specs", s)
	} else {
		o.Set("specs", nil)
	}
	return o, nil
}

// lndlParseTargetRaw parses a target schema; empty or null is no target.
func lndlParseTargetRaw(raw json.RawMessage) (*lndl.Target, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	return lndl.ParseTarget(raw)
}

// lndlRoundInput is the input of a round vector.
type lndlRoundInput struct {
	Text            string          `json:"text"`
	Target          json.RawMessage `json:"target"`
	ActionResults   json.RawMessage `json:"action_results"`
	ExecutedResults json.RawMessage `json:"executed_results"`
	Notes           json.RawMessage `json:"notes"`
}

// lndlRoundOutcome is a classified round with its resolution and
// validation.
type lndlRoundOutcome struct {
	res       *lndl.RoundResult
	target    *lndl.Target
	resolved  any
	resolveEr error
	validated any // *lndl.Object {"ok", "value"|"errors"}, or nil
	valErr    error
}

func lndlRunRound(in lndlRoundInput) (*lndlRoundOutcome, error) {
	tg, err := lndlParseTargetRaw(in.Target)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	known, err := lndlDecodeObject(in.ActionResults, "action_results")
	if err != nil {
		return nil, err
	}
	executed, err := lndlDecodeObject(in.ExecutedResults, "executed_results")
	if err != nil {
		return nil, err
	}
	notes, err := lndlDecodeObject(in.Notes, "notes")
	if err != nil {
		return nil, err
	}
	r := &lndlRoundOutcome{target: tg}
	r.res = lndl.Round(lndl.RoundInput{Text: in.Text, Target: tg, ActionResults: known, Notes: notes})
	if r.res.Outcome != lndl.OutcomeSuccess {
		return r, nil
	}
	r.resolved, r.resolveEr = r.res.Resolve(executed)
	if tg == nil {
		return r, nil
	}
	v := lndl.NewObject(2)
	if r.resolveEr != nil {
		v.Set("ok", false)
		v.Set("errors", []lndl.ValidationIssue{{Loc: []any{}, Type: "resolve_error", Msg: r.resolveEr.Error()}})
		r.validated = v
		return r, nil
	}
	value, verr := tg.Validate(r.resolved)
	r.valErr = verr
	var ve *lndl.ValidationError
	switch {
	case verr == nil:
		v.Set("ok", true)
		v.Set("value", value)
	case errors.As(verr, &ve):
		v.Set("ok", false)
		v.Set("errors", ve.Issues)
	default:
		v.Set("ok", false)
		v.Set("errors", []lndl.ValidationIssue{{Loc: []any{}, Type: "validator_error", Msg: verr.Error()}})
	}
	r.validated = v
	return r, nil
}

func lndlRound(raw json.RawMessage) (any, error) {
	var in lndlRoundInput
	if err := lndlDecodeInput(raw, &in); err != nil {
		return nil, err
	}
	r, err := lndlRunRound(in)
	if err != nil {
		return nil, err
	}
	res := r.res
	o := lndl.NewObject(11)
	o.Set("outcome", res.Outcome.String())
	pending := res.Pending
	if pending == nil {
		pending = []lndl.Action{}
	}
	o.Set("pending_actions", pending)
	o.Set("assembled", res.Assembled)
	if res.Err != nil {
		o.Set("error_class", lndlErrorClass(res.Err))
		o.Set("error", res.Err.Error())
		o.Set("error_substring", lndlErrorSubstring(res.Err))
		var pe *lndl.ParseError
		if errors.As(res.Err, &pe) {
			o.Set("error_line", pe.Line)
			o.Set("error_column", pe.Column)
		}
	} else {
		o.Set("error_class", nil)
		o.Set("error", nil)
		o.Set("error_substring", nil)
	}
	o.Set("resolved", r.resolved)
	o.Set("validated", r.validated)
	o.Set("notes", res.Notes)
	return o, nil
}

// lndlRoundReport prints a round for people and returns the exit status:
// 1 for a retry or a failed validation, else 0.
func lndlRoundReport(ctx context.Context, in lndlRoundInput, haveExecuted bool, stdout, stderr io.Writer) int {
	if err := ctx.Err(); err != nil {
		fmt.Fprintf(stderr, "publisher lndl round: %v\n", err)
		return 1
	}
	r, err := lndlRunRound(in)
	if err != nil {
		fmt.Fprintf(stderr, "publisher lndl round: %v\n", err)
		return 1
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	res := r.res
	status := 0
	fmt.Fprintf(w, "outcome: %s\n", res.Outcome)
	if res.Err != nil {
		status = 1
		var pe *lndl.ParseError
		if errors.As(res.Err, &pe) {
			fmt.Fprintf(w, "error: %s at line %d, column %d: %s\n", lndlErrorClass(res.Err), pe.Line, pe.Column, pe.Reason)
		} else {
			fmt.Fprintf(w, "error: %s: %s\n", lndlErrorClass(res.Err), res.Err.Error())
		}
	}
	if len(res.Pending) == 0 {
		fmt.Fprintln(w, "pending actions: none")
	} else {
		fmt.Fprintf(w, "pending actions (%d):\n", len(res.Pending))
		for _, a := range res.Pending {
			fmt.Fprintf(w, "  %s: %s %s\n", a.Name, a.Function, lndlCompact(a.Arguments))
		}
	}
	if res.Outcome == lndl.OutcomeSuccess {
		fmt.Fprintln(w, "assembled:")
		lndlWriteIndented(w, res.Assembled)
		if haveExecuted {
			fmt.Fprintln(w, "resolved:")
			if r.resolveEr != nil {
				fmt.Fprintf(w, "  error: %v\n", r.resolveEr)
				status = 1
			} else {
				lndlWriteIndented(w, r.resolved)
			}
		}
		switch {
		case r.target == nil:
			fmt.Fprintln(w, "validation: no target")
		case len(res.Pending) > 0 && !haveExecuted:
			fmt.Fprintf(w, "validation: not run, %d action(s) pending (pass their results with --executed)\n", len(res.Pending))
		case r.validated != nil:
			vo := r.validated.(*lndl.Object)
			if ok, _ := vo.Get("ok"); ok == true {
				fmt.Fprintln(w, "validation: ok")
				fmt.Fprintln(w, "value:")
				v, _ := vo.Get("value")
				lndlWriteIndented(w, v)
			} else {
				status = 1
				issues, _ := vo.Get("errors")
				list, _ := issues.([]lndl.ValidationIssue)
				fmt.Fprintf(w, "validation: failed (%d)\n", len(list))
				for _, is := range list {
					fmt.Fprintf(w, "  %s: %s [%s]\n", lndlLoc(is.Loc), is.Msg, is.Type)
				}
			}
		}
	}
	if len(res.Notes) == 0 {
		fmt.Fprintln(w, "notes: none")
	} else {
		fmt.Fprintf(w, "notes (%d):\n", len(res.Notes))
		names := make([]string, 0, len(res.Notes))
		for k := range res.Notes {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(w, "  %s: %s\n", k, lndlCompact(res.Notes[k]))
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintf(stderr, "publisher lndl round: %v\n", err)
		return 1
	}
	return status
}

func lndlLoc(loc []any) string {
	if len(loc) == 0 {
		return "(root)"
	}
	parts := make([]string, len(loc))
	for i, p := range loc {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ".")
}

// lndlCompact returns v as one line of JSON.
func lndlCompact(v any) string {
	var buf bytes.Buffer
	if err := lndlWriteJSON(&buf, v, ""); err != nil {
		return fmt.Sprintf("(unprintable: %v)", err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// lndlWriteIndented writes v as indented JSON, each line indented by two
// spaces.
func lndlWriteIndented(w io.Writer, v any) {
	var buf bytes.Buffer
	if err := lndlWriteJSON(&buf, v, "  "); err != nil {
		fmt.Fprintf(w, "  (unprintable: %v)\n", err)
		return
	}
	text := strings.TrimSuffix(buf.String(), "\n")
	fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(text, "\n", "\n  "))
}
