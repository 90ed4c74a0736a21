package lndl

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	manyDecls := strings.Repeat("<lvar a>x</lvar>", 0)
	for i := 0; i <= MaxDeclarations; i++ {
		manyDecls += fmt.Sprintf("<lvar a%d>x</lvar>", i)
	}
	var twenty strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&twenty, "<lvar a%d>x</lvar>\n", i)
	}
	tests := []struct {
		name, src, reason string
		line, col         int
	}{
		{"duplicate among many", twenty.String() + "<lact a3>f()</lact>", "Duplicate alias 'a3'", 21, 19},
		{"empty head", "<lvar >x</lvar>", "Expected ID, got GT", 1, 7},
		{"open at end", "<lvar", "Expected ID, got EOF", 1, 6},
		{"head at end", "<lact a", "Expected GT, got EOF", 1, 8},
		{"head then junk", "<lvar a (b)>x</lvar>", "Expected GT, got LPAREN", 1, 9},
		{"dot without field", "<lvar a.>x</lvar>", "Expected ID, got GT", 1, 9},
		{"three names", "<lvar a b c>x</lvar>", "Expected GT, got ID", 1, 11},
		{"dotted alias", "<lact M.f a.b>x</lact>", "Expected GT, got DOT", 1, 12},
		{"newline in head", "<lvar a\nb>x</lvar>", "Expected GT, got NEWLINE", 1, 8},
		{"number head", "<lvar 1a>x</lvar>", "Expected ID, got NUM", 1, 7},
		{"OUT in head", "<lvar OUT{>x</lvar>", "Expected ID, got OUT_OPEN", 1, 7},
		{"close tag in head", "<lvar a</lvar>", "Expected GT, got LVAR_CLOSE", 1, 8},
		{"unclosed lvar", "<lvar a>x", "Unclosed lvar tag - missing </lvar>", 1, 9},
		{"unclosed lact on line 3", "\n\n  <lact a>x</lvar>", "Unclosed lact tag - missing </lact>", 3, 10},
		{"unclosed empty body at end", "<lvar a>", "Unclosed lvar tag - missing </lvar>", 1, 9},
		{"duplicate lvar", "<lvar a>1</lvar><lvar a>2</lvar> OUT{}", "Duplicate alias 'a' - aliases must be unique across lvars and lacts", 1, 34},
		{"duplicate at EOF", "<lvar a>1</lvar>\n<lact x a>f()</lact>", "Duplicate alias 'a' - aliases must be unique across lvars and lacts", 2, 20},
		{"duplicate implicit alias", "<lvar M.f>1</lvar><lact f>g()</lact>", "Duplicate alias 'f'", 1, 37},
		{"malformed number", "OUT{x: 1.2.3}", "Invalid number literal '1.2.3'", 1, 8},
		{"malformed number in list", "OUT{x: [a,\n 1..2]}", "Invalid number literal '1..2'", 2, 1},
		{"superscript digit", "OUT{x: 10²}", "Invalid number literal '10²'", 1, 8},
		{"superscript float", "OUT{x: [1.5e²]}", "Invalid number literal '1.5e²'", 1, 9},
		{"float overflow", "OUT{x: -1e400}", "Invalid number literal '-1e400'", 1, 8},
		{"integer too long", "OUT{x: " + strings.Repeat("9", MaxIntDigits+1) + "}", "Invalid number literal '9999", 1, 8},
		{"long literal shortened", "OUT{x: " + strings.Repeat("9", 5000) + "}", "' (5000 characters)", 1, 8},
		{"nesting 33 deep", "OUT{k: " + strings.Repeat("[", 33) + strings.Repeat("]", 33) + "}", "OUT block nesting too deep - exceeded max depth of 32", 1, 40},
		{"nesting in a group", "OUT{\n" + strings.Repeat("[", 40), "OUT block nesting too deep - exceeded max depth of 32", 2, 32},
		{"too many declarations", manyDecls, fmt.Sprintf("Too many declarations - exceeded max of %d", MaxDeclarations), 1, 1 + len(manyDecls) - len(fmt.Sprintf("<lvar a%d>x</lvar>", MaxDeclarations))},
		{"too many OUT entries", "OUT{" + strings.Repeat("a,", MaxOutEntries+1) + "}", fmt.Sprintf("OUT block has too many entries - exceeded max of %d", MaxOutEntries), 1, 5 + 2*MaxOutEntries},
		{"input too large", strings.Repeat(" ", MaxInputBytes+1), "Input too large", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.src)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse error = %v, want a *ParseError", err)
			}
			if !errors.Is(err, ErrLNDL) {
				t.Errorf("error is not an ErrLNDL")
			}
			if !strings.Contains(pe.Reason, tt.reason) {
				t.Errorf("reason %q, want it to contain %q", pe.Reason, tt.reason)
			}
			if pe.Line != tt.line || pe.Column != tt.col {
				t.Errorf("position %d:%d, want %d:%d (%v)", pe.Line, pe.Column, tt.line, tt.col, err)
			}
			if want := fmt.Sprintf("Parse error at line %d, column %d: ", pe.Line, pe.Column); !strings.HasPrefix(err.Error(), want) {
				t.Errorf("message %q does not start with %q", err.Error(), want)
			}
		})
	}
}

