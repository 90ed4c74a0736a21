package lndl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// ErrValidation is matched (errors.Is) by the *[ValidationError] that
// [Target.Validate] returns.
var ErrValidation = errors.New("lndl: value does not validate against the target")

// ValidationIssue is one failure found by [Target.Validate].
type ValidationIssue struct {
	// Loc is the path of the failing value from the root object: field
	// names and dict keys (string) and list indexes (int).
	Loc []any `json:"loc"`
	// Type is an error code named like pydantic's: string_type,
	// int_parsing, int_from_float, float_parsing, bool_parsing, missing,
	// enum, greater_than_equal, string_too_short, ...
	Type string `json:"type"`
	// Msg says what is wrong, for people.
	Msg string `json:"msg"`
}

// ValidationError lists the failures of [Target.Validate], in the order
// they were found (fields in declaration order, then schema constraints).
// errors.Is matches both [ErrValidation] and [ErrLNDL].
type ValidationError struct {
	Issues []ValidationIssue
}

// Error lists the issues, each as `loc: message [type]`.
func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d validation error(s) against the target", len(e.Issues))
	for _, is := range e.Issues {
		b.WriteString("; ")
		b.WriteString(formatLoc(is.Loc))
		fmt.Fprintf(&b, ": %s [%s]", is.Msg, is.Type)
	}
	return b.String()
}

// Is reports whether target is ErrValidation or ErrLNDL.
func (e *ValidationError) Is(target error) bool {
	return target == ErrValidation || target == ErrLNDL
}

func formatLoc(loc []any) string {
	if len(loc) == 0 {
		return "(root)"
	}
	var b strings.Builder
	for i, p := range loc {
		switch x := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", x)
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, x)
		}
	}
	return b.String()
}

// Validate checks v, an assembled value (see [RoundResult.Resolve]),
// against the target the way pydantic validates a model in lax mode, and
// returns the validated value: an *[Object] holding the target's fields
// in declaration order, with defaults filled in for omitted fields and
// keys that are not fields dropped (a model whose schema sets
// "additionalProperties": false rejects them instead).
//
// Coercion is lax as the conformance vectors' README describes, following
// pydantic 2: numeric strings become numbers for integer and number fields
// (`"42"`, `" 42 "`, `"007"`, `"1_000"` and `"4.0"` for an integer; not
// `"1e3"` or `"4."`), the strings true/false/yes/no/on/off/t/f/y/n/1/0 in
// any case (without surrounding white space) and the numbers 0 and 1
// become booleans, an integral float within 64 bits is accepted for an
// integer and an integer or boolean for a number; a number is never
// accepted for a string, and JSON text is never parsed into an object or
// array. Nullable fields accept null; for unions of several types a
// variant that matches without coercion wins, else the first that matches
// with it (failures are located under the variant's name, `["u", "int"]`).
// An action placeholder matches only an Any field. Integers stay exact (up
// to [MaxCallIntDigits] digits). Unlike pydantic, non-finite numbers
// (`"inf"`, `"nan"`, `"1e400"`) are rejected (finite_number): JSON cannot
// hold them.
//
// After coercion the value is checked against the target's JSON Schema
// with github.com/santhosh-tekuri/jsonschema/v6 for the constraints
// (minimum, minLength, pattern, enum, ...). The schema is compiled once
// per Target, on first use, and cached in it. For a target from
// [ParseTarget] whose schema holds only keywords the coercion already
// enforces (type, properties, required, items, additionalProperties,
// $ref, anyOf, enum, annotations such as title and default), the
// validator could report nothing more, so it is not run; the result is
// the same either way (tested on the pydantic replay). The Target must
// not be modified after ParseTarget. Values nested deeper than
// [MaxJSONDepth] are rejected.
//
// When v holds only *Object, []any and JSON scalars (as assembled values
// do), the result shares with v every object and list in which nothing
// needed a change: one already holding exactly the fields it keeps, in
// declaration order, with no default to add and every value as coerced.
// The result is then v itself when nothing at all changes, and otherwise
// new objects and lists down to each change, holding the unchanged parts
// of v. v is never modified; treat both v and the result as read-only.
//
// A failure is a *[ValidationError] listing every issue; a schema the
// validator cannot compile is an error wrapping [ErrInvalidTarget].
func (t *Target) Validate(v any) (any, error) {
	return t.validate(v, false)
}

