package ops

import (
	"encoding/json"
	"testing"
)

// FuzzExtractJSON checks that extraction never panics and that whatever it
// returns is valid JSON.
func FuzzExtractJSON(f *testing.F) {
	for _, s := range []string{
		`{"a": 1}`, "```json\n{'a': 'b',}\n```", `{a: [1, 2`, `[{"x": "it's"}]`, "```\n```", `{'a': "\'"}`, `{"a": "\`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vals, err := extractJSON(s)
		if err != nil {
			return
		}
		for _, v := range vals {
			if _, err := json.Marshal(v); err != nil {
				t.Fatalf("extracted value does not encode: %v", err)
			}
		}
		_ = matchFields(s, []string{"a", "b"})
	})
}
