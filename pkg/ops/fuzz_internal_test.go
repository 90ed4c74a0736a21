package ops

import (
	"encoding/json"
	"testing"
)

// FuzzRecoverJSON checks that recovery never panics, that every value it
// returns is an object or an array that encodes as valid JSON. The seed
// corpus is in testdata/fuzz/FuzzRecoverJSON.
func FuzzRecoverJSON(f *testing.F) {
	for _, s := range []string{
		`{"a": 1}`, "```json\n{'a': 'b',}\n```", `{a: [1, 2`, `[{"x": "it's"}]`, "```\n```", `{'a': "\'"}`, `{"a": "\`,
		`prose {"a": True} more`, "{\"a\": 1 // c\n}", `[1, 2}`, `{"Answer": "42"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vals, err := recoverJSON(s)
		if err != nil {
			return
		}
		for _, v := range vals {
			if !isContainer(v) {
				t.Fatalf("recovered a %T, want an object or an array", v)
			}
			b, err := json.Marshal(v)
			if err != nil || !json.Valid(b) {
				t.Fatalf("recovered value does not encode: %v", err)
			}
		}
		_ = matchFields(s, []string{"a", "b"})
	})
}
