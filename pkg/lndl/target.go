package lndl

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// Target is the structured result a round assembles: a JSON Schema for an
// object, in the form pydantic 2 writes (`model_json_schema()`), parsed by
// [ParseTarget].
//
// The type model is deliberately small. Every property is a [FieldSpec] of the
// root [Model], in declaration order; its [Type] is one of the kinds below,
// with an `anyOf [X, {"type": "null"}]` wrapper removed and recorded as
// Type.Nullable. Nested models are shared: a `$ref` to the same definition
// yields the same *Model, so a recursive model is a cyclic graph — walk it
// only as deep as the value being checked.
type Target struct {
	// Model is the root model: its name (the schema's title) and fields.
	Model *Model
	// Type is the root as a Type (Kind == KindModel, Model == Model).
	Type *Type
	// Schema is the raw schema text, for validation.
	Schema []byte
	// Root is the decoded schema (objects as *Object, numbers as
	// json.Number).
	Root any

	// parsed is set by ParseTarget: Type was read from Root.
	parsed bool
	// compiled caches the compiled schema (see Target.compiledSchema).
	compiled atomic.Pointer[compiledTarget]
}

// Kind is the kind of a [Type].
type Kind int

// Type kinds.
const (
	// KindAny is a property with no type: anything goes.
	KindAny Kind = iota
	// KindString is "type": "string".
	KindString
	// KindInt is "type": "integer".
	KindInt
	// KindFloat is "type": "number".
	KindFloat
	// KindBool is "type": "boolean".
	KindBool
	// KindNull is "type": "null" alone.
	KindNull
	// KindEnum is an "enum" (or "const"): Enum holds the values, Name the
	// $defs name when the enum was referenced, Base the kind of its "type".
	KindEnum
	// KindList is "type": "array": Elem is the "items" type (KindAny when
	// absent or a tuple).
	KindList
	// KindDict is an object without "properties": Elem is the
	// "additionalProperties" type (KindAny when absent or true).
	KindDict
	// KindModel is an object with "properties": Model holds its fields.
	KindModel
	// KindUnion is an anyOf/oneOf of two or more non-null types: Variants
	// holds them.
	KindUnion
)

var kindNames = [...]string{"any", "string", "integer", "number", "boolean", "null", "enum", "list", "dict", "model", "union"}

// String returns a short lower-case name of the kind.
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Type is the type of a field, a list element or a dict value.
type Type struct {
	Kind Kind
	// Name is the model's or enum's name: the $defs key it was referenced
	// by, else its title.
	Name string
	// Nullable is set when an `anyOf [X, null]` wrapper (or a "type" list
	// holding "null") was removed.
	Nullable bool
	// Elem is the element type of a KindList and the value type of a
	// KindDict; never nil for those kinds.
	Elem *Type
	// Model holds the fields of a KindModel.
	Model *Model
	// Enum holds the values of a KindEnum.
	Enum []any
	// Base is the kind of an enum's "type" (KindAny when absent).
	Base Kind
	// Variants holds the non-null members of a KindUnion.
	Variants []*Type
	// Schema is the (sub)schema the type was read from, as decoded.
	Schema *Object
}

// Model is an object type with named fields.
type Model struct {
	// Name is the model's name: its $defs key, else its title.
	Name string
	// Fields are the properties in declaration order.
	Fields []*FieldSpec
	index  map[string]*FieldSpec
}

// Field returns the field called name, or nil.
func (m *Model) Field(name string) *FieldSpec {
	return m.fieldNear(name, -1)
}

// fieldNear is Field, looking at Fields[hint] first: keys often come in
// the model's order.
func (m *Model) fieldNear(name string, hint int) *FieldSpec {
	if m == nil {
		return nil
	}
	if hint >= 0 && hint < len(m.Fields) && m.Fields[hint].Name == name {
		return m.Fields[hint]
	}
	if len(m.Fields) <= smallModelFields || m.index == nil {
		for _, f := range m.Fields {
			if sameName(f.Name, name) {
				return f
			}
		}
		return nil
	}
	return m.index[name]
}

