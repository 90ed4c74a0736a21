package lndl

import "encoding/json"

// annotationKeywords are the schema keywords that assert nothing about a
// value ("format" included: the validator is not asked to assert formats).
var annotationKeywords = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "format": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "$comment": true,
}

// typeKeywords are the keywords a plain schema may hold besides the
// annotations: those ParseTarget turns into a [Type], which the coercion
// walk enforces.
var typeKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "items": true, "additionalProperties": true,
	"enum": true, "const": true, "$defs": true, "definitions": true,
}

// structuralSchema reports whether every schema reachable from root uses
// only keywords that ParseTarget turns into the target's [Type], in the
// forms where the type means exactly what the keyword asserts. For such
// a schema a value accepted by the coercion walk always satisfies the
// schema, so the schema validator can add no issue. Any other keyword
// (minimum, pattern, oneOf, allOf beside other keywords, $id, ...) or an
// unusual form (several non-null types, items on a non-array, a $ref with
// asserting siblings) makes it false, and the validator runs. It also
// returns the deepest nesting of a "default" value.
func structuralSchema(root *Object) (bool, int) {
	w := &structuralWalk{root: root, seen: map[*Object]bool{}}
	ok := w.schema(root, 0)
	return ok, w.defaultDepth
}

type structuralWalk struct {
	root         *Object
	seen         map[*Object]bool
	defaultDepth int
}

// onlyAnnotationsBeside reports whether s holds nothing but key and
// annotations.
func onlyAnnotationsBeside(s *Object, key string) bool {
	ok := true
	s.Range(func(k string, _ any) bool {
		ok = k == key || annotationKeywords[k]
		return ok
	})
	return ok
}

func (w *structuralWalk) schema(s *Object, depth int) bool {
	if depth > MaxTypeDepth {
		return false
	}
	if w.seen[s] {
		return true
	}
	w.seen[s] = true
	if d, ok := s.Get("default"); ok {
		w.defaultDepth = max(w.defaultDepth, valueDepth(d))
	}
	if ref, ok := s.Get("$ref"); ok {
		rs, _ := ref.(string)
		target := w.resolve(rs)
		return target != nil && onlyAnnotationsBeside(s, "$ref") && w.schema(target, depth+1)
	}
	for _, key := range []string{"anyOf", "allOf"} {
		v, ok := s.Get(key)
		if !ok {
			continue
		}
		arr, _ := v.([]any)
		if len(arr) == 0 || (key == "allOf" && len(arr) != 1) || !onlyAnnotationsBeside(s, key) {
			return false
		}
		for _, m := range arr {
			sub, ok := m.(*Object)
			if !ok || !w.schema(sub, depth+1) {
				return false
			}
		}
		return true
	}
	plain := true
	s.Range(func(k string, _ any) bool {
		plain = annotationKeywords[k] || typeKeywords[k]
		return plain
	})
	if !plain {
		return false
	}
	types, ok := schemaTypes(s)
	if !ok {
		return false
	}
	single := "" // the one non-null type, if any
	for _, t := range types {
		if t != "null" {
			if single != "" {
				return false
			}
			single = t
		}
	}
	props, hasProps := s.Get("properties")
	items, hasItems := s.Get("items")
	ap, hasAP := s.Get("additionalProperties")
	_, hasRequired := s.Get("required")
	enum, hasEnum := s.Get("enum")
	cv, hasConst := s.Get("const")
	if hasEnum || hasConst {
		// An enum's members are the values: each must satisfy "type".
		if hasProps || hasItems || hasAP || hasRequired || (hasEnum && hasConst) {
			return false
		}
		members, ok := enum.([]any)
		if hasConst {
			members, ok = []any{cv}, true
		}
		if !ok {
			return false
		}
		for _, m := range members {
			if len(types) > 0 && !valueHasType(m, types) {
				return false
			}
		}
		return true
	}
	if hasItems {
		sub, ok := items.(*Object)
		if !ok || single != "array" || !w.schema(sub, depth+1) {
			return false
		}
	}
	if hasProps {
		po, ok := props.(*Object)
		if !ok || (single != "object" && single != "") || (single == "" && len(types) > 0) {
			return false
		}
		po.Range(func(_ string, v any) bool {
			switch x := v.(type) {
			case *Object:
				ok = w.schema(x, depth+1)
			case bool:
				ok = x
			default:
				ok = false
			}
			return ok
		})
		if !ok {
			return false
		}
	}
	if hasRequired {
		names, ok := s.Get("required")
		arr, isArr := names.([]any)
		if !ok || !isArr || !hasProps {
			return false
		}
		po := props.(*Object)
		for _, n := range arr {
			ns, isStr := n.(string)
			if !isStr {
				return false
			}
			if _, declared := po.Get(ns); !declared {
				return false
			}
		}
	}
	if hasAP {
		switch x := ap.(type) {
		case bool:
			// false is enforced for models only; a dict is read as Any.
			if !x && !hasProps {
				return false
			}
		case *Object:
			// Beside properties it is never applied: a model's value
			// holds its fields only.
			if single != "object" || (!hasProps && !w.schema(x, depth+1)) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// resolve returns the schema a "$ref" of the forms ParseTarget supports
// names, or nil.
func (w *structuralWalk) resolve(ref string) *Object {
	if ref == "#" {
		return w.root
	}
	for _, section := range []string{"$defs", "definitions"} {
		prefix := "#/" + section + "/"
		if len(ref) <= len(prefix) || ref[:len(prefix)] != prefix {
			continue
		}
		key := ref[len(prefix):]
		for _, c := range key {
			if c == '/' || c == '~' || c == '%' {
				return nil // escaped or nested pointers: leave them to the validator
			}
		}
		defs, _ := w.root.Get(section)
		do, _ := defs.(*Object)
		if do == nil {
			return nil
		}
		sub, _ := do.Get(key)
		so, _ := sub.(*Object)
		return so
	}
	return nil
}

// schemaTypes returns the names in s's "type" (none when absent), or
// false for a malformed or unknown one.
func schemaTypes(s *Object) ([]string, bool) {
	v, ok := s.Get("type")
	if !ok {
		return nil, true
	}
	var names []string
	switch x := v.(type) {
	case string:
		names = []string{x}
	case []any:
		for _, e := range x {
			es, ok := e.(string)
			if !ok {
				return nil, false
			}
			names = append(names, es)
		}
	default:
		return nil, false
	}
	for _, n := range names {
		switch n {
		case "string", "integer", "number", "boolean", "null", "array", "object":
		default:
			return nil, false
		}
	}
	return names, true
}

// valueHasType reports whether a decoded JSON value is of one of the
// JSON Schema types.
func valueHasType(v any, types []string) bool {
	for _, t := range types {
		switch x := v.(type) {
		case nil:
			if t == "null" {
				return true
			}
		case bool:
			if t == "boolean" {
				return true
			}
		case string:
			if t == "string" {
				return true
			}
		case json.Number:
			if t == "number" || t == "integer" && isIntegerText(string(x)) {
				return true
			}
		case []any:
			if t == "array" {
				return true
			}
		case *Object:
			if t == "object" {
				return true
			}
		}
	}
	return false
}

// valueDepth returns how deeply a decoded JSON value nests: 0 for a
// scalar or an empty container.
func valueDepth(v any) int {
	d := 0
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			d = max(d, 1+valueDepth(e))
		}
	case *Object:
		x.Range(func(_ string, e any) bool {
			d = max(d, 1+valueDepth(e))
			return true
		})
	}
	return d
}
