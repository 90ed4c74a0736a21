package lndl

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// laxValidator coerces a value to a target type, collecting issues.
type laxValidator struct {
	issues []ValidationIssue
	// defaults are the locations filled from a default, recorded only
	// when keepDefaults is set (the schema validator is to run: its
	// issues under a default are skipped).
	defaults     [][]any
	keepDefaults bool
	// deepestDefault is the length of the longest location filled from
	// a default, 0 when none was.
	deepestDefault int
	// path is the location of the value being validated. A trial
	// validator starts from its parent's path.
	path []locStep
	// itemsLeft is set while the value call for an item of a list or
	// dict starts: the number of items left, this one included. The
	// results of model items that change come from slab, which holds
	// room for the rest of the items once the first needs it.
	itemsLeft int
	slab      []smallObject
}

func (lv *laxValidator) add(typ, format string, args ...any) {
	lv.issues = append(lv.issues, ValidationIssue{Loc: lv.loc(), Type: typ, Msg: fmt.Sprintf(format, args...)})
}

// locStep is one step of the location of the value being validated: a
// field name or dict key, or a list index.
type locStep struct {
	key   string
	index int
	// isIndex says the step is the list index, not the key.
	isIndex bool
}

func (lv *laxValidator) pushKey(k string) { lv.path = append(lv.path, locStep{key: k}) }
func (lv *laxValidator) pushIndex(i int)  { lv.path = append(lv.path, locStep{index: i, isIndex: true}) }
func (lv *laxValidator) pop()             { lv.path = lv.path[:len(lv.path)-1] }

// loc returns the current location as field names (string) and list
// indexes (int) from the root; the root is an empty, non-nil slice. It is
// built only when an issue or a default is recorded.
func (lv *laxValidator) loc() []any {
	out := make([]any, len(lv.path))
	for i, st := range lv.path {
		if st.isIndex {
			out[i] = st.index
		} else {
			out[i] = st.key
		}
	}
	return out
}

