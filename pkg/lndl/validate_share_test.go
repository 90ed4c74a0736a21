package lndl

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// shareSchema is a target whose fields have no defaults except "note", so
// that an input can hold exactly the fields a result keeps.
const shareSchema = `{
 "$defs": {
  "Item": {"properties": {
     "name": {"type": "string"},
     "level": {"enum": [1, 2, 3], "title": "Level", "type": "integer"},
     "sev": {"enum": ["low", "high"], "title": "Sev", "type": "string"},
     "score": {"type": "number"}},
   "required": ["name", "level", "sev", "score"], "title": "Item", "type": "object"}
 },
 "properties": {
  "s": {"type": "string"},
  "n": {"type": "number"},
  "ok": {"type": "boolean"},
  "tags": {"items": {"type": "string"}, "type": "array"},
  "m": {"additionalProperties": {"type": "number"}, "type": "object"},
  "items": {"items": {"$ref": "#/$defs/Item"}, "type": "array"},
  "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
  "any": {},
  "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}
 },
 "required": ["s", "n", "ok", "tags", "m", "items", "either", "any"],
 "title": "Share", "type": "object"
}`

// shareValid holds every field of shareSchema, each already as Validate
// returns it, with the keys in field order.
const shareValid = `{"s": "a", "n": 1.5, "ok": true, "tags": ["x", "y"], "m": {"p": 1.0, "q": 2.5},
 "items": [{"name": "a", "level": 1, "sev": "low", "score": 0.5}, {"name": "b", "level": 2, "sev": "high", "score": 1.0}],
 "either": 3, "any": {"k": [1, "2"]}, "note": null}`

// valueAt follows a loc (field names and list indexes) into v.
func valueAt(v any, loc ...any) any {
	for _, p := range loc {
		switch x := v.(type) {
		case *Object:
			v, _ = x.Get(p.(string))
		case []any:
			v = x[p.(int)]
		default:
			return nil
		}
	}
	return v
}

// sameRef reports whether a and b are the same *Object, or non-empty
// lists backed by the same array.
func sameRef(a, b any) bool {
	switch x := a.(type) {
	case *Object:
		y, ok := b.(*Object)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		return ok && len(x) > 0 && len(x) == len(y) && &x[0] == &y[0]
	}
	return false
}

// refsOf lists every *Object and list in v by location, to check
// afterwards that none of them was replaced or modified.
func refsOf(v any, loc string, out map[string]any) {
	out[loc] = v
	switch x := v.(type) {
	case *Object:
		x.Range(func(k string, e any) bool {
			refsOf(e, loc+"."+k, out)
			return true
		})
	case []any:
		for i, e := range x {
			refsOf(e, fmt.Sprintf("%s[%d]", loc, i), out)
		}
	}
}