// validate is Validate; forceSchema runs the schema validator even when
// the target's schema holds nothing the coercion walk has not decided
// (tests compare both paths).
func (t *Target) validate(v any, forceSchema bool) (any, error) {
	if t == nil || t.Type == nil {
		return nil, fmt.Errorf("%w: no target to validate against", ErrInvalidTarget)
	}
	in := v
	if !isNormalized(v, 0) {
		var err error
		if in, err = normalizeInput(v, 0); err != nil {
			return nil, &ValidationError{Issues: []ValidationIssue{{Loc: []any{}, Type: "too_deep", Msg: err.Error()}}}
		}
	}
	ct := t.compiledSchema()
	if ct.err != nil {
		return nil, ct.err
	}
	// The schema validator runs unless the coercion walk decides all the
	// schema asserts; the locations of defaults matter only when it runs.
	runSchema := ct.schema != nil && (forceSchema || !ct.structural)
	pp := locPathPool.Get().(*[]locStep)
	lv := laxValidator{path: (*pp)[:0], keepDefaults: runSchema}
	defer func() {
		// Trials may have grown their own copies; lv.path is the
		// pooled buffer or one grown from it. It is not cleared: every
		// step is written before it is read, and the keys it holds are
		// kept no longer than the pool keeps it.
		if cap(lv.path) <= maxPooledLocPath {
			*pp = lv.path[:0]
			locPathPool.Put(pp)
		}
	}()
	out, _, _ := lv.value(t.Type, in, false)
	if ct.schema != nil && !runSchema && !ct.defaultsFit(lv.deepestDefault) {
		// A default nested too deep to leave unchecked: the schema
		// validator runs after all, so walk again recording where the
		// defaults are.
		runSchema = true
		lv = laxValidator{path: lv.path[:0], keepDefaults: true}
		out, _, _ = lv.value(t.Type, in, false)
	}
	if runSchema {
		plain, err := plainJSON(out, 0)
		if err != nil {
			return nil, err
		}
		if verr := ct.schema.Validate(plain); verr != nil {
			var ve *jsonschema.ValidationError
			if !errors.As(verr, &ve) {
				return nil, fmt.Errorf("lndl: schema validation: %w", verr)
			}
			before := len(lv.issues)
			lv.schemaIssues(ve, plain)
			sortIssues(lv.issues[before:], out)
		}
	}
	if len(lv.issues) > 0 {
		return nil, &ValidationError{Issues: lv.issues}
	}
	return out, nil
}

// locPathPool holds the location buffers of validations for reuse.
var locPathPool = sync.Pool{New: func() any {
	s := make([]locStep, 0, 16)
	return &s
}}

// maxPooledLocPath bounds the steps of a pooled location buffer.
const maxPooledLocPath = 64