// normalizeInput turns any JSON-compatible Go value into the shapes the
// validator walks: nil, bool, string, json.Number, []any, *Object and
// *Placeholder. Go numbers become json.Number, maps become objects with
// sorted keys, and other values go through encoding/json.
func normalizeInput(v any, depth int) (any, error) {
	if depth > MaxJSONDepth {
		return nil, ErrJSONTooDeep
	}
	switch x := v.(type) {
	case nil, bool, string, *Placeholder:
		return v, nil
	case json.Number:
		return x, nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, fmt.Errorf("lndl: non-finite number %v", x)
		}
		return json.Number(strconv.FormatFloat(x, 'g', -1, 64)), nil
	case float32:
		return normalizeInput(float64(x), depth)
	case int:
		return json.Number(strconv.Itoa(x)), nil
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := normalizeInput(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case *Object:
		out := NewObject(x.Len())
		var err error
		x.Range(func(k string, e any) bool {
			var n any
			if n, err = normalizeInput(e, depth+1); err == nil {
				out.Set(k, n)
			}
			return err == nil
		})
		return out, err
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := NewObject(len(keys))
		for _, k := range keys {
			n, err := normalizeInput(x[k], depth+1)
			if err != nil {
				return nil, err
			}
			out.Set(k, n)
		}
		return out, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	d, err := DecodeJSON(raw)
	if err != nil {
		return nil, err
	}
	return normalizeInput(d, depth)
}

// value coerces v to t. It returns the coerced value, whether it is
// valid, and whether it differs from v: when changed is false the result
// is v itself (a list or object in which nothing needed a change is not
// copied). After recording the issues of an invalid v it returns v, false,
// false. strict disables every conversion (the first pass over a union's
// variants).
func (lv *laxValidator) value(t *Type, v any, strict bool) (out any, ok, changed bool) {
	itemsLeft := lv.itemsLeft
	lv.itemsLeft = 0
	if v == nil && (t.Nullable || t.Kind == KindNull || t.Kind == KindAny) {
		return nil, true, false
	}
	if len(lv.path) > MaxJSONDepth {
		lv.add("too_deep", "value nested deeper than %d", MaxJSONDepth)
		return v, false, false
	}
	switch t.Kind {
	case KindAny:
		return v, true, false
	case KindNull:
		lv.add("none_required", "input should be null")
		return v, false, false
	case KindString:
		if _, ok := v.(string); ok {
			return v, true, false
		}
		lv.add("string_type", "input should be a valid string")
		return v, false, false
	case KindInt:
		return lv.intValue(v, strict)
	case KindFloat:
		return lv.floatValue(v, strict)
	case KindBool:
		return lv.boolValue(v, strict)
	case KindEnum:
		return lv.enumValue(t, v, strict)
	case KindList:
		arr, ok := v.([]any)
		if !ok {
			lv.add("list_type", "input should be a valid list")
			return v, false, false
		}
		// out stays nil while every item so far is unchanged.
		var out []any
		good := true
		slab := lv.slab
		lv.slab = nil
		for i, e := range arr {
			if lv.plainString(t.Elem, e) {
				if out != nil {
					out[i] = e
				}
				continue
			}
			lv.pushIndex(i)
			lv.itemsLeft = len(arr) - i
			c, ok, ch := lv.value(t.Elem, e, strict)
			lv.pop()
			if ch && out == nil {
				out = make([]any, len(arr))
				copy(out, arr[:i])
			}
			if out != nil {
				out[i] = c
			}
			good = good && ok
		}
		lv.slab = slab
		if out == nil {
			return v, good, false
		}
		return out, good, true
	case KindDict:
		obj, ok := v.(*Object)
		if !ok {
			lv.add("dict_type", "input should be a valid dictionary")
			return v, false, false
		}
		// out stays nil while every value so far is unchanged.
		var out *Object
		good := true
		slab := lv.slab
		lv.slab = nil
		for i := range obj.pairs {
			k, e := obj.pairs[i].key, obj.pairs[i].val
			lv.pushKey(k)
			lv.itemsLeft = len(obj.pairs) - i
			c, ok, ch := lv.value(t.Elem, e, strict)
			lv.pop()
			if ch && out == nil {
				out = objectPrefix(NewObject(obj.Len()), obj, i)
			}
			if out != nil {
				addNewKey(out, k, c)
			}
			good = good && ok
		}
		lv.slab = slab
		if out == nil {
			return v, good, false
		}
		return out, good, true
	case KindModel:
		return lv.modelValue(t, v, strict, itemsLeft)
	case KindUnion:
		return lv.unionValue(t, v, strict)
	}
	lv.add("value_error", "unsupported target type %s", t.Kind)
	return v, false, false
}

// plainString reports whether v is a string validated as a string one
// level below the current location, which value would return unchanged:
// the commonest case, decided without a call.
func (lv *laxValidator) plainString(t *Type, v any) bool {
	if t.Kind != KindString || len(lv.path) >= MaxJSONDepth {
		return false
	}
	_, ok := v.(string)
	return ok
}

// addDefault records that the value at the current location was filled
// from a default.
func (lv *laxValidator) addDefault() {
	lv.deepestDefault = max(lv.deepestDefault, len(lv.path))
	if lv.keepDefaults {
		lv.defaults = append(lv.defaults, lv.loc())
	}
}

// maxItemSlab bounds the objects allocated at once by newItemObject:
// three small objects (480 bytes) take no more room together than apart,
// while larger blocks are rounded up to bigger allocation sizes.
const maxItemSlab = 3

// objectPrefix adds the first k pairs of obj to out, which is empty, and
// returns out.
func objectPrefix(out, obj *Object, k int) *Object {
	for i := range obj.pairs[:k] {
		addNewKey(out, obj.pairs[i].key, obj.pairs[i].val)
	}
	return out
}

// newItemObject returns an empty object with room for n keys for the
// result of an item with itemsLeft items left (see laxValidator); small
// ones are taken from lv.slab, which is refilled for the items left, at
// most maxItemSlab (a slot is wasted for each later item that needs no
// change).
func (lv *laxValidator) newItemObject(n, itemsLeft int) *Object {
	if n > smallObjectKeys || itemsLeft == 0 || itemsLeft == 1 && len(lv.slab) == 0 {
		return NewObject(n)
	}
	if len(lv.slab) == 0 {
		lv.slab = make([]smallObject, min(itemsLeft, maxItemSlab))
	}
	s := &lv.slab[0]
	lv.slab = lv.slab[1:]
	s.o.pairs = s.b[:0]
	return &s.o
}

// addNewKey sets key, which o does not hold, to v: as o.Set does, without
// looking for the key first.
func addNewKey(o *Object, key string, v any) {
	if o.index == nil && len(o.pairs) < objectIndexMin {
		o.pairs = append(o.pairs, objectPair{key, v})
		return
	}
	o.Set(key, v)
}

// modelValue coerces v to the model t: the result holds t's fields in
// declaration order, with defaults filled in and other keys dropped. It
// is v itself when v already holds exactly the fields it keeps, in that
// order, each unchanged, and no default is added.
func (lv *laxValidator) modelValue(t *Type, v any, strict bool, itemsLeft int) (any, bool, bool) {
	obj, ok := v.(*Object)
	if !ok {
		lv.add("model_type", "input should be an object for model %s", t.Name)
		return v, false, false
	}
	fields := t.Model.Fields
	// The field names of a model from ParseTarget are distinct: its index
	// holds each field.
	distinct := t.Model.index != nil && len(t.Model.index) == len(fields)
	// While out is nil the result so far is obj.pairs[:next]: every
	// field met was the next key of obj and its value is unchanged.
	var out *Object
	next := 0
	good := true
	for _, f := range fields {
		var fv any
		present, inOrder := false, false
		switch {
		case next < len(obj.pairs) && obj.pairs[next].key == f.Name:
			fv, present, inOrder = obj.pairs[next].val, true, true
		case distinct && next == len(obj.pairs):
			// Every key of obj is the name of an earlier field.
		default:
			fv, present = obj.Get(f.Name)
		}
		if !present {
			lv.pushKey(f.Name)
			switch {
			case f.HasDefault:
				if out == nil {
					out = objectPrefix(lv.newItemObject(len(fields), itemsLeft), obj, next)
				}
				setField(out, f.Name, copyJSON(f.Default), distinct)
				lv.addDefault()
			case f.Required:
				lv.add("missing", "field required")
				good = false
			}
			lv.pop()
			continue
		}
		c, ok, ch := fv, true, false
		if !lv.plainString(f.Type, fv) {
			lv.pushKey(f.Name)
			c, ok, ch = lv.value(f.Type, fv, strict)
			lv.pop()
		}
		if out == nil && (ch || !inOrder) {
			out = objectPrefix(lv.newItemObject(len(fields), itemsLeft), obj, next)
		}
		if inOrder {
			next++
		}
		if out != nil {
			setField(out, f.Name, c, distinct)
		}
		good = good && ok
	}
	if out == nil && next != len(obj.pairs) {
		// Keys that are not fields are dropped.
		out = objectPrefix(lv.newItemObject(len(fields), itemsLeft), obj, next)
	}
	if t.Schema != nil {
		if ap, ok := t.Schema.Get("additionalProperties"); ok && ap == false {
			obj.Range(func(k string, _ any) bool {
				if t.Model.Field(k) == nil {
					lv.pushKey(k)
					lv.add("extra_forbidden", "extra field not permitted")
					lv.pop()
					good = false
				}
				return true
			})
		}
	}
	if out == nil {
		return v, good, false
	}
	return out, good, true
}

// setField sets the field name of a model's result to v; distinct says
// the model's field names are distinct, so that o cannot hold it yet.
func setField(o *Object, name string, v any, distinct bool) {
	if distinct {
		addNewKey(o, name, v)
	} else {
		o.Set(name, v)
	}
}

// unionValue tries the variants without coercion, then with it, in
// order (pydantic's smart mode, simplified). Each variant is tried on lv
// itself: what a failed try recorded is dropped again, except the issues
// of the second pass, which are the union's issues when no variant
// matches.
func (lv *laxValidator) unionValue(t *Type, v any, strict bool) (any, bool, bool) {
	issues, defaults, deepest := len(lv.issues), len(lv.defaults), lv.deepestDefault
	for pass := range 2 {
		s := pass == 0
		if !s && strict {
			break
		}
		for _, variant := range t.Variants {
			// As in pydantic, a variant's failures are located under
			// its type's name.
			lv.pushKey(variantTag(variant))
			c, ok, ch := lv.value(variant, v, s)
			lv.pop()
			if ok {
				lv.issues = lv.issues[:issues]
				return c, true, ch
			}
			lv.defaults, lv.deepestDefault = lv.defaults[:defaults], deepest
			if s {
				lv.issues = lv.issues[:issues]
			}
		}
	}
	if strict {
		lv.add("union_type", "input matches no variant of the union")
	}
	return v, false, false
}

func (lv *laxValidator) enumValue(t *Type, v any, strict bool) (any, bool, bool) {
	cand, coerced := v, false
	if !strict {
		switch t.Base {
		case KindInt, KindFloat, KindBool:
			trial := &laxValidator{path: lv.path}
			if c, ok, ch := trial.value(&Type{Kind: t.Base}, v, false); ok {
				cand, coerced = c, ch
			}
		}
	}
	for _, m := range t.Enum {
		if sameJSON(cand, m) {
			if !coerced && sameScalar(v, m) {
				return v, true, false
			}
			return copyJSON(m), true, true
		}
	}
	// pydantic writes an Enum class as a $ref'd definition and a Literal
	// inline.
	typ := "enum"
	if t.Name == "" {
		typ = "literal_error"
	}
	lv.add(typ, "input should be one of the allowed values")
	return v, false, false
}

// sameScalar reports whether a and b are the same JSON scalar written the
// same way (numbers with the same text), so that either can stand for
// the other in a result.
func sameScalar(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		return ok && x == y
	}
	return false
}

