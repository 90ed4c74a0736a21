package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/wire"
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
// nested deeper than MaxDepth, as the decoded walk does.
func FuzzCheckRawDepth(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `"x"`, `{"a":"{[{[{["}`, `["\"[", {"b":["]"]}]`,
		strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth),
		strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
		strings.Repeat(`{"a":`, MaxDepth) + `"\\\""` + strings.Repeat("}", MaxDepth),
		strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var doc any
		if json.Unmarshal(raw, &doc) != nil {
			return // not JSON: the decoder refuses it anyway
		}
		tooDeep := containerDepth(doc) > MaxDepth
		err := CheckRawDepth(raw)
		if (err != nil) != tooDeep || err != nil && !errors.Is(err, ErrTooComplex) {
			t.Fatalf("CheckRawDepth(%q) = %v, want too deep %v (depth %d)", raw, err, tooDeep, containerDepth(doc))
		}
		if shapeErr := wire.CheckSchemaShape(doc); tooDeep && shapeErr == nil {
			t.Fatalf("the decoded walk accepts %q, %d deep", raw, containerDepth(doc))
		}
	})
}
