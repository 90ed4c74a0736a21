package lndl

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// Fuzz tests of the front end. The seed corpora under testdata/fuzz/ hold
// the inputs of the extract, normalize and parse vectors (plus any crasher
// found, kept as a regression seed).

func FuzzExtract(f *testing.F) {
	f.Add("```lndl\n<lvar a>x</lvar>\nOUT{a}\n```\n")
	f.Fuzz(func(t *testing.T, text string) {
		blocks := Extract(text)
		lf := crlfToLF(text)
		for i, b := range blocks {
			if !strings.Contains(lf, b) {
				t.Fatalf("block %d %q is not part of the input", i, b)
			}
			if b != "" && !strings.HasSuffix(b, "\n") {
				t.Fatalf("block %d %q does not keep its final newline", i, b)
			}
		}
		// Converting "\r\n" once more changes nothing when no pair is left
		// ("\r\r\n" leaves one).
		if !strings.Contains(lf, "\r\n") {
			if again := Extract(lf); !reflect.DeepEqual(again, blocks) {
				t.Fatalf("Extract of the converted text = %q, want %q", again, blocks)
			}
		}
	})
}

func FuzzNormalize(f *testing.F) {
	f.Add("{lvar Note.a x}y{/lvar}\n<lact a fn(x=1)</lact>\n<lvar name=\"t\" b>c</lvar>")
	f.Add(" a b.c d")
	f.Add(" a name='x' b")
	f.Add("<lvar a b>x</lvar><lact  c>f()</lact><lvar d<lvar e f=1>g</lvar><lact h i(x=1)</lact>")
	f.Add("<lact a.b c>f()</lact>\n<lact d e>\n<lact f g(x)</lact>")
	f.Add("<lvar a<lvar b>x</lvar>\n<lvar c <lact d name=\"e\">f()</lact>")
	f.Fuzz(func(t *testing.T, text string) {
		got := Normalize(text)
		want := crlfToLF(text)
		if blocks := Extract(text); len(blocks) > 0 {
			want = strings.Join(blocks, "\n\n")
		}
		if nb := NormalizeBlock(want); got != nb {
			t.Fatalf("Normalize(%q) = %q, NormalizeBlock of its blocks = %q", text, got, nb)
		}
		// A text needsRepair passes is one no repair changes.
		if need, _ := needsRepair(text); !need {
			full := lowerNoteHeads(cleanTagHeads(curlyCloseTags(curlyOpenTags(fixMissingGT(text)))))
			if full != text {
				t.Fatalf("needsRepair(%q) is false, but the repairs give %q", text, full)
			}
		}
	})
}

