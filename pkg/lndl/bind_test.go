package lndl

import "testing"

// TestBinding pins the binding of shortcut and group names (docs/lndl.md#binding) for both entry points: Program.DefaultBinding, and the
// assembler's binder without and with a target.
func TestBinding(t *testing.T) {
	prog, err := Parse("<lvar Report.title t>x</lvar>\n<lvar Finding.text f>y</lvar>\n" +
		"<lvar Other.name o>z</lvar>\n<lvar summary s>w</lvar>\n<lvar plain>v</lvar>\n" +
		"<lvar note.plan p>u</lvar>\n<lact Finding.source c>f()</lact>\n<lact search q>g()</lact>\n")
	if err != nil {
		t.Fatal(err)
	}
	tg := mustTarget(t, `{"$defs": {"Finding": {"properties": {"text": {"type": "string"}, "source": {"type": "string"}}, "type": "object"},
	 "Report": {"properties": {"title": {"type": "string"}}, "type": "object"}},
	 "properties": {"report": {"$ref": "#/$defs/Report"}, "findings": {"items": {"$ref": "#/$defs/Finding"}, "type": "array"},
	  "Other": {"type": "string"}}, "type": "object"}`)
	cases := []struct {
		name       string
		noTarget   string
		withTarget string
	}{
		{"t", "title", "report"},    // M.f: f; with a target the field whose model is M
		{"f", "text", "findings"},   // list element model
		{"o", "name", "Other"},      // M is itself a target field
		{"c", "source", "findings"}, // lacts bind like lvars
		{"s", "summary", "summary"}, // hint alias: hint
		{"q", "search", "search"},
		{"plain", "plain", "plain"}, // raw alias: itself
		{"p", "plan", "plan"},       // note lvar: its field
		{"ghost", "ghost", "ghost"}, // undeclared: first segment
		{"x.y.z", "x", "x"},
		{"note.x", "note", "note"},
		{"t.x", "t", "t"}, // a dotted name is never an alias
		{".a", "", ""},
	}
	def := prog.DefaultBinding()
	bare := (&binder{d: newDecls(prog)}).bind
	targeted := (&binder{d: newDecls(prog), target: tg}).bind
	for _, c := range cases {
		if got := def(c.name); got != c.noTarget {
			t.Errorf("DefaultBinding(%q) = %q, want %q", c.name, got, c.noTarget)
		}
		if got := bare(c.name); got != c.noTarget {
			t.Errorf("binder without target (%q) = %q, want %q", c.name, got, c.noTarget)
		}
		if got := targeted(c.name); got != c.withTarget {
			t.Errorf("binder with target (%q) = %q, want %q", c.name, got, c.withTarget)
		}
	}
}

// TestBinding_undeclaredLeaders checks that shortcuts and groups led by an
// undeclared name land under its first segment, with and without a
// target; a group led by a literal is dropped.
func TestBinding_undeclaredLeaders(t *testing.T) {
	prog, err := Parse("<lvar a>1</lvar>\nOUT{ghost.one, [ghost.two, a], [[other.x]], [\"lit\", a]}")
	if err != nil {
		t.Fatal(err)
	}
	tg := mustTarget(t, `{"properties": {"ghost": {}, "other": {}}, "type": "object"}`)
	want := map[string]int{"ghost": 2, "other": 1}
	for _, bind := range []func(string) string{prog.DefaultBinding(), (&binder{d: newDecls(prog), target: tg}).bind} {
		fields := prog.Out.Fields(bind)
		got := map[string]int{}
		for _, f := range fields {
			got[f.Key] = len(f.Value.List)
		}
		if len(got) != len(want) || got["ghost"] != want["ghost"] || got["other"] != want["other"] {
			t.Errorf("fields %+v: list lengths %v, want %v", fields, got, want)
		}
	}
}