// variantTag names a union variant the way pydantic's error locations
// do: int, str, float, bool, a model's name, list[...], dict[str,...].
func variantTag(t *Type) string {
	switch t.Kind {
	case KindString:
		return "str"
	case KindInt:
		return "int"
	case KindFloat:
		return "float"
	case KindBool:
		return "bool"
	case KindNull:
		return "none"
	case KindModel, KindEnum:
		if t.Name != "" {
			return t.Name
		}
		if t.Kind == KindEnum {
			return "literal"
		}
	case KindList:
		return "list[" + variantTag(t.Elem) + "]"
	case KindDict:
		return "dict[str," + variantTag(t.Elem) + "]"
	}
	return t.Kind.String()
}

// sameJSON reports whether two normalized JSON values are equal, numbers
// by value.
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		fx, err1 := strconv.ParseFloat(string(x), 64)
		fy, err2 := strconv.ParseFloat(string(y), 64)
		if err1 != nil || err2 != nil || fx != fy {
			return false
		}
		// Equal as floats: compare exactly when both are integers.
		if isIntegerText(string(x)) && isIntegerText(string(y)) {
			return strings.TrimPrefix(string(x), "+") == strings.TrimPrefix(string(y), "+")
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case *Object:
		y, ok := b.(*Object)
		if !ok || x.Len() != y.Len() {
			return false
		}
		same := true
		x.Range(func(k string, e any) bool {
			f, ok := y.Get(k)
			same = ok && sameJSON(e, f)
			return same
		})
		return same
	}
	return false
}