func TestParseBoundsAccepted(t *testing.T) {
	tests := []struct{ name, src string }{
		{"max declarations", strings.Repeat("x", 0) + func() string {
			var b strings.Builder
			for i := 0; i < MaxDeclarations; i++ {
				fmt.Fprintf(&b, "<lvar a%d>x</lvar>", i)
			}
			return b.String()
		}()},
		{"max OUT entries", "OUT{" + strings.Repeat("a,", MaxOutEntries) + "}"},
		{"32 deep", "OUT{k: " + strings.Repeat("[", 32) + "x" + strings.Repeat("]", 32) + "}"},
		{"4300 digits", "OUT{x: " + strings.Repeat("7", MaxIntDigits) + "}"},
		{"max input", strings.Repeat(" ", MaxInputBytes)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse(tt.src); err != nil {
				t.Fatalf("Parse: %v", err)
			}
		})
	}
}

func TestPlainFloatIsRepr(t *testing.T) {
	// Whenever the fast path accepts a literal, the full conversion must
	// give the same text.
	for _, lit := range []string{"0.92", "1.5", "-2.25", "0.0001", "0.00001", "100.0", "1.10",
		"123456789012345.6", "1234567890123456.7", "0.123456789012345", "0.1234567890123456",
		"00.5", "0.000123456789012345", "7.0000000000001"} {
		if !plainFloatIsRepr(lit) {
			continue
		}
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			t.Fatal(err)
		}
		if repr := pythonFloatRepr(f); repr != lit {
			t.Errorf("fast path keeps %q, repr is %q", lit, repr)
		}
	}
	if !plainFloatIsRepr("0.92") || plainFloatIsRepr("0.920") || plainFloatIsRepr("1e5") {
		t.Error("fast path classification wrong")
	}
	// Random plain decimals of every length up to 18 digits on each side
	// of the point, with runs of zeros: every one the fast path accepts
	// must be its own repr.
	rng := rand.New(rand.NewPCG(1, 2))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			if rng.IntN(3) == 0 {
				b[i] = '0'
			} else {
				b[i] = byte('0' + rng.IntN(10))
			}
		}
		return string(b)
	}
	accepted := 0
	for range 200000 {
		lit := digits(1+rng.IntN(18)) + "." + digits(1+rng.IntN(18))
		if rng.IntN(4) == 0 {
			lit = "-" + lit
		}
		if !plainFloatIsRepr(lit) {
			continue
		}
		accepted++
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			t.Fatal(err)
		}
		if repr := pythonFloatRepr(f); repr != lit {
			t.Fatalf("fast path keeps %q, repr is %q", lit, repr)
		}
	}
	if accepted < 10000 {
		t.Fatalf("only %d random literals took the fast path", accepted)
	}
}

