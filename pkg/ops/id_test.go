package ops_test

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lionbus/lionbus/pkg/ops"
)

func TestValidID(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"a", true},
		{"Branch_1-x", true},
		{strings.Repeat("z", ops.MaxIDLength), true},
		{strings.Repeat("z", ops.MaxIDLength+1), false},
		{"", false},
		{"a.b", false},
		{"a b", false},
		{"a*", false},
		{"a>", false},
		{"é", false},
		{"a\n", false},
	}
	for _, tt := range tests {
		if got := ops.ValidID(tt.id); got != tt.want {
			t.Errorf("ValidID(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
}

// FuzzValidID checks the byte loop of ValidID against IDPattern, the form of
// the rule the JSON Schemas state.
func FuzzValidID(f *testing.F) {
	re := regexp.MustCompile(ops.IDPattern)
	for _, s := range []string{"", "a", "a.b", "x_y-Z9", strings.Repeat("q", 129), "\xff", "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ops.ValidID(s), re.MatchString(s); got != want {
			t.Fatalf("ValidID(%q) = %v, pattern says %v", s, got, want)
		}
	})
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc…"},
		{"héllo", 2, "h…"}, // é is two bytes: never cut in the middle
		{"日本語", 4, "日…"},
		{"abc", 0, "…"},
		{"", 0, ""},
	}
	for _, tt := range tests {
		if got := ops.Truncate(tt.s, tt.n); got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

// FuzzTruncate: the result is valid UTF-8 when the input is, a prefix of
// the input (plus the ellipsis) and never longer than n bytes plus the
// ellipsis.
func FuzzTruncate(f *testing.F) {
	f.Add("héllo wörld", 3)
	f.Add("", 0)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > 1<<16 {
			return
		}
		got := ops.Truncate(s, n)
		if len(s) <= n {
			if got != s {
				t.Fatalf("Truncate(%q, %d) = %q, want it unchanged", s, n, got)
			}
			return
		}
		body, ok := strings.CutSuffix(got, "…")
		if !ok || !strings.HasPrefix(s, body) || len(body) > n {
			t.Fatalf("Truncate(%q, %d) = %q", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Truncate(%q, %d) = %q splits a character", s, n, got)
		}
	})
}