// isNormalized reports whether v already has the shapes the coercion walk
// takes (see normalizeInput) and nests at most MaxJSONDepth deep, so that
// it can be walked without a copy. Assembled values always do.
func isNormalized(v any, depth int) bool {
	if depth > MaxJSONDepth {
		return false
	}
	switch x := v.(type) {
	case nil, bool, string, json.Number, *Placeholder:
		return true
	case []any:
		for _, e := range x {
			if !isNormalizedItem(e, depth+1) {
				return false
			}
		}
		return true
	case *Object:
		if x == nil {
			return true
		}
		for i := range x.pairs {
			if !isNormalizedItem(x.pairs[i].val, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// isNormalizedItem is isNormalized for an item of a list or object,
// deciding the commonest, a string, without a call.
func isNormalizedItem(v any, depth int) bool {
	if _, ok := v.(string); ok && depth <= MaxJSONDepth {
		return true
	}
	return isNormalized(v, depth)
}

// compiledTarget is the compiled JSON Schema of one Target.
type compiledTarget struct {
	schema *jsonschema.Schema
	err    error
	// structural is set when every keyword of the schema is one the
	// coercion walk already enforces (see structuralSchema): a value the
	// walk accepts then always satisfies the schema, and the schema
	// validator has nothing left to check.
	structural bool
	// defaultDepth is the deepest nesting of any "default" value.
	defaultDepth int
}

// defaultsFit reports whether defaults filled at locations at most
// deepest long (0: none filled) stay within MaxJSONDepth, as the schema
// validator's input must.
func (ct *compiledTarget) defaultsFit(deepest int) bool {
	return deepest == 0 || deepest+ct.defaultDepth <= MaxJSONDepth
}

// compiledSchema returns t's compiled schema, compiling it on first use
// and caching it in t. Concurrent first uses may each compile it; one
// result is kept. A Target without a schema gets a compiledTarget with a
// nil schema: no constraint check.
func (t *Target) compiledSchema() *compiledTarget {
	if ct := t.compiled.Load(); ct != nil {
		return ct
	}
	ct := &compiledTarget{}
	if len(t.Schema) != 0 || t.Root != nil {
		ct.schema, ct.err = compileTarget(t)
		if ct.err == nil && t.parsed {
			if root, ok := t.Root.(*Object); ok {
				ct.structural, ct.defaultDepth = structuralSchema(root)
			}
		}
	}
	if t.compiled.CompareAndSwap(nil, ct) {
		return ct
	}
	return t.compiled.Load()
}

// targetSchemaURL is the name the target schema is registered under; it
// is never fetched.
const targetSchemaURL = "https://lionbus.invalid/lndl/target.json"

func compileTarget(t *Target) (*jsonschema.Schema, error) {
	raw := t.Schema
	if len(raw) == 0 {
		var err error
		if raw, err = json.Marshal(t.Root); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidTarget, err)
		}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTarget, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(targetSchemaURL, doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTarget, err)
	}
	sch, err := c.Compile(targetSchemaURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTarget, err)
	}
	return sch, nil
}

// plainJSON converts a validated value to the types the schema validator
// takes: nil, bool, string, json.Number, []any and map[string]any.
func plainJSON(v any, depth int) (any, error) {
	if depth > MaxJSONDepth {
		return nil, ErrJSONTooDeep
	}
	switch x := v.(type) {
	case *Object:
		m := make(map[string]any, x.Len())
		var err error
		x.Range(func(k string, e any) bool {
			m[k], err = plainJSON(e, depth+1)
			return err == nil
		})
		return m, err
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = plainJSON(e, depth+1); err != nil {
				return nil, err
			}
		}
		return out, nil
	case *Placeholder:
		raw, err := json.Marshal(x)
		if err != nil {
			return nil, err
		}
		return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	}
	return v, nil
}

// schemaIssues adds the leaf failures of a schema validation error,
// skipping those at, above or under a location already reported by
// coercion, and those under a value filled from a default (pydantic does
// not validate defaults).
func (lv *laxValidator) schemaIssues(ve *jsonschema.ValidationError, plain any) {
	printer := message.NewPrinter(language.English)
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		causes := e.Causes
		switch e.ErrorKind.(type) {
		case *kind.AnyOf, *kind.OneOf:
			// Prefer the branches that failed on something other than
			// their type: for `anyOf [X, null]` that is X's constraint.
			var specific []*jsonschema.ValidationError
			for _, c := range causes {
				if _, isType := c.ErrorKind.(*kind.Type); !isType || len(c.Causes) > 0 {
					specific = append(specific, c)
				}
			}
			if len(specific) > 0 {
				causes = specific
			}
		}
		if len(causes) > 0 {
			for _, c := range causes {
				walk(c)
			}
			return
		}
		loc := instanceLoc(e.InstanceLocation, plain)
		typ := schemaErrorType(e.ErrorKind)
		msg := e.ErrorKind.LocalizedString(printer)
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, name := range k.Missing {
				lv.addSchemaIssue(append(loc[:len(loc):len(loc)], name), "missing", "field required")
			}
			return
		case *kind.AdditionalProperties:
			for _, name := range k.Properties {
				lv.addSchemaIssue(append(loc[:len(loc):len(loc)], name), "extra_forbidden", "extra field not permitted")
			}
			return
		}
		lv.addSchemaIssue(loc, typ, msg)
	}
	walk(ve)
}

