package lndl

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func TestOutcomeString(t *testing.T) {
	for o, want := range map[Outcome]string{OutcomeContinue: "continue", OutcomeRetry: "retry", OutcomeSuccess: "success", Outcome(9): "Outcome(9)"} {
		if got := o.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(o), got, want)
		}
	}
}

func TestRoundResolveKeepsInputs(t *testing.T) {
	tg := mustTarget(t, reportSchema)
	known := map[string]any{"old": "x"}
	notes := map[string]any{"keep": "k"}
	text := "```lndl\n<lvar Report.title t>T</lvar>\n<lvar note.n n>N</lvar>\n<lact Report.summary s>summarize(text=\"x\")</lact>\nOUT{report: [t, s], quality: 0.5}\n```"
	res := Round(RoundInput{Text: text, Target: tg, ActionResults: known, Notes: notes})
	if res.Outcome != OutcomeSuccess || res.Err != nil {
		t.Fatalf("outcome %s, err %v", res.Outcome, res.Err)
	}
	if len(res.Pending) != 1 || res.Pending[0].Name != "s" || res.Pending[0].Function != "summarize" {
		t.Fatalf("pending %+v", res.Pending)
	}
	before, _ := json.Marshal(res.Assembled)
	v, err := res.Resolve(map[string]any{"s": []any{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(v)
	if string(got) != `{"report":{"title":"T","summary":"[\"a\",\"b\"]"},"quality":0.5}` {
		t.Errorf("resolved %s", got)
	}
	after, _ := json.Marshal(res.Assembled)
	if string(before) != string(after) {
		t.Errorf("Resolve changed Assembled: %s -> %s", before, after)
	}
	if len(known) != 1 || len(notes) != 1 {
		t.Errorf("inputs modified: %v %v", known, notes)
	}
	if res.Notes["n"] != "N" || res.Notes["keep"] != "k" {
		t.Errorf("notes %v", res.Notes)
	}
	// Resolving without results keeps the placeholder.
	v, _ = res.Resolve(nil)
	if s, _ := v.(*Object).Get("report"); s == nil {
		t.Fatal("no report")
	} else if ph, _ := s.(*Object).Get("summary"); ph == nil {
		t.Error("summary missing")
	} else if _, ok := ph.(*Placeholder); !ok {
		t.Errorf("summary = %T, want *Placeholder", ph)
	}
}

func TestRoundResolveConcurrent(t *testing.T) {
	tg := mustTarget(t, benchSchema)
	text, executed := benchResponse(4 << 10)
	res := Round(RoundInput{Text: text, Target: tg})
	want, err := res.Resolve(executed)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := res.Resolve(executed)
			if err != nil {
				errs <- err.Error()
				return
			}
			if got, _ := json.Marshal(v); string(got) != string(wantJSON) {
				errs <- "different value"
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestRoundResultsOutliveRounds checks that a round's result does not
// depend on the storage a round parses in, which later rounds reuse: many
// rounds on different responses run at once, and every result, resolved
// after the others ran, gives what a round alone gives.
func TestRoundResultsOutliveRounds(t *testing.T) {
	tg := mustTarget(t, benchSchema)
	type job struct {
		text               string
		executed           map[string]any
		assembled, resolve string
	}
	var jobs []job
	for _, size := range []int{300, 1 << 10, 3 << 10, 10 << 10} {
		text, executed := benchResponse(size)
		// A variant that groups a finding with the action, and one
		// with a shortcut entry.
		grouped := strings.Replace(text, "findings: [[n0, v0, d0, c0]", "findings: [[n0, v0, src, c0]", 1)
		shortcut := strings.Replace(text, "OUT{title: [t],", "OUT{t,", 1)
		for _, tx := range []string{text, grouped, shortcut} {
			res := Round(RoundInput{Text: tx, Target: tg})
			if res.Outcome != OutcomeSuccess {
				t.Fatalf("size %d: %s %v", size, res.Outcome, res.Err)
			}
			a, _ := json.Marshal(res.Assembled)
			v, err := res.Resolve(executed)
			if err != nil {
				t.Fatal(err)
			}
			r, _ := json.Marshal(v)
			jobs = append(jobs, job{tx, executed, string(a), string(r)})
		}
	}
	const workers, rounds = 6, 40
	var wg sync.WaitGroup
	errs := make(chan string, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held []*RoundResult
			var heldJobs []job
			for i := range rounds {
				j := jobs[(w+i)%len(jobs)]
				held = append(held, Round(RoundInput{Text: j.text, Target: tg}))
				heldJobs = append(heldJobs, j)
			}
			for i, res := range held {
				a, _ := json.Marshal(res.Assembled)
				v, err := res.Resolve(heldJobs[i].executed)
				if err != nil {
					errs <- err.Error()
					return
				}
				r, _ := json.Marshal(v)
				if string(a) != heldJobs[i].assembled || string(r) != heldJobs[i].resolve {
					errs <- fmt.Sprintf("round %d of worker %d: assembled or resolved value differs", i, w)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestRoundResolveNotSuccess(t *testing.T) {
	for _, text := range []string{"no block", "```lndl\n<lvar a>x\n```", "```lndl\n<lact a>f()</lact>\n```"} {
		res := Round(RoundInput{Text: text})
		if res.Outcome == OutcomeSuccess {
			t.Fatalf("%q: success", text)
		}
		if _, err := res.Resolve(nil); !errors.Is(err, ErrNotSuccess) {
			t.Errorf("%q: Resolve err %v, want ErrNotSuccess", text, err)
		}
		if res.Notes == nil {
			t.Errorf("%q: nil notes", text)
		}
	}
	var nilRes *RoundResult
	if _, err := nilRes.Resolve(nil); !errors.Is(err, ErrNotSuccess) {
		t.Errorf("nil result: %v", err)
	}
}

func TestRoundRetryClasses(t *testing.T) {
	tg := mustTarget(t, reportSchema)
	cases := []struct{ text, class string }{
		{"```lndl\n<lvar a>x\n```", "ParseError"},
		{"```lndl\nOUT{report: [x], quality: 1}\n```", "MissingLvarError"},
		{"```lndl\nOUT{quality: 1}\n```", "MissingFieldError"},
		{"```lndl\n<lvar Other.title t>T</lvar>\nOUT{report: [t], quality: 1}\n```", "TypeMismatchError"},
		{"```lndl\n<lact a>1 + 2</lact>\n```", "InvalidConstructorError"},
		{strings.Repeat(" ", MaxInputBytes+1), "ParseError"},
	}
	for _, c := range cases {
		res := Round(RoundInput{Text: c.text, Target: tg})
		if res.Outcome != OutcomeRetry || errorClass(res.Err) != c.class {
			t.Errorf("%.40q: %s %v, want retry %s", c.text, res.Outcome, res.Err, c.class)
		}
		if res.Assembled != nil || len(res.Pending) != 0 {
			t.Errorf("%.40q: retry with assembled %v pending %v", c.text, res.Assembled, res.Pending)
		}
	}
}

// TestRoundWideModel fills a list of a model with many fields from many
// fieldless literals: every item gets every field, in order.
func TestRoundWideModel(t *testing.T) {
	const fields, items = 1500, 8
	var props strings.Builder
	for i := range fields {
		if i > 0 {
			props.WriteString(", ")
		}
		fmt.Fprintf(&props, `"f%d": {"type": "integer"}`, i)
	}
	tg := mustTarget(t, `{"$defs": {"W": {"properties": {`+props.String()+`}, "title": "W", "type": "object"}},
	  "properties": {"rows": {"items": {"$ref": "#/$defs/W"}, "type": "array"}}, "title": "T", "type": "object"}`)
	var out strings.Builder
	out.WriteString("```lndl\nOUT{rows: [")
	for i := range fields * items {
		if i > 0 {
			out.WriteString(", ")
		}
		fmt.Fprintf(&out, "%d", i)
	}
	out.WriteString("]}\n```")
	res := Round(RoundInput{Text: out.String(), Target: tg})
	if res.Outcome != OutcomeSuccess {
		t.Fatalf("%s: %v", res.Outcome, res.Err)
	}
	rows, _ := res.Assembled.(*Object).Get("rows")
	if len(rows.([]any)) != items {
		t.Fatalf("%d rows", len(rows.([]any)))
	}
	last := rows.([]any)[items-1].(*Object)
	if v, _ := last.Get("f1499"); v != json.Number(fmt.Sprint(fields*items-1)) || last.Len() != fields {
		t.Errorf("last row: f1499 = %v, %d keys", v, last.Len())
	}
}

// TestAssembleHandBuiltModel uses a Model built without ParseTarget (no
// index, no positions).
func TestAssembleHandBuiltModel(t *testing.T) {
	var specs []*FieldSpec
	for i := range 12 {
		specs = append(specs, &FieldSpec{Name: fmt.Sprintf("f%d", i), Type: &Type{Kind: KindString}})
	}
	m := &Model{Name: "M", Fields: specs}
	tg := &Target{Model: &Model{Name: "T", Fields: []*FieldSpec{{Name: "m", Type: &Type{Kind: KindModel, Name: "M", Model: m}}}}}
	p := &Program{
		Lvars: []Lvar{lvar("M", "f11", "z", "", "Z"), lvar("", "", "a", "", "A")},
		Out:   &Out{Entries: []OutEntry{keyed("m", list(ref("z"), ref("a"), ref("a")))}},
	}
	v, err := Assemble(p, tg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	if string(b) != `{"m":{"f11":"Z","f0":"A","f1":"A"}}` {
		t.Errorf("got %s", b)
	}
}

// TestRoundHostile feeds inputs that grow in size or nesting and checks
// the outcome stays sane (timing is left to the benchmarks).
func TestRoundHostile(t *testing.T) {
	tg := mustTarget(t, itemsSchema)
	var many strings.Builder
	many.WriteString("```lndl\n<lact a>f(x=1)</lact>\nOUT{tags: [")
	for i := range 20000 {
		if i > 0 {
			many.WriteString(", ")
		}
		many.WriteString("a")
	}
	many.WriteString("]}\n```")
	var lacts strings.Builder
	lacts.WriteString("```lndl\n")
	for i := range 5000 {
		fmt.Fprintf(&lacts, "<lact a%d>f(i=%d)</lact>\n", i, i)
	}
	lacts.WriteString("```")
	cases := []struct {
		name    string
		text    string
		outcome Outcome
		pending int
	}{
		{"many references to one lact", many.String(), OutcomeSuccess, 1},
		{"many lacts, no OUT", lacts.String(), OutcomeContinue, 5000},
		{"deep groups", "```lndl\n<lvar a>x</lvar>\nOUT{tags: " + strings.Repeat("[", 40) + "a" + strings.Repeat("]", 40) + "}\n```", OutcomeRetry, 0},
		{"huge split", "```lndl\n<lvar a>" + strings.Repeat("line\n", 200000) + "</lvar>\nOUT{tags: [a]}\n```", OutcomeSuccess, 0},
		{"unclosed everything", strings.Repeat("```lndl\n<lvar a>OUT{'\n", 1000), OutcomeContinue, 0},
		{"too large", "```lndl\n<lvar a>" + strings.Repeat("x", MaxInputBytes) + "</lvar>\nOUT{tags: [a]}\n```", OutcomeRetry, 0},
		{"group salvage", "```lndl\nOUT{items: [" + strings.Repeat("[x, y], ", 5000) + "]}\n```", OutcomeSuccess, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Round(RoundInput{Text: c.text, Target: tg})
			if res.Outcome != c.outcome || len(res.Pending) != c.pending {
				t.Fatalf("outcome %s (%v), pending %d; want %s, %d", res.Outcome, res.Err, len(res.Pending), c.outcome, c.pending)
			}
			if res.Outcome == OutcomeSuccess {
				if _, err := res.Resolve(map[string]any{"a": "r"}); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// benchSchema is the target of the round benchmarks: scalars, a list of
// strings, a dict and a list of nested models.
const benchSchema = `{
 "$defs": {"Finding": {"properties": {
    "name": {"title": "Name", "type": "string"},
    "severity": {"enum": ["low", "medium", "high"], "title": "Severity", "type": "string"},
    "detail": {"title": "Detail", "type": "string"},
    "score": {"title": "Score", "type": "number"}},
   "required": ["name", "severity", "detail", "score"], "title": "Finding", "type": "object"}},
 "properties": {
  "title": {"title": "Title", "type": "string"},
  "summary": {"title": "Summary", "type": "string"},
  "confidence": {"title": "Confidence", "type": "number"},
  "approved": {"title": "Approved", "type": "boolean"},
  "tags": {"items": {"type": "string"}, "title": "Tags", "type": "array"},
  "sources": {"items": {"type": "string"}, "title": "Sources", "type": "array"},
  "metrics": {"additionalProperties": {"type": "number"}, "title": "Metrics", "type": "object"},
  "findings": {"items": {"$ref": "#/$defs/Finding"}, "title": "Findings", "type": "array"},
  "notes": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Notes"}},
 "required": ["title", "summary", "confidence", "approved", "tags", "sources", "metrics", "findings"],
 "title": "Review", "type": "object"}`

var benchSeverities = []string{"low", "medium", "high"}

// benchResponse writes a realistic model response of about size bytes:
// paragraphs of reasoning, then one lndl block declaring a handful of
// scalar lvars, two lacts (one unreferenced), a multi-line tags lvar, dict
// entries, and four lvars per finding, committed by an OUT block that
// groups the findings. It returns the text and the results of the actions
// the round will leave pending.
func benchResponse(size int) (string, map[string]any) {
	var prose, decl, groups strings.Builder
	decl.WriteString("<lvar title t>Review of the ingestion service</lvar>\n")
	decl.WriteString("<lvar summary s>The service is sound; the retry path and the batch sizing need work.</lvar>\n")
	decl.WriteString("<lvar tags g>\n- reliability\n- performance\n- observability\n</lvar>\n")
	decl.WriteString("<lvar metrics.latency_p99 m1>182.5</lvar>\n<lvar metrics.error_rate m2>0.004</lvar>\n")
	decl.WriteString("<lact src>search.docs(query=\"ingestion service design\", limit=5)</lact>\n")
	decl.WriteString("<lact scratch>search.web(query=\"unrelated\", limit=50)</lact>\n")
	decl.WriteString("<lvar note.plan p>Check the retry path first, then batch sizing.</lvar>\n")
	const tail = "OUT{title: [t], summary: [s], confidence: 0.82, approved: false, tags: [g], sources: [src], metrics: [m1, m2], findings: [%s]}\n"
	n := 0
	for {
		i := n
		fmt.Fprintf(&prose, "Step %d: I looked at component %d. Its error handling is %s, and the "+
			"measurements point to a %s risk; the detail is recorded below.\n\n",
			i+1, i+1, []string{"adequate", "thin", "missing"}[i%3], benchSeverities[i%3])
		fmt.Fprintf(&decl, "<lvar Finding.name n%d>component-%d</lvar>\n", i, i)
		fmt.Fprintf(&decl, "<lvar Finding.severity v%d>%s</lvar>\n", i, benchSeverities[i%3])
		fmt.Fprintf(&decl, "<lvar Finding.detail d%d>Retries in component %d are unbounded and can amplify load during an outage.</lvar>\n", i, i)
		fmt.Fprintf(&decl, "<lvar Finding.score c%d>0.%d</lvar>\n", i, 1+i%9)
		if n > 0 {
			groups.WriteString(", ")
		}
		fmt.Fprintf(&groups, "[n%d, v%d, d%d, c%d]", i, i, i, i)
		n++
		if prose.Len()+decl.Len()+groups.Len()+len(tail)+20 >= size {
			break
		}
	}
	text := prose.String() + "```lndl\n" + decl.String() + fmt.Sprintf(tail, groups.String()) + "```\n"
	return text, map[string]any{"src": "https://docs.example/ingestion\nhttps://docs.example/retries"}
}

func TestBenchResponseAssembles(t *testing.T) {
	tg := mustTarget(t, benchSchema)
	for _, size := range []int{1 << 10, 10 << 10, 100 << 10} {
		text, executed := benchResponse(size)
		res := Round(RoundInput{Text: text, Target: tg})
		if res.Outcome != OutcomeSuccess || len(res.Pending) != 1 || res.Pending[0].Name != "src" {
			t.Fatalf("size %d: %s %v pending %v", size, res.Outcome, res.Err, res.Pending)
		}
		v, err := res.Resolve(executed)
		if err != nil {
			t.Fatal(err)
		}
		obj := v.(*Object)
		findings, _ := obj.Get("findings")
		sources, _ := obj.Get("sources")
		if len(findings.([]any)) < size/1000 || len(sources.([]any)) != 2 {
			t.Fatalf("size %d: %d findings, sources %v", size, len(findings.([]any)), sources)
		}
		if _, err := tg.Validate(v); err != nil {
			t.Fatalf("size %d: validate: %v", size, err)
		}
	}
}

// BenchmarkRound measures a whole round on responses of about 1 KB, 10 KB
// and 100 KB: extraction, normalization, parsing, assembly, resolving with
// the executed action's result and validation.
func BenchmarkRound(b *testing.B) {
	tg, err := ParseTarget([]byte(benchSchema))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		size int
	}{{"1KB", 1 << 10}, {"10KB", 10 << 10}, {"100KB", 100 << 10}} {
		text, executed := benchResponse(c.size)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				res := Round(RoundInput{Text: text, Target: tg})
				if res.Outcome != OutcomeSuccess {
					b.Fatal(res.Err)
				}
				v, err := res.Resolve(executed)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := tg.Validate(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestRoundPendingFromNotesAndResults checks that placeholders a note or
// an earlier result holds are pending like the round's own, in the order
// of a walk of the whole value.
func TestRoundPendingFromNotesAndResults(t *testing.T) {
	tg := mustTarget(t, reportSchema)
	notes := map[string]any{"ph": &Placeholder{Action: Action{Name: "z", Function: "f"}}}
	known := map[string]any{"old": []any{&Placeholder{Action: Action{Name: "y", Function: "g"}}}}
	text := "```lndl\n<lvar Report.title t>T</lvar>\n<lact s>summarize()</lact>\nOUT{report: [t, note.ph], quality: [old], extra: [s, old]}\n```"
	res := Round(RoundInput{Text: text, Target: tg, ActionResults: known, Notes: notes})
	if res.Outcome != OutcomeSuccess {
		t.Fatalf("outcome %s: %v", res.Outcome, res.Err)
	}
	var names []string
	for _, a := range res.Pending {
		names = append(names, a.Name)
	}
	if got := strings.Join(names, ","); got != "z,y,s" {
		t.Errorf("pending %s, want z,y,s", got)
	}
	if full := collectPending(res.Assembled, 0); !reflect.DeepEqual(full, res.Pending) {
		t.Errorf("pending %v, a walk of the whole value gives %v", res.Pending, full)
	}
}

// collectPending returns the actions of the placeholders anywhere in v,
// depth first (arrays in order, objects in insertion order), each alias
// once: the oracle for the pending actions Round collects from the
// fields that can hold placeholders.
func collectPending(v any, room int) []Action {
	c := pendingCollector{pending: make([]Action, 0, room)}
	c.walk(v, 0)
	return c.pending
}