func TestValidate_sharesUnchangedParts(t *testing.T) {
	tg := mustTarget(t, shareSchema)
	tests := []struct {
		name string
		in   string
		want string // the result; "" when it is the input itself
		// shared are the locations (from the root) where the result holds
		// the input's own object or list; fresh those where it must not.
		shared, fresh [][]any
	}{
		{name: "nothing to change", in: shareValid,
			shared: [][]any{{}, {"tags"}, {"m"}, {"items"}, {"items", 0}, {"items", 1}, {"any"}}},
		{name: "one number deep inside",
			in: `{"s": "a", "n": 1.5, "ok": true, "tags": ["x", "y"], "m": {"p": 1.0, "q": 2.5},
			 "items": [{"name": "a", "level": 1, "sev": "low", "score": 0.5}, {"name": "b", "level": 2, "sev": "high", "score": "1"}],
			 "either": 3, "any": {"k": [1, "2"]}, "note": null}`,
			want: `{"s": "a", "n": 1.5, "ok": true, "tags": ["x", "y"], "m": {"p": 1.0, "q": 2.5},
			 "items": [{"name": "a", "level": 1, "sev": "low", "score": 0.5}, {"name": "b", "level": 2, "sev": "high", "score": 1.0}],
			 "either": 3, "any": {"k": [1, "2"]}, "note": null}`,
			shared: [][]any{{"tags"}, {"m"}, {"items", 0}, {"any"}},
			fresh:  [][]any{{}, {"items"}, {"items", 1}}},
		{name: "first list item",
			in:     `{"s": "a", "n": 1.5, "ok": true, "tags": ["x", "y"], "m": {}, "items": [{"name": "a", "level": "3", "sev": "low", "score": 0.5}, {"name": "b", "level": 2, "sev": "high", "score": 1.0}], "either": 3, "any": null, "note": null}`,
			want:   `{"s": "a", "n": 1.5, "ok": true, "tags": ["x", "y"], "m": {}, "items": [{"name": "a", "level": 3, "sev": "low", "score": 0.5}, {"name": "b", "level": 2, "sev": "high", "score": 1.0}], "either": 3, "any": null, "note": null}`,
			shared: [][]any{{"tags"}, {"m"}, {"items", 1}},
			fresh:  [][]any{{}, {"items"}, {"items", 0}}},
		{name: "dict value in the middle",
			in:     `{"s": "a", "n": 1.5, "ok": true, "tags": ["x"], "m": {"p": 1.0, "q": "2", "r": 3.5}, "items": [], "either": "e", "any": [1], "note": "n"}`,
			want:   `{"s": "a", "n": 1.5, "ok": true, "tags": ["x"], "m": {"p": 1.0, "q": 2.0, "r": 3.5}, "items": [], "either": "e", "any": [1], "note": "n"}`,
			shared: [][]any{{"tags"}, {"any"}},
			fresh:  [][]any{{}, {"m"}}},
		{name: "number rewritten as its repr",
			in:     `{"s": "a", "n": 15e-1, "ok": true, "tags": ["x"], "m": {}, "items": [], "either": 3, "any": null, "note": null}`,
			want:   `{"s": "a", "n": 1.5, "ok": true, "tags": ["x"], "m": {}, "items": [], "either": 3, "any": null, "note": null}`,
			shared: [][]any{{"tags"}, {"m"}},
			fresh:  [][]any{{}}},
		{name: "union variant coerced",
			in:     `{"s": "a", "n": 1.5, "ok": true, "tags": ["x"], "m": {}, "items": [], "either": 3.0, "any": null, "note": null}`,
			want:   `{"s": "a", "n": 1.5, "ok": true, "tags": ["x"], "m": {}, "items": [], "either": 3, "any": null, "note": null}`,
			shared: [][]any{{"tags"}, {"m"}},
			fresh:  [][]any{{}}},
		{name: "default filled",
			in:     `{"s": "a", "n": 1.5, "ok": true, "tags": ["x"], "m": {"p": 1.0}, "items": [], "either": 3, "any": {"k": 1}}`,
			want:   `{"s": "a", "n": 1.5, "ok": true, "tags": ["x"], "m": {"p": 1.0}, "items": [], "either": 3, "any": {"k": 1}, "note": null}`,
			shared: [][]any{{"tags"}, {"m"}, {"any"}},
			fresh:  [][]any{{}}},
		{name: "extra key dropped",
			in:     `{"s": "a", "n": 1.5, "ok": true, "tags": ["x"], "m": {}, "items": [], "either": 3, "any": null, "note": null, "extra": [1]}`,
			want:   `{"s": "a", "n": 1.5, "ok": true, "tags": ["x"], "m": {}, "items": [], "either": 3, "any": null, "note": null}`,
			shared: [][]any{{"tags"}, {"m"}},
			fresh:  [][]any{{}}},
		{name: "extra key between fields",
			in:     `{"s": "a", "n": 1.5, "extra": 1, "ok": true, "tags": ["x"], "m": {}, "items": [], "either": 3, "any": null, "note": null}`,
			want:   `{"s": "a", "n": 1.5, "ok": true, "tags": ["x"], "m": {}, "items": [], "either": 3, "any": null, "note": null}`,
			shared: [][]any{{"tags"}, {"m"}},
			fresh:  [][]any{{}}},
		{name: "keys out of order",
			in:     `{"n": 1.5, "s": "a", "ok": true, "tags": ["x"], "m": {}, "items": [{"sev": "low", "name": "a", "level": 1, "score": 0.5}], "either": 3, "any": null, "note": null}`,
			want:   `{"s": "a", "n": 1.5, "ok": true, "tags": ["x"], "m": {}, "items": [{"name": "a", "level": 1, "sev": "low", "score": 0.5}], "either": 3, "any": null, "note": null}`,
			shared: [][]any{{"tags"}, {"m"}},
			fresh:  [][]any{{}, {"items"}, {"items", 0}}},
		{name: "enum member written differently",
			in:     `{"s": "a", "n": 1.5, "ok": true, "tags": ["x"], "m": {}, "items": [{"name": "a", "level": 2.0, "sev": "low", "score": 0.5}], "either": 3, "any": null, "note": null}`,
			want:   `{"s": "a", "n": 1.5, "ok": true, "tags": ["x"], "m": {}, "items": [{"name": "a", "level": 2, "sev": "low", "score": 0.5}], "either": 3, "any": null, "note": null}`,
			shared: [][]any{{"tags"}, {"m"}},
			fresh:  [][]any{{}, {"items"}, {"items", 0}}},
		{name: "bool from string last",
			in:     `{"s": "a", "n": 1.5, "ok": "yes", "tags": ["x"], "m": {}, "items": [], "either": 3, "any": null, "note": null}`,
			want:   `{"s": "a", "n": 1.5, "ok": true, "tags": ["x"], "m": {}, "items": [], "either": 3, "any": null, "note": null}`,
			shared: [][]any{{"tags"}, {"m"}},
			fresh:  [][]any{{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := validJSON(t, tt.in)
			before := compactJSON(in)
			refs := map[string]any{}
			refsOf(in, "$", refs)

			got, err := tg.Validate(in)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == "" {
				want = tt.in
				if got.(*Object) != in.(*Object) {
					t.Errorf("a value needing no change was copied")
				}
			}
			if compactJSON(got) != compactJSON(validJSON(t, want)) {
				t.Errorf("Validate = %s\nwant       %s", compactJSON(got), compactJSON(validJSON(t, want)))
			}
			// The result equals that of a validation that cannot share.
			if forced, err := tg.validate(copyJSON(in), true); err != nil || compactJSON(forced) != compactJSON(got) {
				t.Errorf("validating a copy with the schema = %s, %v", compactJSON(forced), err)
			}
			for _, loc := range tt.shared {
				if !sameRef(valueAt(got, loc...), valueAt(in, loc...)) {
					t.Errorf("%v: not shared with the input", loc)
				}
			}
			for _, loc := range tt.fresh {
				if g := valueAt(got, loc...); g == nil || sameRef(g, valueAt(in, loc...)) {
					t.Errorf("%v: shared with the input, but it changed", loc)
				}
			}
			if after := compactJSON(in); after != before {
				t.Errorf("input modified:\n%s\nwas %s", after, before)
			}
			after := map[string]any{}
			refsOf(in, "$", after)
			for loc, r := range refs {
				if (isContainer(r) || isContainer(after[loc])) && !sameRef(r, after[loc]) && !isEmptyList(r) {
					t.Errorf("%s: replaced in the input", loc)
				}
			}
			// Validating the result again shares all of it.
			again, err := tg.Validate(got)
			if err != nil || got.(*Object) != again.(*Object) {
				t.Errorf("validating the result again copied it (%v)", err)
			}
		})
	}
}

func isContainer(v any) bool {
	switch v.(type) {
	case *Object, []any:
		return true
	}
	return false
}

func isEmptyList(v any) bool {
	l, ok := v.([]any)
	return ok && len(l) == 0
}

// TestValidate_failureLeavesInput checks that a failing validation
// leaves its input as it was.
func TestValidate_failureLeavesInput(t *testing.T) {
	tg := mustTarget(t, shareSchema)
	for _, in := range []string{
		`{"s": "a", "n": "x", "ok": true, "tags": ["x"], "m": {"p": "1"}, "items": [{"name": "a", "level": "9", "sev": "low", "score": "1"}], "either": [], "any": null}`,
		`{"s": 1, "n": "2", "ok": "yes", "tags": [1, "2"], "m": {"p": "no"}, "items": [{"sev": "mid"}], "either": 3, "any": null}`,
	} {
		v := validJSON(t, in)
		before := compactJSON(v)
		if _, err := tg.Validate(v); err == nil {
			t.Fatalf("%s validated", in)
		}
		if after := compactJSON(v); after != before {
			t.Errorf("input modified:\n%s\nwas %s", after, before)
		}
	}
}

// TestValidate_handBuiltModel validates against a model built without
// ParseTarget, whose field names need not be distinct: a repeated field
// is validated again and its last value kept, as Object.Set does.
func TestValidate_handBuiltModel(t *testing.T) {
	field := func(name string, k Kind) *FieldSpec {
		return &FieldSpec{Name: name, Type: &Type{Kind: k}, Required: true}
	}
	tg := &Target{Type: &Type{Kind: KindModel, Name: "M", Model: &Model{Name: "M", Fields: []*FieldSpec{
		field("a", KindInt), field("b", KindString), field("a", KindFloat)}}}}
	tests := []struct{ in, want string }{
		{`{"a": "1", "b": "x"}`, `{"a": 1.0, "b": "x"}`},
		{`{"a": 2, "b": "x"}`, `{"a": 2.0, "b": "x"}`},
		{`{"b": "x", "a": 3}`, `{"a": 3.0, "b": "x"}`},
		{`{"a": 2.5, "b": "x"}`, ``},
	}
	for _, tt := range tests {
		got, err := tg.Validate(validJSON(t, tt.in))
		if tt.want == "" {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Issues) != 1 || ve.Issues[0].Type != "int_from_float" {
				t.Errorf("%s: Validate = %s, %v; want an int_from_float failure", tt.in, compactJSON(got), err)
			}
			continue
		}
		if err != nil || compactJSON(got) != compactJSON(validJSON(t, tt.want)) {
			t.Errorf("%s: Validate = %s, %v; want %s", tt.in, compactJSON(got), err, tt.want)
		}
	}
}

