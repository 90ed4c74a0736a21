// Package conform shapes a JSON value recovered from a model's text
// towards the JSON Schema it is meant to satisfy, before it is validated:
// the keys of its objects matched to the schema's property names, its
// values coerced to the schema's types where nothing is lost
// (docs/decisions.md#reference-a5). It also picks expected fields out of a
// text's JSON (request_fields). The parse stage of pkg/ops uses it.
package conform

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
)

// maxConformDepth bounds how deep conform follows a value and its schema
// ($ref hops included); deeper parts are returned as they are.
const maxConformDepth = 64

// conformer shapes a recovered JSON value towards a response_format before
// it is validated, the way the original's lax validation does
// (docs/decisions.md#reference-a5):
//
//   - the keys of an object are matched to the schema's property names
//     (matchKeys: exactly, then, with fuzzy, ignoring case and separators and
//     by similarity); keys left over are kept, unless the schema forbids
//     additional properties, in which case they are dropped;
//   - a value whose JSON type the schema does not allow is coerced to the
//     first allowed type it converts to losslessly: a numeric string to an
//     integer or a number ("42" → 42; "4.0" → 4 for an integer), "true",
//     "false", "yes", "no", "on", "off", "1", "0" (any case) and the numbers
//     1 and 0 to a boolean, "null" or "none" to null, and any other single
//     value to a one-item array;
//   - it descends into properties, array items, local $refs ("#/...") and
//     the first branch of anyOf/oneOf that fits.
//
// Values the schema already allows are not changed, nor is anything else
// (a number is never turned into a string). The input is not modified: the
// result shares its unchanged parts.
type conformer struct {
	root      map[string]any // the whole schema, for $ref
	fuzzy     bool
	threshold float64
}

// Value returns v shaped towards schema, a JSON Schema decoded by
// encoding/json (local $refs resolve inside it): see conformer. fuzzy and
// threshold are the key matching's (see matchKeys).
func Value(v any, schema map[string]any, fuzzy bool, threshold float64) any {
	c := conformer{root: schema, fuzzy: fuzzy, threshold: threshold}
	return c.conform(v, schema, 0)
}

// conform returns v shaped towards the schema s (see conformer).
func (c *conformer) conform(v any, s map[string]any, depth int) any {
	if depth > maxConformDepth || s == nil {
		return v
	}
	if ref, ok := s["$ref"].(string); ok && !hasShape(s) {
		if t := c.pointer(ref); t != nil {
			return c.conform(v, t, depth+1)
		}
		return v
	}
	types := schemaTypes(s)
	if len(types) == 0 {
		for _, key := range []string{"anyOf", "oneOf"} {
			if branches, ok := s[key].([]any); ok {
				return c.conformBranches(v, branches, depth)
			}
		}
		return v
	}
	if !hasType(v, types) {
		for _, t := range types {
			if cv, ok := coerce(v, t); ok {
				v = cv
				break
			}
		}
	}
	switch x := v.(type) {
	case map[string]any:
		return c.conformObject(x, s, depth)
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = c.conform(e, items, depth+1)
			}
			return out
		}
	}
	return v
}

// conformBranches conforms v to the first branch of an anyOf or oneOf
// whose type v has, else to the first branch it can be coerced into.
func (c *conformer) conformBranches(v any, branches []any, depth int) any {
	var schemas []map[string]any
	for _, b := range branches {
		if m, ok := b.(map[string]any); ok {
			schemas = append(schemas, c.resolve(m, depth))
		}
	}
	for _, b := range schemas {
		if hasType(v, schemaTypes(b)) {
			return c.conform(v, b, depth+1)
		}
	}
	for _, b := range schemas {
		if cv := c.conform(v, b, depth+1); hasType(cv, schemaTypes(b)) {
			return cv
		}
	}
	return v
}