// smallModelFields is the number of fields up to which Model.Field scans
// the fields instead of using the index (a Model not made by ParseTarget
// has no index and is always scanned).
const smallModelFields = 16

// FieldSpec is one property of a model (a "spec" of the Specs line).
type FieldSpec struct {
	Name string
	Type *Type
	// Required is set when the model's "required" lists the field (a
	// nullable field can be required).
	Required bool
	// HasDefault is set when the property has a "default"; Default holds
	// it (nil for a null default).
	HasDefault bool
	Default    any
	pos        int // position in the model's Fields
}

// Bounds of [ParseTarget].
const (
	// MaxSchemaSize is the largest schema text accepted, in bytes.
	MaxSchemaSize = 1 << 20
	// MaxTypeDepth bounds how deeply types may nest (lists in lists,
	// models in models, chains of $ref), counting each step once.
	MaxTypeDepth = 64
)

// ErrInvalidTarget is returned, wrapped, by [ParseTarget] for a schema it
// cannot use.
var ErrInvalidTarget = errors.New("lndl: invalid target schema")

func targetErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidTarget, fmt.Sprintf(format, args...))
}

// ParseTarget parses a JSON Schema target as pydantic 2 writes it. The
// root must be an object schema with "properties" (possibly empty), or a
// "$ref" to one. Supported: "$defs" (and "definitions") with "$ref"s of
// the form "#/$defs/Name" or "#", `anyOf [X, null]`, "type" lists, arrays
// via "items", dicts via "additionalProperties", "enum"/"const",
// "allOf" with one member, "default" and "required"; a property with no
// type is Any. Errors wrap [ErrInvalidTarget]. Schemas larger than
// [MaxSchemaSize] or nesting types deeper than [MaxTypeDepth] are
// rejected; a recursive model is allowed and parsed once.
func ParseTarget(schema []byte) (*Target, error) {
	if len(schema) > MaxSchemaSize {
		return nil, targetErr("schema is %d bytes, more than the limit of %d", len(schema), MaxSchemaSize)
	}
	root, err := DecodeJSON(schema)
	if err != nil {
		return nil, targetErr("%v", err)
	}
	obj, ok := root.(*Object)
	if !ok {
		return nil, targetErr("schema is not a JSON object")
	}
	p := &targetParser{root: obj, defs: map[string]*Type{}, busy: map[string]bool{}}
	t, err := p.parseType(obj, 0, "")
	if err != nil {
		return nil, err
	}
	if t.Kind != KindModel {
		return nil, targetErr("root schema is not an object with properties (got %s)", t.Kind)
	}
	raw := make([]byte, len(schema))
	copy(raw, schema)
	root0 := *t
	root0.Nullable = false
	return &Target{Model: t.Model, Type: &root0, Schema: raw, Root: obj, parsed: true}, nil
}

// Field returns the target field called name, or nil.
func (t *Target) Field(name string) *FieldSpec {
	if t == nil {
		return nil
	}
	return t.Model.Field(name)
}

type targetParser struct {
	root *Object
	defs map[string]*Type // resolved $ref targets
	busy map[string]bool  // $refs being resolved (cycle detection)
}

