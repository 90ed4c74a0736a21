// Package decode decodes the data of a request into its verb's type, with
// specific CodeInvalidRequest errors for bad input, and encodes result
// values.
package decode

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Data decodes req.Data into v with specific messages for bad input.
// Empty data decodes as {}.
func Data(data json.RawMessage, v any) error {
	if len(data) == 0 || string(data) == "null" {
		data = json.RawMessage("{}")
	}
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		if errors.As(err, &te) {
			te.Field = fieldPath(te.Field, v)
		}
		switch {
		case IsOutOfRange(err):
			return wire.Errorf(wire.CodeInvalidRequest, "data %s", OutOfRangeMessage(err))
		case errors.As(err, &te) && te.Field != "":
			return wire.Errorf(wire.CodeInvalidRequest, "data field %q must be %s, not a JSON %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		case errors.As(err, &te):
			return wire.Errorf(wire.CodeInvalidRequest, "data must be a JSON object, not a JSON %s", te.Value)
		case errors.As(err, &se):
			return wire.Errorf(wire.CodeInvalidRequest, "data is not valid JSON: %v", err)
		}
		return wire.Errorf(wire.CodeInvalidRequest, "bad data: %v", err)
	}
	return nil
}

// fieldPath is the JSON path of a decoding error's field in v: without the
// names of the structs v embeds (the wire's request types embed one
// another), which encoding/json puts in the path.
func fieldPath(field string, v any) string {
	embedded := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); f.Anonymous && !embedded[f.Name] {
				embedded[f.Name] = true
				walk(f.Type)
			}
		}
	}
	walk(reflect.TypeOf(v))
	if len(embedded) == 0 {
		return field
	}
	parts := strings.Split(field, ".")
	out := parts[:0]
	for _, p := range parts {
		if !embedded[p] {
			out = append(out, p)
		}
	}
	return strings.Join(out, ".")
}

// IsOutOfRange reports whether err is encoding/json refusing a number that
// no float64 holds (1e400): valid JSON, but outside what lionbus computes
// with.
func IsOutOfRange(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te) && strings.HasPrefix(te.Value, "number ") &&
		te.Type != nil && te.Type.Kind() == reflect.Float64
}

// OutOfRangeMessage says which number of an IsOutOfRange error is refused
// and why, naming its field when known.
func OutOfRangeMessage(err error) string {
	var te *json.UnmarshalTypeError
	errors.As(err, &te)
	where := ""
	if te.Field != "" {
		where = fmt.Sprintf(" (field %q)", te.Field)
	}
	return fmt.Sprintf("holds the number %s%s, which is out of range: numbers must be finite and at most about 1.8e308 in magnitude (64-bit floating point)",
		wire.Truncate(strings.TrimPrefix(te.Value, "number "), 64), where)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "uint64", "float64":
		return "a number"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	}
	return "of another type"
}

// Value encodes a result value; a failure is a CodeInternal *wire.Error.
func Value(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &wire.Error{Code: wire.CodeInternal, Message: fmt.Sprintf("encode result: %v", err), Err: err}
	}
	return b, nil
}

// RequestFields decodes communicate's request_fields: an object (its keys,
// sorted) or a list of field names.
func RequestFields(raw json.RawMessage) ([]string, error) {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err == nil {
		return slices.Sorted(maps.Keys(obj)), nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		return list, nil
	}
	return nil, wire.Errorf(wire.CodeInvalidRequest, "data.request_fields must be an object or a list of field names")
}
