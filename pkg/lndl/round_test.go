package lndl

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	}
	for _, c := range cases {
		res := Round(RoundInput{Text: c.text, Target: tg})
		if res.Outcome != OutcomeRetry || errorClass(res.Err) != c.class {
			t.Errorf("%q: %s %v, want retry %s", c.text, res.Outcome, res.Err, c.class)
		}
		if res.Assembled != nil || len(res.Pending) != 0 {
			t.Errorf("%q: retry with assembled %v pending %v", c.text, res.Assembled, res.Pending)
		}
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