func (p *targetParser) parseType(s *Object, depth int, refName string) (*Type, error) {
	if depth > MaxTypeDepth {
		return nil, targetErr("types nest deeper than %d", MaxTypeDepth)
	}
	if ref, ok := s.Get("$ref"); ok {
		rs, ok := ref.(string)
		if !ok {
			return nil, targetErr("$ref is not a string")
		}
		return p.resolveRef(rs, depth)
	}
	if v, ok := s.Get("allOf"); ok {
		arr, ok := v.([]any)
		if !ok || len(arr) != 1 {
			return nil, targetErr("allOf with %d members is not supported", len(arr))
		}
		sub, ok := arr[0].(*Object)
		if !ok {
			return nil, targetErr("allOf member is not an object")
		}
		t, err := p.parseType(sub, depth+1, refName)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		v, ok := s.Get(key)
		if !ok {
			continue
		}
		arr, ok := v.([]any)
		if !ok || len(arr) == 0 {
			return nil, targetErr("%s is not a non-empty array", key)
		}
		var variants []*Type
		nullable := false
		for _, m := range arr {
			sub, ok := m.(*Object)
			if !ok {
				return nil, targetErr("%s member is not an object", key)
			}
			t, err := p.parseType(sub, depth+1, "")
			if err != nil {
				return nil, err
			}
			if t.Kind == KindNull {
				nullable = true
				continue
			}
			variants = append(variants, t)
		}
		switch len(variants) {
		case 0:
			return &Type{Kind: KindNull, Schema: s}, nil
		case 1:
			if !nullable {
				return variants[0], nil
			}
			c := *variants[0]
			c.Nullable = true
			return &c, nil
		}
		return &Type{Kind: KindUnion, Variants: variants, Nullable: nullable, Schema: s}, nil
	}

	typ, nullable, err := schemaType(s)
	if err != nil {
		return nil, err
	}
	name := refName
	if name == "" {
		if title, ok := s.Get("title"); ok {
			name, _ = title.(string)
		}
	}

	if v, ok := s.Get("enum"); ok {
		arr, ok := v.([]any)
		if !ok {
			return nil, targetErr("enum is not an array")
		}
		t := &Type{Kind: KindEnum, Enum: arr, Nullable: nullable, Schema: s, Base: kindOf(typ)}
		if refName != "" {
			t.Name = refName
		}
		return t, nil
	}
	if v, ok := s.Get("const"); ok {
		return &Type{Kind: KindEnum, Enum: []any{v}, Nullable: nullable, Schema: s, Base: kindOf(typ), Name: refName}, nil
	}

	_, hasProps := s.Get("properties")
	switch {
	case typ == "object" || (typ == "" && hasProps):
		if hasProps {
			t := &Type{Kind: KindModel, Name: name, Nullable: nullable, Schema: s, Model: &Model{Name: name}}
			if err := p.fillModel(t.Model, s, depth); err != nil {
				return nil, err
			}
			return t, nil
		}
		elem := &Type{Kind: KindAny}
		if ap, ok := s.Get("additionalProperties"); ok {
			if sub, ok := ap.(*Object); ok {
				e, err := p.parseType(sub, depth+1, "")
				if err != nil {
					return nil, err
				}
				elem = e
			}
		}
		return &Type{Kind: KindDict, Elem: elem, Nullable: nullable, Schema: s}, nil
	case typ == "array":
		elem := &Type{Kind: KindAny}
		if it, ok := s.Get("items"); ok {
			if sub, ok := it.(*Object); ok {
				e, err := p.parseType(sub, depth+1, "")
				if err != nil {
					return nil, err
				}
				elem = e
			}
		}
		return &Type{Kind: KindList, Elem: elem, Nullable: nullable, Schema: s}, nil
	}
	return &Type{Kind: kindOf(typ), Nullable: nullable, Schema: s}, nil
}

func kindOf(typ string) Kind {
	switch typ {
	case "string":
		return KindString
	case "integer":
		return KindInt
	case "number":
		return KindFloat
	case "boolean":
		return KindBool
	case "null":
		return KindNull
	case "array":
		return KindList
	case "object":
		return KindDict
	}
	return KindAny
}

// schemaType returns the schema's "type" with "null" removed from a type
// list, and whether it was there. Several non-null types give "".
func schemaType(s *Object) (string, bool, error) {
	v, ok := s.Get("type")
	if !ok {
		return "", false, nil
	}
	switch x := v.(type) {
	case string:
		return x, false, nil
	case []any:
		var rest []string
		nullable := false
		for _, e := range x {
			es, ok := e.(string)
			if !ok {
				return "", false, targetErr("type list holds a non-string")
			}
			if es == "null" {
				nullable = true
				continue
			}
			rest = append(rest, es)
		}
		switch len(rest) {
		case 0:
			return "null", false, nil
		case 1:
			return rest[0], nullable, nil
		}
		return "", nullable, nil
	}
	return "", false, targetErr("type is neither a string nor a list")
}

