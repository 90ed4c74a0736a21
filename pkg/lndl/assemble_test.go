package lndl

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Hand-built AST helpers.
// (ref, lit and list are in parse_test.go.)
func vInt(s string) Value                { return Value{Kind: ValueInt, Text: s} }
func vFloat(s string) Value              { return Value{Kind: ValueFloat, Text: s} }
func keyed(key string, v Value) OutEntry { return OutEntry{Kind: EntryKeyed, Key: key, Value: v} }
func shortcut(name string) OutEntry      { return OutEntry{Kind: EntryShortcut, Name: name} }
func lvar(model, field, alias, hint, content string) Lvar {
	return Lvar{Head: Head{Model: model, Field: field, Alias: alias, Hint: hint}, Content: content}
}
func lact(model, field, alias, hint, call string) Lact {
	return Lact{Head: Head{Model: model, Field: field, Alias: alias, Hint: hint}, Call: call}
}

func mustTarget(t testing.TB, schema string) *Target {
	t.Helper()
	tg, err := ParseTarget([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

const (
	reportSchema = `{"$defs": {"Report": {"properties": {"title": {"type": "string"}, "summary": {"type": "string"}}, "required": ["title", "summary"], "title": "Report", "type": "object"}},
	  "properties": {"report": {"$ref": "#/$defs/Report"}, "quality": {"type": "number"}}, "required": ["report", "quality"], "title": "Analysis", "type": "object"}`
	itemsSchema = `{"$defs": {"Item": {"properties": {"name": {"type": "string"}, "score": {"type": "number"}, "tags": {"items": {"type": "string"}, "type": "array"}}, "required": ["name"], "title": "Item", "type": "object"}},
	  "properties": {"items": {"items": {"$ref": "#/$defs/Item"}, "type": "array"}, "counts": {"additionalProperties": {"type": "integer"}, "type": "object"}, "tags": {"items": {"type": "string"}, "type": "array"}, "answer": {"type": "string"}},
	  "title": "Box", "type": "object"}`
)

func TestAssemble(t *testing.T) {
	cases := []struct {
		name    string
		schema  string
		prog    Program
		known   map[string]any
		notes   map[string]any
		want    string // JSON of the assembled value
		wantErr string // error class
	}{
		{
			name:   "model from namespaced lvar and placeholder",
			schema: reportSchema,
			prog: Program{
				Lvars: []Lvar{lvar("Report", "title", "t", "", "T")},
				Lacts: []Lact{lact("Report", "summary", "s", "", `summarize(text="x")`)},
				Out:   &Out{Entries: []OutEntry{keyed("report", list(ref("t"), ref("s"))), keyed("quality", vFloat("0.5"))}},
			},
			want: `{"report":{"title":"T","summary":{"$action":{"name":"s","function":"summarize","arguments":{"text":"x"}}}},"quality":0.5}`,
		},
		{
			name:   "shortcuts bind to the model field (LNDL-D4)",
			schema: reportSchema,
			prog: Program{
				Lvars: []Lvar{lvar("Report", "title", "t", "", "T"), lvar("Report", "summary", "s", "", "S")},
				Out:   &Out{Entries: []OutEntry{shortcut("t"), shortcut("s"), keyed("quality", vInt("1"))}},
			},
			want: `{"report":{"title":"T","summary":"S"},"quality":1}`,
		},
		{
			name:   "type mismatch",
			schema: reportSchema,
			prog: Program{
				Lvars: []Lvar{lvar("Summary", "title", "t", "", "T")},
				Out:   &Out{Entries: []OutEntry{keyed("report", list(ref("t"))), keyed("quality", vInt("1"))}},
			},
			wantErr: "TypeMismatchError",
		},
		{
			name:    "missing required field",
			schema:  reportSchema,
			prog:    Program{Out: &Out{Entries: []OutEntry{keyed("quality", vInt("1"))}}},
			wantErr: "MissingFieldError",
		},
		{
			name:    "undeclared alias",
			schema:  itemsSchema,
			prog:    Program{Out: &Out{Entries: []OutEntry{keyed("answer", list(ref("nope")))}}},
			wantErr: "MissingLvarError",
		},
		{
			name:   "list of models: repeated field starts an item; strings split",
			schema: itemsSchema,
			prog: Program{
				Lvars: []Lvar{lvar("Item", "name", "n1", "", "A"), lvar("Item", "tags", "g1", "", "x\ny"), lvar("Item", "name", "n2", "", "B")},
				Out:   &Out{Entries: []OutEntry{keyed("items", list(ref("n1"), ref("g1"), ref("n2"), vFloat("2")))}},
			},
			want: `{"items":[{"name":"A","tags":["x","y"]},{"name":"B","score":2.0}]}`,
		},
		{
			name:   "groups and salvage",
			schema: itemsSchema,
			prog: Program{
				Lvars: []Lvar{lvar("Item", "name", "n1", "", "A")},
				Out:   &Out{Entries: []OutEntry{keyed("items", list(list(ref("n1"), vInt("3")), list(ref("n1"), ref("ghost"), lit("lit"))))}},
			},
			want: `{"items":[{"name":"A","score":3},{"name":"n1 ghost lit"}]}`,
		},
		{
			name:   "dict keeps fielded parts, last wins",
			schema: itemsSchema,
			prog: Program{
				Lvars: []Lvar{lvar("counts", "x", "a", "", "1"), lvar("counts", "x", "b", "", "2"), lvar("", "", "c", "", "3")},
				Out:   &Out{Entries: []OutEntry{keyed("counts", list(ref("a"), ref("b"), ref("c"), vInt("5")))}},
			},
			want: `{"counts":{"x":"2"}}`,
		},
		{
			name:   "list results: whole value, split string, JSON text for str",
			schema: itemsSchema,
			prog: Program{
				Lacts: []Lact{lact("", "", "r", "", "rows()"), lact("", "", "s", "", "text()")},
				Out:   &Out{Entries: []OutEntry{keyed("items", list(ref("r"))), keyed("tags", list(ref("s"))), keyed("answer", list(ref("o")))}},
			},
			known: map[string]any{
				"r": []any{map[string]any{"name": "A"}},
				"s": "[\"p\", \"q\"]",
				"o": map[string]any{"b": 1, "a": "<é>"},
			},
			want: `{"items":[{"name":"A"}],"tags":["p","q"],"answer":"{\"a\":\"<é>\",\"b\":1}"}`,
		},
		{
			name:   "notes: earlier and this round, literal note text",
			schema: itemsSchema,
			prog: Program{
				Lvars: []Lvar{lvar("NOTE", "b", "x", "", "new")},
				Out:   &Out{Entries: []OutEntry{keyed("tags", list(ref("note.a"), ref("note.b"), ref("note.zz"), lit("note.a"))), keyed("answer", lit("note.a"))}},
			},
			notes: map[string]any{"a": "old", "b": "stale"},
			want:  `{"tags":["old","new","note.a"],"answer":"old"}`,
		},
		{
			name: "no target: Any everywhere",
			prog: Program{
				Lvars: []Lvar{lvar("", "", "a", "", "1"), lvar("", "", "b", "", "2"), lvar("M", "f", "c", "", "3")},
				Out:   &Out{Entries: []OutEntry{keyed("x", list(ref("a"))), keyed("y", list(ref("a"), ref("b"))), shortcut("c"), keyed("x", vInt("007"))}},
			},
			want: `{"x":7,"y":["1","2"],"f":"3"}`,
		},
		{
			name:   "union shaped for its first model member",
			schema: `{"$defs": {"M": {"properties": {"x": {"type": "string"}, "y": {"type": "string"}}, "title": "M", "type": "object"}}, "properties": {"u": {"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/M"}, {"type": "null"}]}, "l": {"anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "string"}]}}, "title": "U", "type": "object"}`,
			prog: Program{
				Lvars: []Lvar{lvar("", "", "a", "", "1"), lvar("", "", "b", "", "p\nq")},
				Out:   &Out{Entries: []OutEntry{keyed("u", list(ref("a"), ref("a"))), keyed("l", list(ref("b")))}},
			},
			want: `{"u":{"x":"1","y":"1"},"l":["p","q"]}`,
		},
		{
			name:   "typed results are read as JSON",
			schema: itemsSchema,
			prog: Program{
				Lacts: []Lact{lact("", "", "r", "", "rows()")},
				Out:   &Out{Entries: []OutEntry{keyed("tags", list(ref("r")))}},
			},
			known: map[string]any{"r": []string{"a", "b"}},
			want:  `{"tags":["a","b"]}`,
		},
		{
			name:   "invalid call",
			schema: itemsSchema,
			prog: Program{
				Lacts: []Lact{lact("", "", "a", "", "not a call")},
				Out:   &Out{Entries: []OutEntry{keyed("answer", list(ref("a")))}},
			},
			wantErr: "InvalidConstructorError",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tg *Target
			if c.schema != "" {
				tg = mustTarget(t, c.schema)
			}
			got, err := Assemble(&c.prog, tg, c.known, c.notes)
			if c.wantErr != "" {
				if errorClass(err) != c.wantErr || !errors.Is(err, ErrLNDL) {
					t.Fatalf("err = %v (%s), want %s", err, errorClass(err), c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if d := jsonDiff(got, decodeJSON(t, json.RawMessage(c.want))); d != "" {
				t.Errorf("%s\ngot  %s\nwant %s", d, b, c.want)
			}
		})
	}
}

func TestAssembleNoOut(t *testing.T) {
	v, err := Assemble(&Program{Lvars: []Lvar{lvar("", "", "a", "", "x")}}, nil, nil, nil)
	if v != nil || err != nil {
		t.Fatalf("got %v, %v", v, err)
	}
}

func TestSplitList(t *testing.T) {
	cases := []struct{ in, want string }{
		{"  ", `[]`},
		{`["a", 1]`, `["a",1]`},
		{`['x', "y", [1, 2]]`, `["x","y",[1,2]]`},
		{"- a\n\n- b  \r\nc", `["- a","- b","c"]`},
		{"a\u2028b\nc\x1cd\ve", `["a","b","c","d","e"]`},
		{`[alpha, 'beta', "gamma"]`, `["alpha","beta","gamma"]`},
		{`[a, "b, c"]`, `["a","b","c"]`},
		{`[ , ]`, `["[ , ]"]`},
		{"one, two", `["one, two"]`},
		{"a\rb", `["a\rb"]`},
		{"('x', 'y')", `["('x', 'y')"]`},
		{"[1],", `["[1],"]`},
	}
	for _, c := range cases {
		b, _ := json.Marshal(splitList(c.in))
		if string(b) != c.want {
			t.Errorf("splitList(%q) = %s, want %s", c.in, b, c.want)
		}
	}
	big := strings.Repeat("x\n", 100000)
	if n := len(splitList(big)); n != 100000 {
		t.Errorf("large split: %d items", n)
	}
}

func TestPyFloat(t *testing.T) {
	for in, want := range map[string]string{"2": "2.0", "1.5e-2": "0.015", "1e23": "1e+23", "-0.0": "-0.0", "1e-400": "0.0", "123456789.5": "123456789.5", "1e16": "1e+16", "0.0001": "0.0001", "0.00001": "1e-05"} {
		if got := floatText(in); got != want {
			t.Errorf("floatText(%s) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]string{"007": "7", "-0": "0", "-012": "-12", "123456789012345678901234567890": "123456789012345678901234567890"} {
		if got := intText(in); got != want {
			t.Errorf("intText(%s) = %s, want %s", in, got, want)
		}
	}
}

// BenchmarkAssemble measures assembly alone (alias index, binding, OUT
// merge, assembly and the required-field check) on the parsed programs of
// the round benchmark's responses, with the pending action's result known.
func BenchmarkAssemble(b *testing.B) {
	tg, err := ParseTarget([]byte(benchSchema))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		size int
	}{{"1KB", 1 << 10}, {"10KB", 10 << 10}, {"100KB", 100 << 10}} {
		text, executed := benchResponse(c.size)
		prog, err := Parse(NormalizeBlock(strings.Join(Extract(text), "\n\n")))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Assemble(prog, tg, executed, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
