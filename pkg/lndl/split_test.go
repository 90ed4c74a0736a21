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