// conformObject matches obj's keys to the properties of s and conforms
// each matched value to its property's schema.
func (c *conformer) conformObject(obj map[string]any, s map[string]any, depth int) map[string]any {
	props, _ := s["properties"].(map[string]any)
	if len(props) == 0 {
		return obj
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	fields := make([]string, 0, len(props))
	for f := range props {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	match := matchKeys(keys, fields, c.fuzzy, c.threshold)
	_, patterned := s["patternProperties"]
	dropExtra := s["additionalProperties"] == false && !patterned
	out := make(map[string]any, len(obj))
	for k, val := range obj {
		f, ok := match[k]
		switch {
		case ok:
			ps, _ := props[f].(map[string]any)
			out[f] = c.conform(val, ps, depth+1)
		case !dropExtra:
			out[k] = val
		}
	}
	return out
}

// resolve follows s's $ref when s is nothing but a reference.
func (c *conformer) resolve(s map[string]any, depth int) map[string]any {
	for ; depth <= maxConformDepth; depth++ {
		ref, ok := s["$ref"].(string)
		if !ok || hasShape(s) {
			return s
		}
		t := c.pointer(ref)
		if t == nil {
			return s
		}
		s = t
	}
	return s
}

// pointer resolves a reference inside the schema ("#" or "#/a/b"); nil for
// any other reference or a missing target.
func (c *conformer) pointer(ref string) map[string]any {
	rest, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	var cur any = c.root
	if rest != "" {
		if !strings.HasPrefix(rest, "/") {
			return nil
		}
		for _, tok := range strings.Split(rest[1:], "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			switch x := cur.(type) {
			case map[string]any:
				cur = x[tok]
			case []any:
				i, err := strconv.Atoi(tok)
				if err != nil || i < 0 || i >= len(x) {
					return nil
				}
				cur = x[i]
			default:
				return nil
			}
		}
	}
	m, _ := cur.(map[string]any)
	return m
}

// hasShape reports whether s says something of its own about the shape of
// a value, so that a $ref next to it is not simply followed.
func hasShape(s map[string]any) bool {
	for _, k := range []string{"type", "properties", "items"} {
		if _, ok := s[k]; ok {
			return true
		}
	}
	return false
}

// schemaTypes returns the JSON types s allows: its "type" (a name or a
// list), else "object" when it has properties, "array" when it has items;
// none when it says nothing.
func schemaTypes(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if name, ok := e.(string); ok {
				out = append(out, name)
			}
		}
		return out
	}
	if _, ok := s["properties"]; ok {
		return []string{"object"}
	}
	if _, ok := s["items"]; ok {
		return []string{"array"}
	}
	return nil
}

// hasType reports whether v (as encoding/json decodes, or json.Number) is
// of one of the JSON Schema types.
func hasType(v any, types []string) bool {
	for _, t := range types {
		if isType(v, t) {
			return true
		}
	}
	return false
}

func isType(v any, t string) bool {
	switch x := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case float64:
		return t == "number" || (t == "integer" && x == math.Trunc(x))
	case json.Number:
		if t == "number" {
			return true
		}
		_, ok := integerText(string(x))
		return t == "integer" && ok
	case map[string]any:
		return t == "object"
	case []any:
		return t == "array"
	}
	return false
}

// coerce converts v to the JSON Schema type t when that loses nothing (see
// conformer), and reports whether it did.
func coerce(v any, t string) (any, bool) {
	switch t {
	case "integer":
		switch x := v.(type) {
		case string:
			if n, ok := integerText(x); ok {
				return json.Number(n), true
			}
		}
	case "number":
		if x, ok := v.(string); ok {
			if f, ok := numberText(x); ok {
				return f, true
			}
		}
	case "boolean":
		switch x := v.(type) {
		case string:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "true", "yes", "on", "1":
				return true, true
			case "false", "no", "off", "0":
				return false, true
			}
		case float64:
			if x == 0 || x == 1 {
				return x == 1, true
			}
		}
	case "null":
		if x, ok := v.(string); ok {
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "null", "none":
				return nil, true
			}
		}
	case "array":
		if _, ok := v.([]any); !ok && v != nil {
			return []any{v}, true
		}
	}
	return nil, false
}

// maxIntegerDigits bounds the integers coerced from strings.
const maxIntegerDigits = 40

// integerText returns s, an integer written in decimal (an optional sign,
// digits, and an optional fraction of zeros, surrounded by spaces), as
// canonical JSON integer text.
func integerText(s string) (string, bool) {
	s = strings.TrimSpace(s)
	neg := false
	switch {
	case strings.HasPrefix(s, "-"):
		neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	if whole, frac, ok := strings.Cut(s, "."); ok {
		if strings.Trim(frac, "0") != "" {
			return "", false
		}
		s = whole
	}
	if s == "" || len(s) > maxIntegerDigits {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return "", false
		}
	}
	s = strings.TrimLeft(s, "0")
	switch {
	case s == "":
		return "0", true
	case neg:
		return "-" + s, true
	}
	return s, true
}

// numberText returns the finite number s writes (decimal, optionally
// signed and with an exponent, surrounded by spaces).
func numberText(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 64 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return 0, false // no "Inf", "NaN", hex or underscores
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}