func (p *targetParser) fillModel(m *Model, s *Object, depth int) error {
	props, _ := s.Get("properties")
	po, ok := props.(*Object)
	if !ok {
		return targetErr("properties of %q is not an object", m.Name)
	}
	required := map[string]bool{}
	if rv, ok := s.Get("required"); ok {
		arr, ok := rv.([]any)
		if !ok {
			return targetErr("required of %q is not an array", m.Name)
		}
		for _, r := range arr {
			if rs, ok := r.(string); ok {
				required[rs] = true
			}
		}
	}
	m.index = make(map[string]*FieldSpec, po.Len())
	var ferr error
	po.Range(func(name string, v any) bool {
		sub, ok := v.(*Object)
		if !ok {
			if b, isBool := v.(bool); isBool && b {
				sub = NewObject(0)
			} else {
				ferr = targetErr("property %q of %q is not a schema object", name, m.Name)
				return false
			}
		}
		t, err := p.parseType(sub, depth+1, "")
		if err != nil {
			ferr = err
			return false
		}
		f := &FieldSpec{Name: name, Type: t, Required: required[name], pos: len(m.Fields)}
		if d, ok := sub.Get("default"); ok {
			f.HasDefault = true
			f.Default = d
		}
		m.Fields = append(m.Fields, f)
		m.index[name] = f
		return true
	})
	return ferr
}

func (p *targetParser) resolveRef(ref string, depth int) (*Type, error) {
	if t, ok := p.defs[ref]; ok {
		return t, nil
	}
	if p.busy[ref] {
		return nil, targetErr("$ref %q refers to itself without a model in between", ref)
	}
	var sub *Object
	name := ""
	switch {
	case ref == "#":
		sub = p.root
	case strings.HasPrefix(ref, "#/$defs/"), strings.HasPrefix(ref, "#/definitions/"):
		i := strings.Index(ref[2:], "/") + 2
		section, key := ref[2:i], ref[i+1:]
		key = strings.ReplaceAll(strings.ReplaceAll(key, "~1", "/"), "~0", "~")
		name = key
		defs, _ := p.root.Get(section)
		do, ok := defs.(*Object)
		if !ok {
			return nil, targetErr("$ref %q: no %s in the schema", ref, section)
		}
		v, ok := do.Get(key)
		if !ok {
			return nil, targetErr("$ref %q: no such definition", ref)
		}
		if sub, ok = v.(*Object); !ok {
			return nil, targetErr("$ref %q: definition is not an object", ref)
		}
	default:
		return nil, targetErr("unsupported $ref %q (only #/$defs/Name and #)", ref)
	}
	p.busy[ref] = true
	defer delete(p.busy, ref)
	t, err := p.parseTypeRef(sub, depth+1, ref, name)
	if err != nil {
		return nil, err
	}
	p.defs[ref] = t
	return t, nil
}

// parseTypeRef parses a referenced definition; a model registers itself
// under ref before its fields are read.
func (p *targetParser) parseTypeRef(s *Object, depth int, ref, name string) (*Type, error) {
	if name == "" {
		if title, ok := s.Get("title"); ok {
			name, _ = title.(string)
		}
	}
	_, hasProps := s.Get("properties")
	typ, nullable, err := schemaType(s)
	if err != nil {
		return nil, err
	}
	if hasProps && (typ == "object" || typ == "") {
		if _, isRef := s.Get("$ref"); !isRef {
			t := &Type{Kind: KindModel, Name: name, Nullable: nullable, Schema: s, Model: &Model{Name: name}}
			p.defs[ref] = t
			if err := p.fillModel(t.Model, s, depth); err != nil {
				return nil, err
			}
			return t, nil
		}
	}
	return p.parseType(s, depth, name)
}

// compile-time check that *Object marshals as JSON.
var _ json.Marshaler = (*Object)(nil)

// fieldPos returns the position of spec in m.Fields, or -1.
func (m *Model) fieldPos(spec *FieldSpec) int {
	if spec.pos < len(m.Fields) && m.Fields[spec.pos] == spec {
		return spec.pos
	}
	for i, f := range m.Fields {
		if f == spec {
			return i
		}
	}
	return -1
}
