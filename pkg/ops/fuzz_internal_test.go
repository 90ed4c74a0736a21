package ops

import (
	"encoding/json"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops/internal/conform"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonrecover"
)

// FuzzRecoverJSON checks that recovery never panics, that every value it
// returns is an object or an array that encodes as valid JSON, and that key
// matching and coercion of what it returns never panic and keep it
// encodable. The seed corpus is in testdata/fuzz/FuzzRecoverJSON.
func FuzzRecoverJSON(f *testing.F) {
	for _, s := range []string{
		`{"a": 1}`, "```json\n{'a': 'b',}\n```", `{a: [1, 2`, `[{"x": "it's"}]`, "```\n```", `{'a': "\'"}`, `{"a": "\`,
		`prose {"a": True} more`, "{\"a\": 1 // c\n}", `[1, 2}`, `{"Answer": "42"}`,
	} {
		f.Add(s)
	}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"answer": map[string]any{"type": "integer"},
			"tags":   map[string]any{"type": "array", "items": map[string]any{"type": "number"}},
			"ok":     map[string]any{"type": []any{"boolean", "null"}},
			"self":   map[string]any{"$ref": "#"},
		},
		"additionalProperties": false,
	}
	f.Fuzz(func(t *testing.T, s string) {
		vals, err := jsonrecover.Recover(s)
		if err != nil {
			return
		}
		for _, v := range vals {
			if _, obj := v.(map[string]any); !obj && !isArray(v) {
				t.Fatalf("recovered a %T, want an object or an array", v)
			}
			b, err := json.Marshal(v)
			if err != nil || !json.Valid(b) {
				t.Fatalf("recovered value does not encode: %v", err)
			}
			if b, err := json.Marshal(conform.Value(v, schema, true, conform.DefaultSimilarityThreshold)); err != nil || !json.Valid(b) {
				t.Fatalf("conformed value does not encode: %v", err)
			}
		}
		_ = conform.Fields(s, []string{"a", "b"})
	})
}

// isArray reports whether v is a decoded JSON array.
func isArray(v any) bool {
	_, ok := v.([]any)
	return ok
}
