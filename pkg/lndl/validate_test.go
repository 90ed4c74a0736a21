package lndl

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
)

// TestValidate_roundVectors validates every round vector that expects a
// validation result and checks, beyond what the round conformance test
// compares, that the failures carry the vectors' loc and type.
func TestValidate_roundVectors(t *testing.T) {
	n := 0
	for _, v := range loadVectors(t, "round") {
		var rv roundVector
		if err := json.Unmarshal(v.Input, &rv.Input); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(v.Expect, &rv.Expect); err != nil {
			t.Fatal(err)
		}
		want, _ := decodeJSON(t, rv.Expect.Validated).(map[string]any)
		if want == nil {
			continue
		}
		n++
		t.Run(v.ID, func(t *testing.T) {
			tg, err := ParseTarget(rv.Input.Target)
			if err != nil {
				t.Fatal(err)
			}
			res := Round(RoundInput{Text: rv.Input.Text, Target: tg,
				ActionResults: decodeMap(t, rv.Input.ActionResults), Notes: decodeMap(t, rv.Input.Notes)})
			resolved, err := res.Resolve(decodeMap(t, rv.Input.ExecutedResults))
			if err != nil {
				t.Fatalf("resolve: %v", err)
			}
			got, verr := tg.Validate(resolved)
			if want["ok"].(bool) {
				if verr != nil {
					t.Fatalf("Validate: %v", verr)
				}
				if d := jsonDiff(got, want["value"]); d != "" {
					t.Errorf("value: %s", d)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(verr, &ve) {
				t.Fatalf("Validate = %v, %v; want a *ValidationError", got, verr)
			}
			var issues []any
			for _, is := range ve.Issues {
				issues = append(issues, map[string]any{"loc": is.Loc, "type": is.Type})
			}
			if d := jsonDiff(issues, want["errors"]); d != "" {
				t.Errorf("issues %v: %s", ve, d)
			}
		})
	}
	if n != 188 {
		t.Errorf("%d round vectors expect validation, want 188", n)
	}
}

// validateSchema is a target exercising every field kind.
const validateSchema = `{
 "$defs": {
  "Item": {"properties": {"name": {"type": "string"}, "score": {"type": "number", "minimum": 0}},
           "required": ["name", "score"], "title": "Item", "type": "object"},
  "Level": {"enum": [1, 2, 3], "title": "Level", "type": "integer"},
  "Strict": {"properties": {"x": {"type": "integer"}}, "required": ["x"], "additionalProperties": false,
             "title": "Strict", "type": "object"}
 },
 "properties": {
  "s": {"type": "string", "maxLength": 5},
  "i": {"type": "integer"},
  "f": {"type": "number"},
  "b": {"type": "boolean"},
  "tags": {"default": ["x"], "items": {"type": "string"}, "type": "array"},
  "scores": {"additionalProperties": {"type": "integer"}, "type": "object"},
  "items": {"items": {"$ref": "#/$defs/Item"}, "type": "array"},
  "opt": {"anyOf": [{"type": "integer", "maximum": 10}, {"type": "null"}], "default": null},
  "either": {"anyOf": [{"type": "integer"}, {"type": "string"}], "default": 0},
  "level": {"$ref": "#/$defs/Level", "default": 1},
  "kind": {"const": "k", "default": "k"},
  "anything": {"default": null},
  "strict": {"anyOf": [{"$ref": "#/$defs/Strict"}, {"type": "null"}], "default": null}
 },
 "required": ["s", "i", "f", "b"],
 "title": "All", "type": "object"
}`

func validJSON(t testing.TB, s string) any {
	t.Helper()
	v, err := DecodeJSON([]byte(s))
	if err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return v
}

func TestValidate_coercion(t *testing.T) {
	tg := mustTarget(t, validateSchema)
	base := `"s": "a", "i": 1, "f": 1.5, "b": true`
	defaults := `"tags": ["x"], "opt": null, "either": 0, "level": 1, "kind": "k", "anything": null, "strict": null`
	tests := []struct {
		name string
		in   string // fields added to base
		want string // fields of the result besides defaults, in order
	}{
		{"plain", ``, `"s": "a", "i": 1, "f": 1.5, "b": true`},
		{"int from strings", `"i": " 42 "`, `"s": "a", "i": 42, "f": 1.5, "b": true`},
		{"int from zero fraction", `"i": "-4.00"`, `"s": "a", "i": -4, "f": 1.5, "b": true`},
		{"int with underscores", `"i": "1_000"`, `"s": "a", "i": 1000, "f": 1.5, "b": true`},
		{"int with leading zeros", `"i": "007"`, `"s": "a", "i": 7, "f": 1.5, "b": true`},
		{"float with underscores", `"f": "1_0.5"`, `"s": "a", "i": 1, "f": 10.5, "b": true`},
		{"bool from 1.0", `"b": 1.0`, `"s": "a", "i": 1, "f": 1.5, "b": true`},
		{"int from integral float", `"i": 1e3`, `"s": "a", "i": 1000, "f": 1.5, "b": true`},
		{"int from large integral float", `"i": -4.611686018427388e18`, `"s": "a", "i": -4611686018427387904, "f": 1.5, "b": true`},
		{"int from float below 2**63", `"i": 9.223372036854775e18`, `"s": "a", "i": 9223372036854774784, "f": 1.5, "b": true`},
		{"int from negative zero", `"i": -0.0`, `"s": "a", "i": 0, "f": 1.5, "b": true`},
		{"int from bool", `"i": true`, `"s": "a", "i": 1, "f": 1.5, "b": true`},
		{"big int exact", `"i": "123456789012345678901234567890"`, `"s": "a", "i": 123456789012345678901234567890, "f": 1.5, "b": true`},
		{"float from string", `"f": " 1e3 "`, `"s": "a", "i": 1, "f": 1000.0, "b": true`},
		{"float from int", `"f": 2`, `"s": "a", "i": 1, "f": 2.0, "b": true`},
		{"bool words", `"b": "OFF"`, `"s": "a", "i": 1, "f": 1.5, "b": false`},
		{"bool from Y", `"b": "Y"`, `"s": "a", "i": 1, "f": 1.5, "b": true`},
		{"bool from 0", `"b": 0`, `"s": "a", "i": 1, "f": 1.5, "b": false`},
		{"list and dict coerced", `"tags": ["p", "q"], "scores": {"z": "2", "a": 3.0}`, `"s": "a", "i": 1, "f": 1.5, "b": true, "tags": ["p", "q"], "scores": {"z": 2, "a": 3}`},
		{"nested models", `"items": [{"name": "n", "score": "0.5", "extra": 1}]`, `"s": "a", "i": 1, "f": 1.5, "b": true, "items": [{"name": "n", "score": 0.5}]`},
		{"nullable", `"opt": "7"`, `"s": "a", "i": 1, "f": 1.5, "b": true, "opt": 7`},
		{"union prefers exact", `"either": "5"`, `"s": "a", "i": 1, "f": 1.5, "b": true, "either": "5"`},
		{"enum coerced to its base", `"level": "2"`, `"s": "a", "i": 1, "f": 1.5, "b": true, "level": 2`},
		{"any keeps structure", `"anything": {"k": [1, "x"]}`, `"s": "a", "i": 1, "f": 1.5, "b": true, "anything": {"k": [1, "x"]}`},
		{"unknown keys dropped", `"zzz": 1`, `"s": "a", "i": 1, "f": 1.5, "b": true`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := "{" + base
			if tt.in != "" {
				in += ", " + tt.in
			}
			in += "}"
			got, err := tg.Validate(validJSON(t, in))
			if err != nil {
				t.Fatalf("Validate(%s): %v", in, err)
			}
			want := validJSON(t, "{"+defaults+"}").(*Object)
			for _, k := range validJSON(t, "{"+tt.want+"}").(*Object).Keys() {
				v, _ := validJSON(t, "{"+tt.want+"}").(*Object).Get(k)
				want.Set(k, v)
			}
			if d := jsonDiff(got, want); d != "" {
				t.Errorf("Validate(%s): %s", in, d)
			}
		})
	}
}

func TestValidate_failures(t *testing.T) {
	tg := mustTarget(t, validateSchema)
	tests := []struct {
		name string
		in   string
		want string // the issues as JSON [{"loc", "type"}]
	}{
		{"missing required", `{"s": "a"}`, `[{"loc": ["i"], "type": "missing"}, {"loc": ["f"], "type": "missing"}, {"loc": ["b"], "type": "missing"}]`},
		{"number for string", `{"s": 5, "i": 1, "f": 1, "b": true}`, `[{"loc": ["s"], "type": "string_type"}]`},
		{"exponent string for int", `{"s": "a", "i": "1e3", "f": 1, "b": true}`, `[{"loc": ["i"], "type": "int_parsing"}]`},
		{"fraction for int", `{"s": "a", "i": 2.5, "f": 1, "b": true}`, `[{"loc": ["i"], "type": "int_from_float"}]`},
		{"fraction string for int", `{"s": "a", "i": "2.5", "f": 1, "b": true}`, `[{"loc": ["i"], "type": "int_parsing"}]`},
		{"padded bool word", `{"s": "a", "i": 1, "f": 1, "b": " yes"}`, `[{"loc": ["b"], "type": "bool_parsing"}]`},
		{"bool from 2", `{"s": "a", "i": 1, "f": 1, "b": 2}`, `[{"loc": ["b"], "type": "bool_parsing"}]`},
		{"non-finite float string", `{"s": "a", "i": 1, "f": "-Infinity", "b": true}`, `[{"loc": ["f"], "type": "finite_number"}]`},
		{"hex float string", `{"s": "a", "i": 1, "f": "0x1p3", "b": true}`, `[{"loc": ["f"], "type": "float_parsing"}]`},
		{"integer too large for a float", `{"s": "a", "i": 1, "f": 1` + strings.Repeat("0", 400) + `, "b": true}`, `[{"loc": ["f"], "type": "float_type"}]`},
		{"int string with empty fraction", `{"s": "a", "i": "5.", "f": 1, "b": true}`, `[{"loc": ["i"], "type": "int_parsing"}]`},
		{"int string with underscore in the fraction", `{"s": "a", "i": "4.0_0", "f": 1, "b": true}`, `[{"loc": ["i"], "type": "int_parsing"}]`},
		{"int string too long", `{"s": "a", "i": "` + strings.Repeat("9", MaxCallIntDigits+1) + `", "f": 1, "b": true}`, `[{"loc": ["i"], "type": "int_parsing_size"}]`},
		{"float beyond 64-bit int", `{"s": "a", "i": 1e20, "f": 1, "b": true}`, `[{"loc": ["i"], "type": "int_parsing_size"}]`},
		{"bool from integral float", `{"s": "a", "i": 1, "f": 1, "b": 2.0}`, `[{"loc": ["b"], "type": "bool_parsing"}]`},
		{"bool from fraction", `{"s": "a", "i": 1, "f": 1, "b": 2.5}`, `[{"loc": ["b"], "type": "bool_type"}]`},
		{"bool from wide integer", `{"s": "a", "i": 1, "f": 1, "b": 12345678901234567890123}`, `[{"loc": ["b"], "type": "bool_type"}]`},
		{"overflowing float", `{"s": "a", "i": 1, "f": "1e400", "b": true}`, `[{"loc": ["f"], "type": "finite_number"}]`},
		{"JSON text is not a list", `{"s": "a", "i": 1, "f": 1, "b": true, "tags": "[\"x\"]"}`, `[{"loc": ["tags"], "type": "list_type"}]`},
		{"JSON text is not a model", `{"s": "a", "i": 1, "f": 1, "b": true, "items": ["{\"name\": \"n\", \"score\": 1}"]}`, `[{"loc": ["items", 0], "type": "model_type"}]`},
		{"nested missing and bad", `{"s": "a", "i": 1, "f": 1, "b": true, "items": [{"name": 1}, {"score": "x"}]}`,
			`[{"loc": ["items", 0, "name"], "type": "string_type"}, {"loc": ["items", 0, "score"], "type": "missing"}, {"loc": ["items", 1, "name"], "type": "missing"}, {"loc": ["items", 1, "score"], "type": "float_parsing"}]`},
		{"dict value", `{"s": "a", "i": 1, "f": 1, "b": true, "scores": {"k": "x"}}`, `[{"loc": ["scores", "k"], "type": "int_parsing"}]`},
		{"enum", `{"s": "a", "i": 1, "f": 1, "b": true, "level": 7}`, `[{"loc": ["level"], "type": "enum"}]`},
		{"const", `{"s": "a", "i": 1, "f": 1, "b": true, "kind": "j"}`, `[{"loc": ["kind"], "type": "literal_error"}]`},
		{"constraints", `{"s": "abcdef", "i": 1, "f": 1, "b": true, "items": [{"name": "n", "score": "-1"}], "opt": 11}`,
			`[{"loc": ["s"], "type": "string_too_long"}, {"loc": ["items", 0, "score"], "type": "greater_than_equal"}, {"loc": ["opt"], "type": "less_than_equal"}]`},
		{"extra forbidden", `{"s": "a", "i": 1, "f": 1, "b": true, "strict": {"x": 1, "y": 2}}`, `[{"loc": ["strict", "y"], "type": "extra_forbidden"}]`},
		{"union matches nothing", `{"s": "a", "i": 1, "f": 1, "b": true, "either": [1]}`, `[{"loc": ["either", "int"], "type": "int_type"}, {"loc": ["either", "str"], "type": "string_type"}]`},
		{"null for a required non-nullable", `{"s": null, "i": 1, "f": 1, "b": true}`, `[{"loc": ["s"], "type": "string_type"}]`},
		{"not an object", `[1]`, `[{"loc": [], "type": "model_type"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tg.Validate(validJSON(t, tt.in))
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate(%s) = %v, %v; want a *ValidationError", tt.in, got, err)
			}
			if got != nil {
				t.Errorf("value %v returned with an error", got)
			}
			if !errors.Is(err, ErrValidation) || !errors.Is(err, ErrLNDL) {
				t.Errorf("error %v does not match ErrValidation and ErrLNDL", err)
			}
			var issues []any
			for _, is := range ve.Issues {
				if is.Msg == "" {
					t.Errorf("issue %v has no message", is)
				}
				issues = append(issues, map[string]any{"loc": is.Loc, "type": is.Type})
			}
			if d := jsonDiff(issues, validJSON(t, tt.want)); d != "" {
				t.Errorf("Validate(%s): %v: %s", tt.in, err, d)
			}
		})
	}
}

func TestValidate_placeholder(t *testing.T) {
	tg := mustTarget(t, `{"properties": {"a": {"type": "string"}, "b": {}}, "required": ["a", "b"], "title": "M", "type": "object"}`)
	ph := &Placeholder{Action: Action{Name: "x", Function: "fn", Arguments: map[string]any{}}}
	in := NewObject(2)
	in.Set("a", "text")
	in.Set("b", ph)
	got, err := tg.Validate(in)
	if err != nil {
		t.Fatalf("placeholder in an Any field: %v", err)
	}
	if b, _ := got.(*Object).Get("b"); b != ph {
		t.Errorf("Any field holds %v, want the placeholder", b)
	}
	in.Set("a", ph)
	_, err = tg.Validate(in)
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Issues) != 1 || ve.Issues[0].Type != "string_type" {
		t.Errorf("placeholder in a string field: %v", err)
	}
}

func TestValidate_orderAndGoValues(t *testing.T) {
	tg := mustTarget(t, validateSchema)
	in := map[string]any{"b": "yes", "f": float32(0.5), "i": int64(3), "s": "a", "items": []map[string]any{{"score": 1, "name": "n"}}}
	got, err := tg.Validate(in)
	if err != nil {
		t.Fatal(err)
	}
	obj := got.(*Object)
	if keys := strings.Join(obj.Keys(), ","); keys != "s,i,f,b,tags,items,opt,either,level,kind,anything,strict" {
		t.Errorf("keys in order %s", keys)
	}
	raw, _ := json.Marshal(got)
	want := `{"s":"a","i":3,"f":0.5,"b":true,"tags":["x"],"items":[{"name":"n","score":1.0}],"opt":null,"either":0,"level":1,"kind":"k","anything":null,"strict":null}`
	if string(raw) != want {
		t.Errorf("Validate = %s\nwant       %s", raw, want)
	}
}

func TestValidate_defaultsAreCopies(t *testing.T) {
	tg := mustTarget(t, validateSchema)
	in := `{"s": "a", "i": 1, "f": 1, "b": true}`
	first, err := tg.Validate(validJSON(t, in))
	if err != nil {
		t.Fatal(err)
	}
	tags, _ := first.(*Object).Get("tags")
	tags.([]any)[0] = "changed"
	second, err := tg.Validate(validJSON(t, in))
	if err != nil {
		t.Fatal(err)
	}
	if tags2, _ := second.(*Object).Get("tags"); tags2.([]any)[0] != "x" {
		t.Errorf("default changed through an earlier result: %v", tags2)
	}
}

func TestValidate_concurrentFirstUse(t *testing.T) {
	tg := mustTarget(t, validateSchema)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := tg.Validate(map[string]any{"s": "abcdefg", "i": 1, "f": 1, "b": true})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Issues) != 1 || ve.Issues[0].Type != "string_too_long" {
			t.Errorf("concurrent Validate: %v", err)
		}
	}
}

func TestValidate_bounds(t *testing.T) {
	tg := mustTarget(t, `{"properties": {"a": {}}, "title": "M", "type": "object"}`)
	deep := strings.Repeat("[", MaxJSONDepth+5) + strings.Repeat("]", MaxJSONDepth+5)
	var v any
	if err := json.Unmarshal([]byte(deep), &v); err != nil {
		t.Fatal(err)
	}
	_, err := tg.Validate(map[string]any{"a": v})
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Issues[0].Type != "too_deep" {
		t.Errorf("value nested %d deep: %v", MaxJSONDepth+5, err)
	}
	var nilTarget *Target
	if _, err := nilTarget.Validate(map[string]any{}); !errors.Is(err, ErrInvalidTarget) {
		t.Errorf("nil target: %v", err)
	}
}

func TestValidationError_message(t *testing.T) {
	err := &ValidationError{Issues: []ValidationIssue{
		{Loc: []any{"items", 0, "score"}, Type: "missing", Msg: "field required"},
		{Loc: []any{}, Type: "model_type", Msg: "input should be an object"},
	}}
	want := "2 validation error(s) against the target; items[0].score: field required [missing]; (root): input should be an object [model_type]"
	if err.Error() != want {
		t.Errorf("Error() = %q\nwant      %q", err.Error(), want)
	}
}

func TestValidate_schemaCompiledOnce(t *testing.T) {
	tg := mustTarget(t, validateSchema)
	first := tg.compiledSchema()
	if first.err != nil || first.schema == nil {
		t.Fatalf("compiledSchema: %v, %v", first.schema, first.err)
	}
	if second := tg.compiledSchema(); second != first {
		t.Errorf("second compiledSchema = %p; want the cached %p", second, first)
	}
	other := mustTarget(t, validateSchema)
	if third := other.compiledSchema(); third.err != nil || third.schema == first.schema {
		t.Errorf("another Target shares the compiled schema (%p)", third.schema)
	}
}