func TestParseNumbers(t *testing.T) {
	tests := []struct {
		lit  string
		kind ValueKind
		text string
	}{
		{"42", ValueInt, "42"},
		{"007", ValueInt, "7"},
		{"-0", ValueInt, "0"},
		{"000", ValueInt, "0"},
		{"-12", ValueInt, "-12"},
		{"12345678901234567890123", ValueInt, "12345678901234567890123"},
		{"٤٢", ValueInt, "42"},
		{"1.", ValueFloat, "1.0"},
		{"-0.0", ValueFloat, "-0.0"},
		{"3.5", ValueFloat, "3.5"},
		{"1e10", ValueFloat, "10000000000.0"},
		{"1e16", ValueFloat, "1e+16"},
		{"6E23", ValueFloat, "6e+23"},
		{"1.5e-3", ValueFloat, "0.0015"},
		{"0.000001", ValueFloat, "1e-06"},
		{"1e-400", ValueFloat, "0.0"},
		{"1.0e+0", ValueFloat, "1.0"},
		{"123456789.125", ValueFloat, "123456789.125"},
		{"0.92", ValueFloat, "0.92"},
		{"-0.0001", ValueFloat, "-0.0001"},
		{"0.00001", ValueFloat, "1e-05"},
		{"3.50", ValueFloat, "3.5"},
		{"03.5", ValueFloat, "3.5"},
		{"123456789012345.6", ValueFloat, "123456789012345.6"},
		{"1234567890123456.7", ValueFloat, "1234567890123456.8"},
		{"0.1000000000000000055", ValueFloat, "0.1"},
		{"9999999999999999.5", ValueFloat, "1e+16"},
	}
	for _, tt := range tests {
		t.Run(tt.lit, func(t *testing.T) {
			prog, err := Parse("OUT{x: " + tt.lit + "}")
			if err != nil {
				t.Fatal(err)
			}
			if len(prog.Out.Entries) != 1 {
				t.Fatalf("entries = %+v", prog.Out.Entries)
			}
			v := prog.Out.Entries[0].Value
			if v.Kind != tt.kind || v.Text != tt.text {
				t.Errorf("value = kind %d %q, want kind %d %q", v.Kind, v.Text, tt.kind, tt.text)
			}
		})
	}
}

func ref(name string) Value     { return Value{Kind: ValueRef, Text: name} }
func lit(s string) Value        { return Value{Kind: ValueString, Text: s} }
func list(items ...Value) Value { return Value{Kind: ValueList, List: items} }

func TestParseProgram(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want Program
	}{
		{
			name: "heads",
			src:  "<lvar M.f a>1</lvar>\n<lact\n\nM.g>f()</lact> <lvar h b> 2 </lvar><lact c>g()</lact>",
			want: Program{
				Lvars: []Lvar{
					{Head: Head{Model: "M", Field: "f", Alias: "a"}, Content: "1", Offset: 0},
					{Head: Head{Hint: "h", Alias: "b"}, Content: "2", Offset: 43},
				},
				Lacts: []Lact{
					{Head: Head{Model: "M", Field: "g", Alias: "g"}, Call: "f()", Offset: 21},
					{Head: Head{Alias: "c"}, Call: "g()", Offset: 63},
				},
			},
		},
		{
			name: "entries as written",
			src:  "OUT{a: [x, 'y', 1, TRUE, Null, [z]], s.t, [u], 'k': v.w, n: null, b: False, c: \"q\", d: 2.5}",
			want: Program{Out: &Out{Offset: 0, Entries: []OutEntry{
				{Kind: EntryKeyed, Key: "a", Value: list(ref("x"), lit("y"), Value{Kind: ValueInt, Text: "1"},
					Value{Kind: ValueBool, Bool: true}, Value{Kind: ValueNull}, list(ref("z")))},
				{Kind: EntryShortcut, Name: "s.t"},
				{Kind: EntryGroup, Value: list(ref("u"))},
				{Kind: EntryKeyed, Key: "k", Value: list(ref("v.w"))},
				{Kind: EntryKeyed, Key: "n", Value: Value{Kind: ValueNull}},
				{Kind: EntryKeyed, Key: "b", Value: Value{Kind: ValueBool}},
				{Kind: EntryKeyed, Key: "c", Value: lit("q")},
				{Kind: EntryKeyed, Key: "d", Value: Value{Kind: ValueFloat, Text: "2.5"}},
			}}},
		},
		{
			name: "colon after newlines",
			src:  "OUT{a\n:\n[x]}",
			want: Program{Out: &Out{Offset: 0, Entries: []OutEntry{
				{Kind: EntryKeyed, Key: "a", Value: list(ref("x"))},
			}}},
		},
		{
			name: "true before a dot is a boolean",
			src:  "OUT{a: true.x}",
			want: Program{Out: &Out{Offset: 0, Entries: []OutEntry{
				{Kind: EntryKeyed, Key: "a", Value: Value{Kind: ValueBool, Bool: true}},
				{Kind: EntryShortcut, Name: "x"},
			}}},
		},
		{
			name: "closing brace inside a list does not end it",
			src:  "OUT{a: [x} y]",
			want: Program{Out: &Out{Offset: 0, Entries: []OutEntry{
				{Kind: EntryKeyed, Key: "a", Value: list(ref("x"), ref("y"))},
			}}},
		},
		{
			name: "text after OUT is not parsed",
			src:  "OUT{} <lvar a>",
			want: Program{Out: &Out{Offset: 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.src, tt.want.parsed = tt.src, true
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("Parse(%q)\n got %+v\nwant %+v", tt.src, *got, tt.want)
				if got.Out != nil && tt.want.Out != nil {
					t.Errorf("entries\n got %+v\nwant %+v", got.Out.Entries, tt.want.Out.Entries)
				}
			}
		})
	}
}

