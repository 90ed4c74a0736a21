package lndl

import (
	"reflect"
	"testing"
)

func TestSplitLines(t *testing.T) {
	tests := []struct {
		in   string
		want []any
	}{
		{"a\nb", []any{"a", "b"}},
		{"- x  \n\n  \t\n- y\t\x1f", []any{"- x", "- y"}},
		{"\n\n", []any{}},
		{"a\r\nb", []any{"a", "b"}},
		{"a\u2028b\n c ", []any{"a", "b", " c"}},
		{"x\x1cy", []any{"x", "y"}},
	}
	for _, tt := range tests {
		if got := splitLines(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("splitLines(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzSplitLines checks the fast path of splitLines against the general
// one.
func FuzzSplitLines(f *testing.F) {
	for _, s := range []string{"a\nb", "- x  \n\n  \t\n- y\t\x1f", "\n", "a\r\nb", "é\nx", " \n \t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, want := splitLines(s), splitLinesGeneral(s)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("splitLines(%q) = %q, general %q", s, got, want)
		}
	})
}
