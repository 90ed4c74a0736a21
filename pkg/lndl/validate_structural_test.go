package lndl

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestStructuralSchema(t *testing.T) {
	cases := []struct {
		name   string
		schema string
		want   bool
	}{
		{"bench target", benchSchema, true},
		{"constraints", validateSchema, false},
		{"plain fields", `{"properties": {"a": {"type": "string", "title": "A"}, "b": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null}}, "required": ["a"], "type": "object"}`, true},
		{"minimum", `{"properties": {"a": {"type": "integer", "minimum": 0}}, "type": "object"}`, false},
		{"oneOf", `{"properties": {"a": {"oneOf": [{"type": "integer"}, {"type": "string"}]}}, "type": "object"}`, false},
		{"several types", `{"properties": {"a": {"type": ["integer", "string"]}}, "type": "object"}`, false},
		{"nullable type list", `{"properties": {"a": {"type": ["integer", "null"]}}, "type": "object"}`, true},
		{"ref with asserting sibling", `{"$defs": {"M": {"properties": {"x": {"type": "string"}}, "type": "object"}}, "properties": {"a": {"$ref": "#/$defs/M", "maxProperties": 1}}, "type": "object"}`, false},
		{"ref with default", `{"$defs": {"L": {"enum": [1, 2], "type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/L", "default": 1}}, "type": "object"}`, true},
		{"enum member of another type", `{"properties": {"a": {"enum": ["x", 1], "type": "string"}}, "type": "object"}`, false},
		{"items without array", `{"properties": {"a": {"items": {"type": "string"}}}, "type": "object"}`, false},
		{"required not declared", `{"properties": {"a": {}}, "required": ["b"], "type": "object"}`, false},
		{"closed dict", `{"properties": {"a": {"type": "object", "additionalProperties": false}}, "type": "object"}`, false},
		{"closed model", `{"properties": {"a": {"type": "string"}}, "additionalProperties": false, "type": "object"}`, true},
		{"untyped dict values", `{"properties": {"a": {"additionalProperties": {"type": "integer"}}}, "type": "object"}`, false},
		{"typed dict values", `{"properties": {"a": {"additionalProperties": {"type": "integer"}, "type": "object"}}, "type": "object"}`, true},
		{"recursive", `{"$defs": {"N": {"properties": {"kids": {"items": {"$ref": "#/$defs/N"}, "type": "array"}}, "type": "object"}}, "properties": {"n": {"$ref": "#/$defs/N"}}, "type": "object"}`, true},
		{"id", `{"$id": "https://x.invalid/s", "properties": {"a": {}}, "type": "object"}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tg := mustTarget(t, c.schema)
			ct := tg.compiledSchema()
			if ct.err != nil {
				t.Fatal(ct.err)
			}
			if ct.structural != c.want {
				t.Errorf("structural = %v, want %v", ct.structural, c.want)
			}
		})
	}
}

// stripConstraints removes the keywords that make a schema non-structural
// from a decoded schema.
func stripConstraints(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			switch k {
			case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
				"minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems":
				continue
			}
			out[k] = stripConstraints(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stripConstraints(e)
		}
		return out
	}
	return v
}

// TestValidate_structuralSkipIsExact validates the 1500 pydantic replay
// inputs (many of them failing) against the replay schema without its
// constraints, once skipping the schema validator as Validate does for
// such a schema and once running it: values and issues must be identical.
func TestValidate_structuralSkipIsExact(t *testing.T) {
	lines := readJSONLines(t, "testdata/validate_pydantic.jsonl")
	if len(lines) == 0 {
		t.Fatal("empty file")
	}
	var head struct {
		Schema any `json:"schema"`
	}
	if err := json.Unmarshal(lines[0], &head); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(stripConstraints(head.Schema))
	if err != nil {
		t.Fatal(err)
	}
	tg, err := ParseTarget(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !tg.compiledSchema().structural {
		t.Fatal("stripped replay schema is not structural")
	}
	var inputs []any
	for _, line := range lines[1:] {
		var c struct {
			Input json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, decodeJSON(t, c.Input))
	}
	bt := mustTarget(t, benchSchema)
	for _, size := range []int{1 << 10, 10 << 10} {
		text, executed := benchResponse(size)
		v, err := Round(RoundInput{Text: text, Target: bt}).Resolve(executed)
		if err != nil {
			t.Fatal(err)
		}
		compareValidatePaths(t, bt, v)
	}
	failed := 0
	for _, in := range inputs {
		if compareValidatePaths(t, tg, in) {
			failed++
		}
	}
	if len(inputs) != 1500 || failed < 100 {
		t.Errorf("%d inputs, %d failing; want 1500 with many failing", len(inputs), failed)
	}
}

// compareValidatePaths validates in with and without the schema
// validator and reports any difference; it returns whether validation
// failed.
func compareValidatePaths(t *testing.T, tg *Target, in any) bool {
	t.Helper()
	fast, ferr := tg.validate(in, false)
	full, serr := tg.validate(in, true)
	if (ferr == nil) != (serr == nil) {
		t.Errorf("input %s: skipping the validator gives %v, running it %v", compactJSON(in), ferr, serr)
		return ferr != nil
	}
	if ferr == nil {
		if d := jsonDiff(fast, full); d != "" {
			t.Errorf("input %s: values differ: %s", compactJSON(in), d)
		}
		return false
	}
	var fe, se *ValidationError
	if !errors.As(ferr, &fe) || !errors.As(serr, &se) || !reflect.DeepEqual(fe.Issues, se.Issues) {
		t.Errorf("input %s: issues differ:\nskipping %v\nrunning  %v", compactJSON(in), ferr, serr)
	}
	return true
}

// TestValidate_deepDefaults validates nested values of a recursive model
// whose defaults are nested lists: when a default lands too deep to leave
// unchecked the schema validator runs although the schema is structural,
// and the outcome is the same as when it always runs.
func TestValidate_deepDefaults(t *testing.T) {
	deflt := strings.Repeat("[", 20) + strings.Repeat("]", 20)
	tg := mustTarget(t, `{"$defs": {"Node": {"properties": {
	   "x": {"type": "integer", "default": `+deflt+`},
	   "c": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}], "default": null}},
	  "title": "Node", "type": "object"}},
	 "properties": {"c": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}], "default": null}},
	 "title": "Root", "type": "object"}`)
	ct := tg.compiledSchema()
	if !ct.structural || ct.defaultDepth < 10 {
		t.Fatalf("structural %v, default depth %d", ct.structural, ct.defaultDepth)
	}
	for _, levels := range []int{1, 100, MaxJSONDepth - ct.defaultDepth - 2, MaxJSONDepth - ct.defaultDepth - 1, MaxJSONDepth - ct.defaultDepth, 250} {
		v := validJSON(t, strings.Repeat(`{"c": `, levels)+"{}"+strings.Repeat("}", levels))
		fast, ferr := tg.validate(v, false)
		full, serr := tg.validate(v, true)
		if fmt.Sprint(ferr) != fmt.Sprint(serr) || compactJSON(fast) != compactJSON(full) {
			t.Errorf("%d levels: skipping the validator gives %v, running it %v", levels, ferr, serr)
		}
		// The deepest default sits at c.c...c.x, levels+1 steps down.
		if tooDeep := levels+1+ct.defaultDepth > MaxJSONDepth; errors.Is(ferr, ErrJSONTooDeep) != tooDeep {
			t.Errorf("%d levels: Validate error %v, want one for a too deep default: %v", levels, ferr, tooDeep)
		}
	}
}