func TestProgramPosition(t *testing.T) {
	src := "<lvar M.f a>1</lvar>\n<lact\n\nM.g>f()</lact> <lvar h b> 2 </lvar><lact c>g()</lact>\nOUT{x: [a]}\né<"
	prog, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		off  int
		want Pos
	}{
		{prog.Lvars[0].Offset, Pos{0, 1, 1}},
		{prog.Lacts[0].Offset, Pos{21, 2, 0}},
		{prog.Lvars[1].Offset, Pos{43, 4, 15}},
		{prog.Lacts[1].Offset, Pos{63, 4, 35}},
		{prog.Out.Offset, Pos{82, 5, 0}},
		{len(src) - 1, Pos{len(src) - 1, 6, 1}},
		{-5, Pos{0, 1, 1}},
		{len(src) + 9, Pos{len(src), 6, 2}},
	}
	for _, tt := range tests {
		if got := prog.Position(tt.off); got != tt.want {
			t.Errorf("Position(%d) = %+v, want %+v", tt.off, got, tt.want)
		}
	}
}

func TestOutFields(t *testing.T) {
	src := "<lvar Report.title t>x</lvar><lact hint s>f()</lact><lvar raw>y</lvar>\n" +
		"OUT{t, s, raw, ghost.x, k: [a], k2: 'lit', raw, [t, s], [raw], [[s]], k: [b], t, k2}"
	prog, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	entriesBefore := fmt.Sprintf("%+v", prog.Out.Entries)
	tests := []struct {
		name string
		bind func(string) string
		want []Field
	}{
		{
			name: "default binding",
			bind: prog.DefaultBinding(),
			want: []Field{
				{Key: "title", Value: list(ref("t"), list(ref("t"), ref("s")), ref("t"))},
				{Key: "hint", Value: list(ref("s"), list(list(ref("s"))))},
				{Key: "raw", Value: list(ref("raw"), ref("raw"), list(ref("raw")))},
				{Key: "ghost", Value: list(ref("ghost.x"))},
				{Key: "k", Value: list(ref("b"))},
				{Key: "k2", Value: lit("lit")},
			},
		},
		{
			// A bind returning "" gives no spec: shortcuts fall back to the
			// first segment, groups are dropped ([raw] here).
			name: "target-aware binding",
			bind: func(name string) string {
				if name == "t" || name == "s" {
					return "report"
				}
				return ""
			},
			want: []Field{
				{Key: "report", Value: list(ref("t"), ref("s"), list(ref("t"), ref("s")), list(list(ref("s"))), ref("t"))},
				{Key: "raw", Value: list(ref("raw"), ref("raw"))},
				{Key: "ghost", Value: list(ref("ghost.x"))},
				{Key: "k", Value: list(ref("b"))},
				{Key: "k2", Value: lit("lit")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := prog.Out.Fields(tt.bind)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Fields\n got %+v\nwant %+v", got, tt.want)
			}
			// The merge must not modify the entries.
			if after := fmt.Sprintf("%+v", prog.Out.Entries); after != entriesBefore {
				t.Errorf("entries modified:\n%s\n%s", entriesBefore, after)
			}
			got[0].Value.List[0] = lit("changed")
			if again := prog.Out.Fields(tt.bind); !reflect.DeepEqual(again, tt.want) {
				t.Errorf("Fields shares lists with a previous result")
			}
		})
	}
	var nilOut *Out
	if f := nilOut.Fields(prog.DefaultBinding()); f != nil {
		t.Errorf("nil Out Fields = %+v", f)
	}
}

