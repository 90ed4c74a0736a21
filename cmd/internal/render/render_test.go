package render

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

func TestValues(t *testing.T) {
	tests := []struct {
		raw               string
		compact, indented string
		isString          bool
	}{
		{`"hi there"`, "hi there", "hi there", true},
		{`{"a":1}`, `{"a":1}`, "{\n  \"a\": 1\n}", false},
		{`[1,2]`, `[1,2]`, "[\n  1,\n  2\n]", false},
		{`not json`, `not json`, `not json`, false},
		{`null`, `null`, `null`, false},
		{` "x" `, `x`, `x`, true},
	}
	for _, tc := range tests {
		raw := json.RawMessage(tc.raw)
		if got := CompactValue(raw); got != tc.compact {
			t.Errorf("CompactValue(%s) = %q, want %q", tc.raw, got, tc.compact)
		}
		if got := IndentedValue(raw); got != tc.indented {
			t.Errorf("IndentedValue(%s) = %q, want %q", tc.raw, got, tc.indented)
		}
		if _, ok := StringValue(raw); ok != tc.isString {
			t.Errorf("StringValue(%s) ok = %v, want %v", tc.raw, ok, tc.isString)
		}
	}
}

func TestMessageText(t *testing.T) {
	tests := []struct {
		content map[string]any
		want    string
	}{
		{map[string]any{history.KeyInstruction: "do it", history.KeyAssistantResponse: "no"}, "do it"},
		{map[string]any{history.KeyAssistantResponse: "done"}, "done"},
		{map[string]any{history.KeySystemMessage: "be brief"}, "be brief"},
		{map[string]any{history.KeyInstruction: map[string]any{"city": "Lyon"}}, `{"city":"Lyon"}`},
		{map[string]any{"other": 1}, `{"other":1}`},
	}
	for _, tc := range tests {
		if got := MessageText(history.Message{Content: tc.content}); got != tc.want {
			t.Errorf("MessageText(%v) = %q, want %q", tc.content, got, tc.want)
		}
	}
	req := history.NewActionRequest("add", map[string]any{"x": 1}, time.Time{})
	ok := history.NewActionResponse(&req, map[string]any{"sum": 3}, "", time.Time{})
	failed := history.NewActionResponse(&req, nil, "x is required", time.Time{})
	for m, want := range map[*history.Message]string{&req: `add {"x":1}`, &ok: `add → {"sum":3}`, &failed: "add → error: x is required"} {
		if got := MessageText(*m); got != want {
			t.Errorf("MessageText(%s) = %q, want %q", m.Kind, got, want)
		}
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"two\nlines   here", 20, "two lines here"},
		{"abcdefghij", 5, "abcd…"},
		{"héllo wörld", 6, "héllo…"},
		{"exact", 5, "exact"},
	}
	for _, tc := range tests {
		if got := Clip(tc.s, tc.n); got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