// TestValidate_listsOfModels validates lists and dicts of small models,
// some items changing and some not, with lists of models inside items:
// every changed item gets an object of its own, whatever order the
// changes come in.
func TestValidate_listsOfModels(t *testing.T) {
	tg := mustTarget(t, `{"$defs": {
	  "Leaf": {"properties": {"b": {"type": "number"}}, "required": ["b"], "title": "Leaf", "type": "object"},
	  "Inner": {"properties": {"a": {"type": "number"}, "subs": {"items": {"$ref": "#/$defs/Leaf"}, "type": "array"}},
	   "required": ["a", "subs"], "title": "Inner", "type": "object"}},
	 "properties": {
	  "items": {"items": {"$ref": "#/$defs/Inner"}, "type": "array"},
	  "byName": {"additionalProperties": {"$ref": "#/$defs/Inner"}, "type": "object"}},
	 "required": ["items", "byName"], "title": "Outer", "type": "object"}`)
	// inner writes an Inner item; the numbers are strings (to be
	// changed) where change says so.
	inner := func(i int, change bool) (in, want string) {
		num := func(x int) (string, string) {
			if change {
				return fmt.Sprintf(`"%d.5"`, x), fmt.Sprintf(`%d.5`, x)
			}
			return fmt.Sprintf(`%d.5`, x), fmt.Sprintf(`%d.5`, x)
		}
		a, wa := num(i)
		b0, wb0 := num(100 * i)
		b1, wb1 := num(100*i + 1)
		return fmt.Sprintf(`{"a": %s, "subs": [{"b": %s}, {"b": %s}]}`, a, b0, b1),
			fmt.Sprintf(`{"a": %s, "subs": [{"b": %s}, {"b": %s}]}`, wa, wb0, wb1)
	}
	for _, pattern := range []string{"c", "u", "cc", "uc", "cu", "cucuuccccccccccccccu", "uuuuuuuuuuuuuuuuuuuc", "cccccccccccccccccccc"} {
		var in, want, dictIn, dictWant []string
		for i, p := range pattern {
			it, wt := inner(i, p == 'c')
			in, want = append(in, it), append(want, wt)
			dictIn = append(dictIn, fmt.Sprintf(`"k%d": %s`, i, it))
			dictWant = append(dictWant, fmt.Sprintf(`"k%d": %s`, i, wt))
		}
		input := validJSON(t, fmt.Sprintf(`{"items": [%s], "byName": {%s}}`, strings.Join(in, ", "), strings.Join(dictIn, ", ")))
		before := compactJSON(input)
		got, err := tg.Validate(input)
		if err != nil {
			t.Fatalf("%s: %v", pattern, err)
		}
		wantJSON := compactJSON(validJSON(t, fmt.Sprintf(`{"items": [%s], "byName": {%s}}`, strings.Join(want, ", "), strings.Join(dictWant, ", "))))
		if g := compactJSON(got); g != wantJSON {
			t.Errorf("%s: Validate = %s\nwant       %s", pattern, g, wantJSON)
		}
		if after := compactJSON(input); after != before {
			t.Errorf("%s: input modified", pattern)
		}
		seen := map[*Object]string{}
		all := map[string]any{}
		refsOf(got, "$", all)
		for loc, r := range all {
			if o, ok := r.(*Object); ok {
				if other, dup := seen[o]; dup {
					t.Errorf("%s: %s and %s are the same object", pattern, loc, other)
				}
				seen[o] = loc
			}
		}
	}
}