func (lv *laxValidator) addSchemaIssue(loc []any, typ, msg string) {
	for _, is := range lv.issues {
		if locHasPrefix(loc, is.Loc) || locHasPrefix(is.Loc, loc) {
			return
		}
	}
	for _, d := range lv.defaults {
		if locHasPrefix(loc, d) {
			return
		}
	}
	lv.issues = append(lv.issues, ValidationIssue{Loc: loc, Type: typ, Msg: msg})
}

// sortIssues orders schema issues as the values they refer to appear in
// v (fields in declaration order, list items by index): the validator
// reports them in no fixed order.
func sortIssues(issues []ValidationIssue, v any) {
	keys := make([][]int, len(issues))
	for i, is := range issues {
		keys[i] = locOrder(v, is.Loc)
	}
	idx := make([]int, len(issues))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return slices.Compare(keys[idx[a]], keys[idx[b]]) < 0 })
	sorted := make([]ValidationIssue, len(issues))
	for i, j := range idx {
		sorted[i] = issues[j]
	}
	copy(issues, sorted)
}

// locOrder returns the positions of loc's steps in v; a step that is not
// found sorts last.
func locOrder(v any, loc []any) []int {
	order := make([]int, 0, len(loc))
	cur := v
	for _, p := range loc {
		pos := math.MaxInt
		switch x := cur.(type) {
		case *Object:
			if k, ok := p.(string); ok {
				for i, key := range x.Keys() {
					if key == k {
						pos = i
						break
					}
				}
				cur, _ = x.Get(k)
			}
		case []any:
			if i, ok := p.(int); ok && i >= 0 && i < len(x) {
				pos = i
				cur = x[i]
			}
		default:
			cur = nil
		}
		order = append(order, pos)
	}
	return order
}

func locHasPrefix(loc, prefix []any) bool {
	if len(prefix) > len(loc) {
		return false
	}
	for i := range prefix {
		if loc[i] != prefix[i] {
			return false
		}
	}
	return true
}

// instanceLoc turns a schema instance location into a loc, with list
// indexes as ints.
func instanceLoc(path []string, plain any) []any {
	loc := make([]any, 0, len(path))
	cur := plain
	for _, seg := range path {
		switch x := cur.(type) {
		case []any:
			i, err := strconv.Atoi(seg)
			if err == nil && i >= 0 && i < len(x) {
				loc = append(loc, i)
				cur = x[i]
				continue
			}
		case map[string]any:
			cur = x[seg]
			loc = append(loc, seg)
			continue
		}
		loc = append(loc, seg)
		cur = nil
	}
	return loc
}

// schemaErrorType names a schema failure with pydantic's error code.
func schemaErrorType(k jsonschema.ErrorKind) string {
	switch x := k.(type) {
	case *kind.Minimum:
		return "greater_than_equal"
	case *kind.Maximum:
		return "less_than_equal"
	case *kind.ExclusiveMinimum:
		return "greater_than"
	case *kind.ExclusiveMaximum:
		return "less_than"
	case *kind.MultipleOf:
		return "multiple_of"
	case *kind.MinLength:
		return "string_too_short"
	case *kind.MaxLength:
		return "string_too_long"
	case *kind.Pattern:
		return "string_pattern_mismatch"
	case *kind.MinItems, *kind.MinProperties:
		return "too_short"
	case *kind.MaxItems, *kind.MaxProperties:
		return "too_long"
	case *kind.Enum:
		return "enum"
	case *kind.Const:
		return "literal_error"
	case *kind.UniqueItems:
		return "set_type"
	case *kind.Type:
		if len(x.Want) > 0 {
			return map[string]string{
				"string": "string_type", "integer": "int_type", "number": "float_type",
				"boolean": "bool_type", "array": "list_type", "object": "dict_type", "null": "none_required",
			}[x.Want[0]]
		}
	case *kind.FalseSchema:
		return "extra_forbidden"
	}
	return "value_error"
}
