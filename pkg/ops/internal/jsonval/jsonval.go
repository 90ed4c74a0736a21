// Package jsonval holds the helpers of pkg/ops and its subpackages for
// JSON-like values (decoded by encoding/json into any): deep copies,
// emptiness, lists, and their text as JSON.
package jsonval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
)

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

// AsList returns v as a list: a list as is (copied), nil as empty,
// anything else as a one-element list.
func AsList(v any) []any {
	switch t := v.(type) {
	case nil:
		return nil
	case []any:
		return append([]any(nil), t...)
	case []map[string]any:
		out := make([]any, len(t))
		for i, m := range t {
			out[i] = m
		}
		return out
	case []string:
		out := make([]any, len(t))
		for i, s := range t {
			out[i] = s
		}
		return out
	}
	return []any{v}
}

// Indent returns v as indented JSON (two spaces, HTML not escaped, object
// keys sorted), or as fmt prints it when it does not encode.
func Indent(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimRight(buf.String(), "\n")
}

// Compact returns v as compact JSON (HTML not escaped, object keys
// sorted), or as fmt prints it when it does not encode.
func Compact(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimRight(buf.String(), "\n")
}

// Text returns v as text: a string as it is, nothing for nil, any other
// value as compact JSON.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	return Compact(v)
}

// Number returns v as a float64 when it is a finite number of any Go
// numeric type or a json.Number: how options and metadata that came
// through JSON, or from Go code, are read as numbers.
func Number(v any) (float64, bool) {
	var f float64
	if n, ok := v.(json.Number); ok {
		var err error
		if f, err = n.Float64(); err != nil {
			return 0, false
		}
	} else {
		rv := reflect.ValueOf(v)
		switch {
		case !rv.IsValid():
			return 0, false
		case rv.CanFloat():
			f = rv.Float()
		case rv.CanInt():
			f = float64(rv.Int())
		case rv.CanUint():
			f = float64(rv.Uint())
		default:
			return 0, false
		}
	}
	return f, !math.IsNaN(f) && !math.IsInf(f, 0)
}