func FuzzParse(f *testing.F) {
	f.Add("<lvar Report.title t>x</lvar>\n<lact s>f(a=1)</lact>\nOUT{report: [t, s], n: 1.5, k: \"v\", [t]}")
	f.Add("OUT{a: [0.92, -0.0001, 3.50, 007, 1e16, 123456789012345.6, 0.00001]}")
	f.Add("<lvar a>x</lvar><lvar  M . f  b >y</lvar>\n<lact h c>f()</lact><lvar\td.e>z</lvar>\n<lvarx a>w</lvar>")
	f.Add("<lvar a b c>x</lvar>\n<lvar a.>x</lvar>\n<lvar a.b.c>x</lvar>\n<lvar é>x</lvar>\n<lvar aé>x</lvar>")
	f.Add("OUT{a: [x, y.z, [1, -2.5], true, NULL], b: q, c: -7, d: False,\n e: [[a, b], [c]], f: []}")
	f.Add("OUT{a: [x], b: 1.5, c: \"s\", [g], h}")
	f.Add("<lvar a>x</lvar> \t\r\n\n<lvar a>y</lvar>")
	f.Add("<lvar a>x</lvar>#! <lact a>f()</lact>\n<lvar b>y</lvar>")
	f.Fuzz(func(t *testing.T, text string) {
		prog, err := Parse(text)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, ErrLNDL) {
				t.Fatalf("error %v (%T) is not a *ParseError", err, err)
			}
			if pe.Line < 1 || pe.Column < 0 || (pe.Line == 1 && pe.Column < 1) {
				t.Fatalf("bad position in %v", err)
			}
			if pe.Line > strings.Count(text, "\n")+1 {
				t.Fatalf("line beyond the input in %v", err)
			}
			return
		}
		seen := make(map[string]bool)
		check := func(h Head, off int, tag string) {
			pos := prog.Position(off)
			if h.Alias == "" {
				t.Fatalf("declaration without alias: %+v", h)
			}
			if seen[h.Alias] {
				t.Fatalf("duplicate alias %q accepted", h.Alias)
			}
			seen[h.Alias] = true
			if !strings.HasPrefix(text[pos.Offset:], tag) {
				t.Fatalf("declaration position %+v does not point at %s", pos, tag)
			}
			if line, col := naivePosition(text, pos.Offset); line != pos.Line || col != pos.Column {
				t.Fatalf("position %+v, recount gives line %d column %d", pos, line, col)
			}
		}
		for _, lv := range prog.Lvars {
			check(lv.Head, lv.Offset, "<lvar")
			if lv.Content != trimLNDLSpace(lv.Content) {
				t.Fatalf("content %q not trimmed", lv.Content)
			}
		}
		for _, la := range prog.Lacts {
			check(la.Head, la.Offset, "<lact")
		}
		if prog.Out != nil {
			if len(prog.Out.Entries) > MaxOutEntries {
				t.Fatalf("%d OUT entries", len(prog.Out.Entries))
			}
			fields := prog.Out.Fields(prog.DefaultBinding())
			keys := make(map[string]bool)
			for _, fl := range fields {
				if keys[fl.Key] {
					t.Fatalf("key %q twice in merged OUT", fl.Key)
				}
				keys[fl.Key] = true
			}
			checkValueDepth(t, fields)
			for _, e := range prog.Out.Entries {
				checkNumbers(t, e.Value)
			}
		}
	})
}

// checkNumbers checks that number texts are canonical: a float's text is
// the repr of its value, an integer's has no leading zero.
func checkNumbers(t *testing.T, v Value) {
	switch v.Kind {
	case ValueFloat:
		f, err := strconv.ParseFloat(v.Text, 64)
		if err != nil {
			t.Fatalf("float text %q: %v", v.Text, err)
		}
		if repr := pythonFloatRepr(f); repr != v.Text {
			t.Fatalf("float text %q is not canonical (%q)", v.Text, repr)
		}
	case ValueInt:
		d := strings.TrimPrefix(v.Text, "-")
		if d == "" || (d[0] == '0' && d != "0") || v.Text == "-0" || strings.TrimLeft(d, "0123456789") != "" {
			t.Fatalf("integer text %q is not canonical", v.Text)
		}
	case ValueList:
		for _, it := range v.List {
			checkNumbers(t, it)
		}
	}
}

func checkValueDepth(t *testing.T, fields []Field) {
	var depth func(v Value) int
	depth = func(v Value) int {
		if v.Kind != ValueList {
			return 0
		}
		d := 0
		for _, it := range v.List {
			d = max(d, depth(it))
		}
		return d + 1
	}
	for _, f := range fields {
		// A group adds one level around a list of at most MaxDepth.
		if d := depth(f.Value); d > MaxDepth+1 {
			t.Fatalf("field %q nested %d deep", f.Key, d)
		}
	}
}

// naivePosition recounts the reference's line and column of a byte offset.
func naivePosition(text string, off int) (line, col int) {
	line, col = 1, 1
	for _, r := range text[:off] {
		if r == '\n' {
			line++
			col = 0
			continue
		}
		col++
	}
	return line, col
}