// TestIsNormalized checks which values Validate walks without
// normalizing them first, at the depth bound too.
func TestIsNormalized(t *testing.T) {
	nest := func(levels int, leaf any) any {
		v := leaf
		for range levels {
			v = []any{v}
		}
		return v
	}
	obj := NewObject(1)
	obj.Set("k", nest(MaxJSONDepth-1, "s"))
	deepObj := NewObject(1)
	deepObj.Set("k", nest(MaxJSONDepth, "s"))
	tests := []struct {
		name string
		v    any
		want bool
	}{
		{"string at the bound", nest(MaxJSONDepth, "s"), true},
		{"string past the bound", nest(MaxJSONDepth+1, "s"), false},
		{"number at the bound", nest(MaxJSONDepth, json.Number("1")), true},
		{"number past the bound", nest(MaxJSONDepth+1, json.Number("1")), false},
		{"list at the bound", nest(MaxJSONDepth, []any{}), true},
		{"list past the bound", nest(MaxJSONDepth+1, []any{}), false},
		{"object value at the bound", obj, true},
		{"object value past the bound", deepObj, false},
		{"float64 item", []any{"s", 1.5}, false},
		{"map item", []any{"s", map[string]any{}}, false},
		{"typed list", []string{"s"}, false},
		{"object of scalars", validJSON(t, `{"a": "s", "b": 1, "c": true, "d": null, "e": [{"f": "g"}]}`), true},
	}
	for _, tt := range tests {
		if got := isNormalized(tt.v, 0); got != tt.want {
			t.Errorf("%s: isNormalized = %v, want %v", tt.name, got, tt.want)
		}
	}
}