func isIntegerText(s string) bool {
	return !strings.ContainsAny(s, ".eE")
}

// copyJSON deep-copies a decoded JSON value (defaults must not be shared
// between results).
func copyJSON(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyJSON(e)
		}
		return out
	case *Object:
		out := NewObject(x.Len())
		x.Range(func(k string, e any) bool {
			out.Set(k, copyJSON(e))
			return true
		})
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = copyJSON(e)
		}
		return out
	}
	return v
}

func (lv *laxValidator) intValue(v any, strict bool) (any, bool, bool) {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if isIntegerText(s) {
			if len(strings.TrimLeft(s, "+-0")) > MaxCallIntDigits {
				lv.add("int_parsing_size", "integer longer than %d digits", MaxCallIntDigits)
				return v, false, false
			}
			return v, true, false
		}
		if strict {
			break
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) {
			lv.add("finite_number", "input should be a finite number")
			return v, false, false
		}
		if f != math.Trunc(f) {
			lv.add("int_from_float", "input should be a valid integer, got a number with a fractional part")
			return v, false, false
		}
		// Like pydantic, a float becomes an integer only within 64 bits.
		if f <= -(1<<63) || f >= 1<<63 {
			lv.add("int_parsing_size", "unable to parse input as an integer, value exceeds 64 bits")
			return v, false, false
		}
		// Integral and within 64 bits: int64 holds it exactly.
		return json.Number(strconv.FormatInt(int64(f), 10)), true, true
	case bool:
		if strict {
			break
		}
		if x {
			return json.Number("1"), true, true
		}
		return json.Number("0"), true, true
	case string:
		if strict {
			break
		}
		n, err := intFromString(x)
		switch {
		case err == errIntTooLong:
			lv.add("int_parsing_size", "unable to parse input string as an integer, exceeds %d digits", MaxCallIntDigits)
			return v, false, false
		case err != nil:
			lv.add("int_parsing", "input should be a valid integer, unable to parse string as an integer")
			return v, false, false
		}
		return json.Number(n), true, true
	}
	lv.add("int_type", "input should be a valid integer")
	return v, false, false
}

