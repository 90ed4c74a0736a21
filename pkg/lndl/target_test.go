package lndl

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseTargetFields(t *testing.T) {
	schema := `{"$defs": {"Finding": {"properties": {"name": {"type": "string"}, "score": {"type": "number"}}, "required": ["name", "score"], "title": "Finding", "type": "object"},
	  "Status": {"enum": ["open", "closed"], "title": "Status", "type": "string"}},
	 "properties": {
	  "zeta": {"type": "string"},
	  "alpha": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null},
	  "findings": {"items": {"$ref": "#/$defs/Finding"}, "type": "array"},
	  "scores": {"additionalProperties": {"type": "number"}, "type": "object"},
	  "status": {"$ref": "#/$defs/Status"},
	  "payload": {"title": "Payload"},
	  "lang": {"default": "en", "type": "string"},
	  "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
	  "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
	 },
	 "required": ["zeta", "findings", "scores", "status", "payload", "maybe", "either"], "title": "Top", "type": "object"}`
	tg, err := ParseTarget([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		name       string
		kind       Kind
		typeName   string
		required   bool
		hasDefault bool
		nullable   bool
		elem       Kind
	}
	wants := []want{
		{"zeta", KindString, "", true, false, false, 0},
		{"alpha", KindInt, "", false, true, true, 0},
		{"findings", KindList, "", true, false, false, KindModel},
		{"scores", KindDict, "", true, false, false, KindFloat},
		{"status", KindEnum, "Status", true, false, false, 0},
		{"payload", KindAny, "", true, false, false, 0},
		{"lang", KindString, "", false, true, false, 0},
		{"maybe", KindString, "", true, false, true, 0},
		{"either", KindUnion, "", true, false, false, 0},
	}
	if tg.Model.Name != "Top" || len(tg.Model.Fields) != len(wants) {
		t.Fatalf("model %q with %d fields", tg.Model.Name, len(tg.Model.Fields))
	}
	for i, w := range wants {
		f := tg.Model.Fields[i]
		if f.Name != w.name || f.Type.Kind != w.kind || f.Required != w.required || f.HasDefault != w.hasDefault || f.Type.Nullable != w.nullable {
			t.Errorf("field %d = %s %s req=%v def=%v null=%v, want %+v", i, f.Name, f.Type.Kind, f.Required, f.HasDefault, f.Type.Nullable, w)
		}
		if w.typeName != "" && f.Type.Name != w.typeName {
			t.Errorf("field %s type name %q, want %q", f.Name, f.Type.Name, w.typeName)
		}
		if w.elem != 0 && f.Type.Elem.Kind != w.elem {
			t.Errorf("field %s elem %s, want %s", f.Name, f.Type.Elem.Kind, w.elem)
		}
		if tg.Field(w.name) != f {
			t.Errorf("Field(%q) does not return the field", w.name)
		}
	}
	if e := tg.Field("findings").Type.Elem; e.Name != "Finding" || len(e.Model.Fields) != 2 || e.Model.Fields[1].Name != "score" {
		t.Errorf("Finding model = %+v", e.Model)
	}
	if d := tg.Field("lang").Default; d != "en" {
		t.Errorf("lang default = %v", d)
	}
	if string(tg.Schema) != schema {
		t.Error("raw schema not kept")
	}
}

func TestParseTargetRecursive(t *testing.T) {
	schema := `{"$defs": {"Node": {"properties": {"label": {"type": "string"}, "children": {"items": {"$ref": "#/$defs/Node"}, "type": "array"}}, "title": "Node", "type": "object"}},
	  "properties": {"root": {"$ref": "#/$defs/Node"}, "self": {"anyOf": [{"$ref": "#"}, {"type": "null"}], "default": null}}, "title": "Tree", "type": "object"}`
	tg, err := ParseTarget([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	node := tg.Field("root").Type
	if node.Model.Field("children").Type.Elem.Model != node.Model {
		t.Error("recursive model is not shared")
	}
	if got := Render(tg); got != "Specs: root(Node: label, children), self(Tree: root, self, optional)" {
		t.Errorf("Render = %q", got)
	}
}

func TestParseTargetErrors(t *testing.T) {
	deep := `{"properties": {"x": ` + strings.Repeat(`{"type": "array", "items": `, 100) + `{"type": "string"}` + strings.Repeat("}", 100) + `}, "type": "object"}`
	cases := []struct {
		name, schema, want string
	}{
		{"not json", `{`, "invalid target"},
		{"not object", `[1]`, "not a JSON object"},
		{"not a model", `{"type": "string"}`, "root schema is not an object"},
		{"missing def", `{"properties": {"a": {"$ref": "#/$defs/Nope"}}, "type": "object"}`, "no $defs"},
		{"missing def2", `{"$defs": {}, "properties": {"a": {"$ref": "#/$defs/Nope"}}, "type": "object"}`, "no such definition"},
		{"ref cycle", `{"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}, "properties": {"a": {"$ref": "#/$defs/A"}}, "type": "object"}`, "refers to itself"},
		{"remote ref", `{"properties": {"a": {"$ref": "http://x/y"}}, "type": "object"}`, "unsupported $ref"},
		{"too deep", deep, "nest deeper"},
		{"too big", `{"properties": {}, "title": "` + strings.Repeat("x", MaxSchemaSize) + `"}`, "limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseTarget([]byte(c.schema))
			if err == nil || !errors.Is(err, ErrInvalidTarget) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrInvalidTarget containing %q", err, c.want)
			}
		})
	}
}

func TestParseTargetVectors(t *testing.T) {
	for _, stage := range []string{"round", "render"} {
		for _, v := range loadVectors(t, stage) {
			var in struct {
				Target json.RawMessage `json:"target"`
			}
			if err := json.Unmarshal(v.Input, &in); err != nil {
				t.Fatal(err)
			}
			if string(in.Target) == "null" {
				continue
			}
			if _, err := ParseTarget(in.Target); err != nil {
				t.Errorf("%s: %v", v.ID, err)
			}
		}
	}
}

func TestObjectOrder(t *testing.T) {
	o := NewObject(0)
	for i, k := range []string{"b", "a", "c", "a"} {
		o.Set(k, json.Number(string(rune('0'+i))))
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"b":0,"a":3,"c":2}` {
		t.Errorf("marshal = %s", b)
	}
	big := NewObject(0)
	for i := range 40 {
		big.Set(string(rune('A'+i)), i)
	}
	big.Set("A", -1)
	if v, _ := big.Get("A"); v != -1 || big.Len() != 40 || big.Keys()[0] != "A" {
		t.Errorf("indexed object wrong: %v %d", v, big.Len())
	}
	v, err := DecodeJSON([]byte(`{"z": [1, {"y": null, "x": "s"}], "a": true}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(v)
	if string(b) != `{"z":[1,{"y":null,"x":"s"}],"a":true}` {
		t.Errorf("round trip = %s", b)
	}
	if _, err := DecodeJSON([]byte(strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1))); !errors.Is(err, ErrJSONTooDeep) {
		t.Errorf("deep JSON: %v", err)
	}
}

func TestResultJSONText(t *testing.T) {
	v, _ := DecodeJSON([]byte(`{"b": [1, 2.50, "é<&>"], "a": {"z": null, "\u00e9": "\n\u0001"}}`))
	got, err := resultJSONText(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":{"z":null,"é":"\n\u0001"},"b":[1,2.50,"é<&>"]}`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	got, _ = resultJSONText(map[string]any{"k": []any{true, nil}, "j": 1.5})
	if got != `{"j":1.5,"k":[true,null]}` {
		t.Errorf("map: %s", got)
	}
}
