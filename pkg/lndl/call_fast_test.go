package lndl

import (
	"reflect"
	"testing"
)

// TestFastCallMatchesFull checks that the fast path takes the common
// shapes, gives what the full parser gives, and leaves everything else
// to the full parser.
func TestFastCallMatchesFull(t *testing.T) {
	for _, tc := range []struct {
		body string
		fast bool
	}{
		{`search(query="AI", limit=5)`, true},
		{`search.docs(query="ingestion service design", limit=5)`, true},
		{`f()`, true},
		{`f(a=0,b='x',)`, true},
		{`f(a="", b=123456789012345678)`, true},
		{`a.b.c(x=1)`, false},
		{`f(a=1, a=2)`, false},
		{`f(a=05)`, false},
		{`f(a=1_0)`, false},
		{`f(a=5j)`, false},
		{`f(a=1.5)`, false},
		{`f(a=-1)`, false},
		{`f(a="x" "y")`, false},
		{`f(a=r"x")`, false},
		{`f(a="x\ny")`, false},
		{`f(a="é")`, false},
		{`f(1)`, false},
		{`f(from=1)`, false},
		{`None(a=1)`, false},
		{`f (a=1)`, false},
		{`f(a=1) `, false},
		{`f(a=1234567890123456789)`, false},
	} {
		got, ok := fastCall(tc.body)
		if ok != tc.fast {
			t.Errorf("fastCall(%q): ok %v, want %v", tc.body, ok, tc.fast)
			continue
		}
		if !ok {
			continue
		}
		full, err := parseCallFull(tc.body)
		if err != nil || got.Function != full.Function || !reflect.DeepEqual(got.Arguments, full.Arguments) {
			t.Errorf("fastCall(%q) = %+v, the full parser gives %+v, %v", tc.body, got, full, err)
		}
	}
}
