package wire_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/wire"
)

// schemaDir is where the JSON Schemas of the events are.
const schemaDir = "../../schemas"

// schemaSet holds the schema files by name, for resolving references.
type schemaSet map[string]map[string]any

func loadSchemas(t *testing.T) schemaSet {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(schemaDir, "*.json"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no schemas in %s: %v", schemaDir, err)
	}
	set := schemaSet{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		set[filepath.Base(n)] = doc
	}
	return set
}

// resolve follows $ref (to another file of the set or within file) until
// the schema has none, merging nothing: the referring schema's own keys
// other than $ref and description are kept where the target lacks them.
func (s schemaSet) resolve(t *testing.T, file string, sch map[string]any) (string, map[string]any) {
	for range 16 {
		ref, ok := sch["$ref"].(string)
		if !ok {
			return file, sch
		}
		target, ptr, _ := strings.Cut(ref, "#")
		if target != "" {
			file = target
		}
		doc, ok := s[file]
		if !ok {
			t.Fatalf("$ref %q: no schema file %s", ref, file)
		}
		var cur any = doc
		for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
			if tok == "" {
				continue
			}
			m, _ := cur.(map[string]any)
			cur = m[tok]
		}
		next, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("$ref %q does not resolve to a schema", ref)
		}
		merged := map[string]any{}
		for k, v := range next {
			merged[k] = v
		}
		for k, v := range sch {
			if _, has := merged[k]; !has && k != "$ref" {
				merged[k] = v
			}
		}
		sch = merged
	}
	t.Fatalf("$ref chain too long in %s", file)
	return "", nil
}

// jsonTypes returns the JSON types a schema allows, "null" left out; nil
// means any type (no type keyword, or several alternatives without one).
func (s schemaSet) jsonTypes(t *testing.T, file string, sch map[string]any) []string {
	file, sch = s.resolve(t, file, sch)
	var types []string
	switch v := sch["type"].(type) {
	case string:
		types = []string{v}
	case []any:
		for _, x := range v {
			types = append(types, x.(string))
		}
	default:
		if c, ok := sch["const"]; ok {
			types = []string{valueType(c)}
		}
		if e, ok := sch["enum"].([]any); ok {
			for _, x := range e {
				types = append(types, valueType(x))
			}
		}
		for _, k := range []string{"oneOf", "anyOf"} {
			alts, _ := sch[k].([]any)
			for _, a := range alts {
				at := s.jsonTypes(t, file, a.(map[string]any))
				if at == nil {
					return nil
				}
				types = append(types, at...)
			}
		}
	}
	types = slices.DeleteFunc(types, func(x string) bool { return x == "null" })
	sort.Strings(types)
	return slices.Compact(types)
}

func valueType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		return "number"
	case []any:
		return "array"
	}
	return "object"
}

var (
	rawType      = reflect.TypeFor[json.RawMessage]()
	timeType     = reflect.TypeFor[time.Time]()
	modelRefType = reflect.TypeFor[wire.ModelRef]()
)