var (
	errIntSyntax  = errors.New("not an integer")
	errIntTooLong = errors.New("integer too long")
)

// intFromString parses an integer the way pydantic's lax mode does:
// surrounding white space, a sign, leading zeros, underscores between
// digits and a fractional part of zeros ("4.0", not "4.") are allowed;
// exponents are not.
func intFromString(s string) (string, error) {
	s = strings.TrimFunc(s, unicode.IsSpace)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	intPart, frac, hasDot := strings.Cut(s, ".")
	digits, ok := stripDigitUnderscores(intPart)
	if !ok {
		return "", errIntSyntax
	}
	if hasDot && (frac == "" || strings.Trim(frac, "0") != "") {
		return "", errIntSyntax
	}
	if len(digits) > MaxCallIntDigits {
		return "", errIntTooLong
	}
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0", nil
	}
	if neg {
		digits = "-" + digits
	}
	return digits, nil
}

// stripDigitUnderscores removes underscores that sit between ASCII
// digits; it fails on an empty string, another character or a misplaced
// underscore.
func stripDigitUnderscores(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		plain = isDigit(s[i])
	}
	if plain {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			b.WriteByte(c)
		case c == '_' && i > 0 && i+1 < len(s) && isDigit(s[i-1]) && isDigit(s[i+1]):
		default:
			return "", false
		}
	}
	return b.String(), true
}

func (lv *laxValidator) floatValue(v any, strict bool) (any, bool, bool) {
	var f float64
	switch x := v.(type) {
	case json.Number:
		if plainFloatIsRepr(string(x)) {
			// Fast path: a plain decimal that is already its own repr.
			return v, true, false
		}
		var err error
		if f, err = strconv.ParseFloat(string(x), 64); err != nil && !math.IsInf(f, 0) {
			lv.add("float_parsing", "input should be a valid number")
			return v, false, false
		}
		if math.IsInf(f, 0) && isIntegerText(string(x)) {
			lv.add("float_type", "input should be a valid number, the integer is too large for a float")
			return v, false, false
		}
	case bool:
		if strict {
			lv.add("float_type", "input should be a valid number")
			return v, false, false
		}
		if x {
			f = 1
		}
	case string:
		var ok bool
		if strict {
			lv.add("float_type", "input should be a valid number")
			return v, false, false
		}
		if plainFloatIsRepr(x) {
			// Fast path: a plain decimal that is already its own repr.
			return json.Number(x), true, true
		}
		if f, ok = floatFromString(x); !ok {
			lv.add("float_parsing", "input should be a valid number, unable to parse string as a number")
			return v, false, false
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			lv.add("finite_number", "input should be a finite number (JSON cannot hold %s)", strings.TrimSpace(x))
			return v, false, false
		}
	default:
		lv.add("float_type", "input should be a valid number")
		return v, false, false
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		lv.add("finite_number", "input should be a finite number")
		return v, false, false
	}
	var buf [32]byte
	repr := appendPythonFloatRepr(buf[:0], f)
	if n, ok := v.(json.Number); ok && string(n) == string(repr) {
		return v, true, false
	}
	return json.Number(repr), true, true
}