func TestOutFieldsGroupReplacesNonList(t *testing.T) {
	prog, err := Parse("<lvar q a>1</lvar>OUT{q: 'x', z: 1, [a], a}")
	if err != nil {
		t.Fatal(err)
	}
	got := prog.Out.Fields(prog.DefaultBinding())
	want := []Field{
		{Key: "q", Value: list(list(ref("a")), ref("a"))},
		{Key: "z", Value: Value{Kind: ValueInt, Text: "1"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestDefaultBinding(t *testing.T) {
	prog, err := Parse("<lvar M.f a>1</lvar><lact h b>g()</lact><lvar c>2</lvar>")
	if err != nil {
		t.Fatal(err)
	}
	bind := prog.DefaultBinding()
	for name, want := range map[string]string{
		"a": "f", "b": "h", "c": "c", "ghost": "ghost", "note.x": "note", "x.y.z": "x", ".a": "",
	} {
		if got := bind(name); got != want {
			t.Errorf("bind(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestAliasSet(t *testing.T) {
	var a aliasSet
	prog := &Program{}
	for i := 0; i < 3*aliasSetSmall; i++ {
		name := fmt.Sprintf("a%d", i)
		// Declarations alternate: lvars at even i, lacts at odd i.
		decl := len(prog.Lvars)
		if i%2 == 1 {
			decl = -len(prog.Lacts) - 1
		}
		if !a.add(name, decl, prog) {
			t.Fatalf("add(%s) reported a duplicate", name)
		}
		if i%2 == 1 {
			prog.Lacts = append(prog.Lacts, Lact{Head: Head{Alias: name}})
		} else {
			prog.Lvars = append(prog.Lvars, Lvar{Head: Head{Alias: name}})
		}
		// Every alias added so far, before and after the switch to a map,
		// is a duplicate.
		for j := 0; j <= i; j++ {
			if a.add(fmt.Sprintf("a%d", j), 0, prog) {
				t.Fatalf("after %d adds, a%d not reported as a duplicate", i+1, j)
			}
		}
	}
	// The map indexes every declaration as assembly expects.
	if len(a.many) != 3*aliasSetSmall {
		t.Fatalf("map holds %d aliases, want %d", len(a.many), 3*aliasSetSmall)
	}
	for i := 0; i < 3*aliasSetSmall; i++ {
		want := i / 2
		if i%2 == 1 {
			want = -i/2 - 1
		}
		if got := a.many[fmt.Sprintf("a%d", i)]; got != want {
			t.Errorf("a%d indexed %d, want %d", i, got, want)
		}
	}
}

func TestHeadSpec(t *testing.T) {
	tests := []struct {
		h    Head
		want string
	}{
		{Head{Model: "M", Field: "f", Alias: "a"}, "f"},
		{Head{Hint: "h", Alias: "a"}, "h"},
		{Head{Alias: "a"}, ""},
	}
	for _, tt := range tests {
		if got := tt.h.Spec(); got != tt.want {
			t.Errorf("%+v.Spec() = %q, want %q", tt.h, got, tt.want)
		}
	}
}

// TestHostileInputs runs the front end over inputs built to defeat naive
// scanning or recursion. Each must finish with the stated outcome; the
// benchmarks (BenchmarkParseHostile) show the cost stays linear.
func TestHostileInputs(t *testing.T) {
	big := 200_000
	tests := []struct {
		name    string
		text    string
		wantErr string // "" for success
	}{
		{"deep brackets", "OUT{k: " + strings.Repeat("[", big), "OUT block nesting too deep"},
		{"deep group brackets", "OUT{" + strings.Repeat("[", big), "OUT block nesting too deep"},
		{"many unclosed fences", strings.Repeat("```lndl\nx\n", big/10), ""},
		{"many curly heads without brace", strings.Repeat("{lvar a ", big/8), ""},
		{"many lact heads without closer", strings.Repeat("<lact a f(x) ", big/13), "Expected GT, got LPAREN"},
		{"many lvar heads without gt", strings.Repeat("<lvar a ", big/8), "Expected GT, got LVAR_OPEN"},
		{"many lvar heads sharing one gt", strings.Repeat("<lvar a", big/7) + ">", "Expected GT, got LVAR_OPEN"},
		{"long dotted name", "OUT{k: [" + strings.Repeat("a.", big/2) + "]}", ""},
		{"long spaced dotted name", "OUT{k: [" + strings.Repeat("a . ", big/4) + "]}", ""},
		{"long unterminated string", "OUT{k: '" + strings.Repeat("\\'x", big/3), ""},
		{"long float literal", "OUT{k: 0." + strings.Repeat("1", big) + "}", ""},
		{"long float literal overflows", "OUT{k: " + strings.Repeat("1", big) + ".5}", "Invalid number literal"},
		{"long malformed number", "OUT{k: " + strings.Repeat("1.", big/2) + "}", "Invalid number literal"},
		{"unclosed body", "<lvar a>" + strings.Repeat("x</lact>", big/8), "Unclosed lvar tag"},
		{"many shortcuts", "OUT{" + strings.Repeat("a.b, ", MaxOutEntries) + "}", ""},
		{"many nested groups", "OUT{k: [" + strings.Repeat("[a], ", big/5) + "]}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := Parse(NormalizeBlock(tt.text))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if prog.Out != nil {
				_ = prog.Out.Fields(prog.DefaultBinding())
			}
		})
	}
}

// naiveFields is a plain restatement of the merge rules of docs/lndl.md#the-out-block, used to check Out.Fields on inputs large enough for its map
// paths.
func naiveFields(o *Out, bind func(string) string) []Field {
	var fields []Field
	find := func(k string) int {
		for i := range fields {
			if fields[i].Key == k {
				return i
			}
		}
		return -1
	}
	clone := func(v Value) Value {
		if v.Kind == ValueList {
			v.List = append([]Value(nil), v.List...)
		}
		return v
	}
	for _, e := range o.Entries {
		switch e.Kind {
		case EntryKeyed:
			if i := find(e.Key); i >= 0 {
				fields[i].Value = clone(e.Value)
			} else {
				fields = append(fields, Field{Key: e.Key, Value: clone(e.Value)})
			}
		case EntryShortcut:
			spec := bind(e.Name)
			if spec == "" {
				spec = firstSegment(e.Name)
			}
			i := find(spec)
			if i < 0 {
				fields = append(fields, Field{Key: spec, Value: list(ref(e.Name))})
			} else if fields[i].Value.Kind == ValueList {
				fields[i].Value.List = append(fields[i].Value.List, ref(e.Name))
			}
		case EntryGroup:
			name, ok := groupHead(e.Value)
			if !ok {
				continue
			}
			spec := bind(name)
			if spec == "" {
				continue
			}
			if i := find(spec); i >= 0 && fields[i].Value.Kind == ValueList {
				fields[i].Value.List = append(fields[i].Value.List, e.Value)
			} else if i >= 0 {
				fields[i].Value = list(e.Value)
			} else {
				fields = append(fields, Field{Key: spec, Value: list(e.Value)})
			}
		}
	}
	return fields
}

func TestOutFieldsMatchesNaiveMerge(t *testing.T) {
	for _, n := range []int{3, 16, 17, 40} {
		var b strings.Builder
		for i := 0; i < n; i++ {
			switch i % 3 {
			case 0:
				fmt.Fprintf(&b, "<lvar M%d.f%d a%d>x</lvar>\n", i%4, i%7, i)
			case 1:
				fmt.Fprintf(&b, "<lact h%d a%d>f()</lact>\n", i%5, i)
			default:
				fmt.Fprintf(&b, "<lvar a%d>y</lvar>\n", i)
			}
		}
		b.WriteString("OUT{")
		for i := 0; i < 3*n; i++ {
			switch i % 6 {
			case 0:
				fmt.Fprintf(&b, "a%d, ", i%n)
			case 1:
				fmt.Fprintf(&b, "k%d: [a%d], ", i%(n/2+1), i%n)
			case 2:
				fmt.Fprintf(&b, "[a%d, a%d], ", i%n, (i+1)%n)
			case 3:
				fmt.Fprintf(&b, "f%d: 'lit', ", i%7)
			case 4:
				fmt.Fprintf(&b, "note.x%d, ", i%5)
			default:
				fmt.Fprintf(&b, "[[a%d]], ", i%n)
			}
		}
		b.WriteString("}")
		prog, err := Parse(b.String())
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		bind := prog.DefaultBinding()
		got := prog.Out.Fields(bind)
		want := naiveFields(prog.Out, bind)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("n=%d: Fields differs from the naive merge\n got %+v\nwant %+v", n, got, want)
		}
		// DefaultBinding agrees with the head specs on every alias.
		for _, lv := range prog.Lvars {
			want := lv.Spec()
			if want == "" {
				want = lv.Alias
			}
			if g := bind(lv.Alias); g != want {
				t.Errorf("n=%d: bind(%s) = %q, want %q", n, lv.Alias, g, want)
			}
		}
		for _, la := range prog.Lacts {
			if g := bind(la.Alias); g != la.Spec() {
				t.Errorf("n=%d: bind(%s) = %q, want %q", n, la.Alias, g, la.Spec())
			}
		}
	}
}
