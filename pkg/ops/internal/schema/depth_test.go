package ops

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// containerDepth is the number of nested objects and arrays of v.
func containerDepth(v any) int {
	switch v := v.(type) {
	case map[string]any:
		d := 0
		for _, c := range v {
			d = max(d, containerDepth(c))
		}
		return d + 1
	case []any:
		d := 0
		for _, c := range v {
			d = max(d, containerDepth(c))
		}
		return d + 1
	}
	return 0
}

// FuzzCheckRawDepth: on valid JSON, the byte scan refuses exactly what is
// nested deeper than MaxSchemaDepth, as the decoded walk does.
func FuzzCheckRawDepth(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `"x"`, `{"a":"{[{[{["}`, `["\"[", {"b":["]"]}]`,
		strings.Repeat("[", MaxSchemaDepth) + strings.Repeat("]", MaxSchemaDepth),
		strings.Repeat("[", MaxSchemaDepth+1) + strings.Repeat("]", MaxSchemaDepth+1),
		strings.Repeat(`{"a":`, MaxSchemaDepth) + `"\\\""` + strings.Repeat("}", MaxSchemaDepth),
		strings.Repeat(`{"a":`, MaxSchemaDepth+1) + "1" + strings.Repeat("}", MaxSchemaDepth+1),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var doc any
		if json.Unmarshal(raw, &doc) != nil {
			return // not JSON: the decoder refuses it anyway
		}
		tooDeep := containerDepth(doc) > MaxSchemaDepth
		err := checkRawDepth(raw)
		if (err != nil) != tooDeep || err != nil && !errors.Is(err, ErrSchemaTooComplex) {
			t.Fatalf("checkRawDepth(%q) = %v, want too deep %v (depth %d)", raw, err, tooDeep, containerDepth(doc))
		}
		if shapeErr := checkShape(doc); tooDeep && shapeErr == nil {
			t.Fatalf("the decoded walk accepts %q, %d deep", raw, containerDepth(doc))
		}
	})
}