// goTypes returns the JSON types a Go type encodes to; nil means any
// (interfaces, raw JSON, a model reference: a string or an object).
func goTypes(rt reflect.Type) []string {
	for rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	switch {
	case rt == rawType || rt == modelRefType || rt.Kind() == reflect.Interface:
		return nil
	case rt == timeType:
		return []string{"string"}
	}
	switch rt.Kind() {
	case reflect.String:
		return []string{"string"}
	case reflect.Bool:
		return []string{"boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return []string{"integer"}
	case reflect.Float32, reflect.Float64:
		return []string{"number"}
	case reflect.Slice, reflect.Array:
		return []string{"array"}
	}
	return []string{"object"}
}

// goField is one JSON field of a Go struct.
type goField struct {
	typ      reflect.Type
	required bool // no omitempty or omitzero
}

// goFields returns the JSON fields of struct type rt, embedded structs
// flattened as encoding/json does.
func goFields(rt reflect.Type) map[string]goField {
	out := map[string]goField{}
	for i := range rt.NumField() {
		f := rt.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			for k, v := range goFields(f.Type) {
				if _, shadowed := out[k]; !shadowed {
					out[k] = v
				}
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		optional := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
		out[name] = goField{typ: f.Type, required: !optional}
	}
	return out
}

// compareObject checks the fields of Go struct rt against object schema
// sch both ways: every property has a field and every field a property,
// of the same JSON type, required alike; it recurses into fields whose
// schema lists properties. Properties whose description starts "Removed:"
// are refused by the engine and must have no field.
func (s schemaSet) compareObject(t *testing.T, where, file string, sch map[string]any, rt reflect.Type) {
	t.Helper()
	file, sch = s.resolve(t, file, sch)
	props, _ := sch["properties"].(map[string]any)
	required := map[string]bool{}
	if req, ok := sch["required"].([]any); ok {
		for _, r := range req {
			required[r.(string)] = true
		}
	}
	fields := goFields(rt)
	for name, p := range props {
		ps := p.(map[string]any)
		f, ok := fields[name]
		if desc, _ := ps["description"].(string); strings.HasPrefix(desc, "Removed:") {
			if ok {
				t.Errorf("%s.%s: the schema refuses it (removed), but %s has a field for it", where, name, rt)
			}
			continue
		}
		if !ok {
			t.Errorf("%s.%s: in the schema, but %s has no field for it", where, name, rt)
			continue
		}
		s.compareField(t, where+"."+name, file, ps, f, required[name])
	}
	for name := range fields {
		if _, ok := props[name]; !ok {
			t.Errorf("%s.%s: %s has the field, but the schema has no such property", where, name, rt)
		}
	}
}

func (s schemaSet) compareField(t *testing.T, where, file string, ps map[string]any, f goField, required bool) {
	t.Helper()
	if f.required != required {
		t.Errorf("%s: required in the schema %v, in Go %v (omitempty/omitzero means optional)", where, required, f.required)
	}
	st := s.jsonTypes(t, file, ps)
	gt := goTypes(f.typ)
	if gt == nil {
		if len(st) == 1 {
			t.Errorf("%s: the schema says %s, the Go type %s takes any JSON", where, st[0], f.typ)
		}
		return
	}
	if !slices.Equal(st, gt) {
		t.Errorf("%s: JSON type %v in the schema, %v in Go (%s)", where, st, gt, f.typ)
		return
	}
	s.compareNested(t, where, file, ps, f.typ)
}

// compareNested recurses into object and array schemas that list
// properties, when the Go type is a struct (or a slice of them).
func (s schemaSet) compareNested(t *testing.T, where, file string, ps map[string]any, rt reflect.Type) {
	t.Helper()
	file, ps = s.resolve(t, file, ps)
	for rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	switch {
	case rt.Kind() == reflect.Struct && rt != timeType:
		if _, ok := ps["properties"]; ok {
			s.compareObject(t, where, file, ps, rt)
		}
	case rt.Kind() == reflect.Slice && rt != rawType:
		if items, ok := ps["items"].(map[string]any); ok {
			et := rt.Elem()
			if gt, st := goTypes(et), s.jsonTypes(t, file, items); gt != nil && !slices.Equal(st, gt) && st != nil {
				t.Errorf("%s[]: JSON type %v in the schema, %v in Go (%s)", where, st, gt, et)
				return
			}
			s.compareNested(t, where+"[]", file, items, et)
		}
	}
}

// TestVerbTypesMatchSchemas: the request and result type of every verb
// have exactly the fields of the verb's schemas (schemas/lionbus.V.request.json
// and .result.json): the same names, the same JSON types, required alike,
// both ways and in the nested objects the schemas describe. Adding a field
// to one and not the other fails here.
func TestVerbTypesMatchSchemas(t *testing.T) {
	set := loadSchemas(t)
	for _, v := range wire.Verbs() {
		for _, side := range []struct {
			kind string
			typ  any
		}{{"request", v.Request}, {"result", v.Result}} {
			file := "lionbus." + v.Verb + "." + side.kind + ".json"
			t.Run(v.Verb+"/"+side.kind, func(t *testing.T) {
				doc, ok := set[file]
				if !ok {
					t.Fatalf("no schema %s", file)
				}
				if typ, _ := doc["type"].(string); typ != "object" {
					t.Fatalf("%s: type %q, want object", file, typ)
				}
				s := set
				s.compareObject(t, v.Verb+"."+side.kind, file, doc, reflect.TypeOf(side.typ))
			})
		}
	}
}

// TestVerbsCoverSchemas: every verb schema file has its verb in
// wire.Verbs, and the reverse (op.request.json, the schema of the named
// operations op.NAME, excepted).
func TestVerbsCoverSchemas(t *testing.T) {
	set := loadSchemas(t)
	want := map[string]bool{}
	for name := range set {
		for _, suffix := range []string{".request.json", ".result.json"} {
			if verb, ok := strings.CutSuffix(name, suffix); ok {
				if verb, ok = strings.CutPrefix(verb, "lionbus."); ok && verb != "tool.approval" {
					want[verb] = true
				}
			}
		}
	}
	got := map[string]bool{}
	for _, v := range wire.Verbs() {
		if got[v.Verb] {
			t.Errorf("verb %s listed twice", v.Verb)
		}
		got[v.Verb] = true
		if !want[v.Verb] {
			t.Errorf("wire.Verbs lists %s, which has no schemas", v.Verb)
		}
	}
	for verb := range want {
		if !got[verb] {
			t.Errorf("schemas/lionbus.%s.request.json exists, but wire.Verbs has no %s", verb, verb)
		}
	}
}

// The data of the approval events is what the wire types encode.
func TestApprovalTypesMatchSchemas(t *testing.T) {
	set := loadSchemas(t)
	for _, tt := range []struct {
		file string
		typ  any
	}{
		{"lionbus.approval.pending.json", wire.Approval{}},
		{"lionbus.approval.answer.json", wire.ApprovalAnswer{}},
		{"lionbus.approval.outcome.json", wire.ApprovalOutcome{}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			doc, ok := set[tt.file]
			if !ok {
				t.Fatalf("no schema %s", tt.file)
			}
			set.compareObject(t, tt.file, tt.file, doc, reflect.TypeOf(tt.typ))
		})
	}
}
