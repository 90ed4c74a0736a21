package lndl

import (
	"reflect"
	"testing"
)

// TestFastOutMatchesTokenParser checks that the OUT fast path takes the
// common shapes, gives what the token parser gives, and leaves the others
// (and every error) to it.
func TestFastOutMatchesTokenParser(t *testing.T) {
	for _, tc := range []struct {
		text string
		fast bool
	}{
		{"OUT{a: [x, y], b: 0.5, c: false, d: [[n0, v0], [n1, v1]]}", true},
		{"OUT{\n  a: [x,\n y.z],\n  b: q.r, c: -007, d: NULL, e: True, f: [],\n}", true},
		{"OUT{}", true},
		{"OUT{a: [[[1]]], b: [1.0, 1e3]}", false},
		{"OUT{a: \"s\", b: ['x', \"y\"z, \"\"], c: 'é\n'}", true},
		{"OUT{a: \"s\\\"\"}", false},
		{"OUT{a: \"s}", false},
		{"OUT{\"a\": [b]}", false},
		{"OUT{[a, b]}", false},
		{"OUT{a, b: [c]}", false},
		{"OUT{a.b: [c]}", false},
		{"OUT{a: [b .c]}", false},
		{"OUT{a: [b.]}", false},
		{"OUT{a: true.x}", false},
		{"OUT{a: [é]}", false},
		{"OUT{a: [1x]}", false},
		{"OUT{a: [1.2.3]}", false},
		{"OUT{a: [x]", false},
		{"OUT{a: [x],, b: [y]}", false},
		{"OUT{a: }", false},
		{"OUT{a: [x] OUT{b: [y]}}", false},
	} {
		p := &parser{lx: newLexer(tc.text), cur: startPos, listStart: -1}
		p.advance()
		fast, ok := p.fastOut()
		if ok != tc.fast {
			t.Errorf("fastOut(%q): ok %v, want %v", tc.text, ok, tc.fast)
		}
		prog, err := parse(tc.text, true, declCount{})
		slow, slowErr := parse(tc.text, false, declCount{})
		if !reflect.DeepEqual(prog, slow) || (err == nil) != (slowErr == nil) {
			t.Errorf("Parse(%q) = %+v, %v; token parser %+v, %v", tc.text, prog, err, slow, slowErr)
		}
		if ok && (slowErr != nil || !reflect.DeepEqual(fast, slow.Out)) {
			t.Errorf("fastOut(%q) = %+v; token parser %+v, %v", tc.text, fast, slow.Out, slowErr)
		}
	}
}