// floatFromString parses a decimal number with optional sign, fraction
// and exponent, surrounded by optional white space, with underscores
// between digits.
func floatFromString(s string) (float64, bool) {
	s = strings.TrimFunc(s, unicode.IsSpace)
	switch strings.ToLower(strings.TrimLeft(s, "+-")) {
	case "inf", "infinity":
		if strings.HasPrefix(s, "-") {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "nan":
		return math.NaN(), true
	}
	body := s
	if body != "" && (body[0] == '+' || body[0] == '-') {
		body = body[1:]
	}
	mant, exp, hasExp := strings.Cut(strings.ToLower(body), "e")
	intPart, frac, hasDot := strings.Cut(mant, ".")
	if strings.IndexByte(s, '_') < 0 {
		// Without underscores the text parses as it is, once its parts
		// are checked as below.
		if intPart == "" && frac == "" {
			return 0, false
		}
		for _, d := range []string{intPart, frac} {
			if d != "" {
				if _, ok := stripDigitUnderscores(d); !ok {
					return 0, false
				}
			}
		}
		if hasExp {
			e := exp
			if e != "" && (e[0] == '+' || e[0] == '-') {
				e = e[1:]
			}
			if _, ok := stripDigitUnderscores(e); !ok {
				return 0, false
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !math.IsInf(f, 0) {
			return 0, false
		}
		return f, true
	}
	var clean strings.Builder
	if s != body {
		clean.WriteByte(s[0])
	}
	if intPart != "" {
		d, ok := stripDigitUnderscores(intPart)
		if !ok {
			return 0, false
		}
		clean.WriteString(d)
	}
	if hasDot {
		clean.WriteByte('.')
		if frac != "" {
			d, ok := stripDigitUnderscores(frac)
			if !ok {
				return 0, false
			}
			clean.WriteString(d)
		}
	}
	if intPart == "" && frac == "" {
		return 0, false
	}
	if hasExp {
		clean.WriteByte('e')
		e := exp
		if e != "" && (e[0] == '+' || e[0] == '-') {
			clean.WriteByte(e[0])
			e = e[1:]
		}
		d, ok := stripDigitUnderscores(e)
		if !ok {
			return 0, false
		}
		clean.WriteString(d)
	}
	f, err := strconv.ParseFloat(clean.String(), 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// boolWords are the strings lax validation reads as booleans (compared
// ignoring case).
var boolWords = map[string]bool{
	"0": false, "off": false, "f": false, "false": false, "n": false, "no": false,
	"1": true, "on": true, "t": true, "true": true, "y": true, "yes": true,
}

func (lv *laxValidator) boolValue(v any, strict bool) (any, bool, bool) {
	switch x := v.(type) {
	case bool:
		return v, true, false
	case string:
		if strict {
			break
		}
		if b, ok := boolWords[strings.ToLower(x)]; ok {
			return b, true, true
		}
		lv.add("bool_parsing", "input should be a valid boolean, unable to interpret input")
		return v, false, false
	case json.Number:
		if strict {
			break
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err == nil && (f == 0 || f == 1) {
			return f == 1, true, true
		}
		// pydantic: another 64-bit integer (an integral float too) is
		// unparsable; another float or a wider integer is the wrong type.
		_, intErr := strconv.ParseInt(string(x), 10, 64)
		if intErr == nil || err == nil && f == math.Trunc(f) && f > -(1<<63) && f < 1<<63 {
			lv.add("bool_parsing", "input should be a valid boolean, unable to interpret input")
			return v, false, false
		}
	}
	lv.add("bool_type", "input should be a valid boolean")
	return v, false, false
}
