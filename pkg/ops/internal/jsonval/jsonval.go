// Package jsonval holds the helpers of pkg/ops and its subpackages for
// JSON-like values (decoded by encoding/json into any): deep copies and
// emptiness.
package jsonval

// CopyMap deep-copies a JSON-like map.
func CopyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = Copy(v)
	}
	return out
}

// Copy deep-copies a JSON-like value: maps and slices are copied, other
// values are returned as they are.
func Copy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return CopyMap(t)
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = Copy(x)
		}
		return out
	case []map[string]any:
		out := make([]map[string]any, len(t))
		for i, x := range t {
			out[i] = CopyMap(x)
		}
		return out
	case []string:
		return append([]string(nil), t...)
	default:
		return v
	}
}

// IsEmpty reports nil, "", and empty lists and maps.
func IsEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}
