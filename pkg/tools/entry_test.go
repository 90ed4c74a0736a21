package tools_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/tools/toolschema"
)

const addParams = `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`

func validEntry() tools.Entry {
	return tools.Entry{
		Name:        "add",
		Description: "Adds two numbers.",
		Parameters:  json.RawMessage(addParams),
		Subject:     "lion.tool.add",
		Version:     "1.0.0",
	}
}

func TestEntry_Validate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		change  func(e *tools.Entry)
		wantErr string // "" means valid
	}{
		{"valid", func(*tools.Entry) {}, ""},
		{"no version is fine", func(e *tools.Entry) { e.Version = "" }, ""},
		{"empty name", func(e *tools.Entry) { e.Name = "" }, "name"},
		{"dotted name", func(e *tools.Entry) { e.Name = "math.add" }, "name"},
		{"long name", func(e *tools.Entry) { e.Name = strings.Repeat("a", tools.MaxNameLength+1) }, "name"},
		{"long description", func(e *tools.Entry) { e.Description = strings.Repeat("d", tools.MaxDescriptionLength+1) }, "description"},
		{"empty subject", func(e *tools.Entry) { e.Subject = "" }, "subject"},
		{"wildcard subject", func(e *tools.Entry) { e.Subject = "lion.tool.*" }, "subject"},
		{"full wildcard subject", func(e *tools.Entry) { e.Subject = "lion.>" }, "subject"},
		{"empty token in subject", func(e *tools.Entry) { e.Subject = "lion..add" }, "subject"},
		{"no parameters", func(e *tools.Entry) { e.Parameters = nil }, "parameters"},
		{"parameters not JSON", func(e *tools.Entry) { e.Parameters = json.RawMessage(`{"type":`) }, "not JSON"},
		{"parameters not an object schema", func(e *tools.Entry) { e.Parameters = json.RawMessage(`{"type":"string"}`) }, `"type": "object"`},
		{"parameters a JSON array", func(e *tools.Entry) { e.Parameters = json.RawMessage(`[1]`) }, "JSON Schema object"},
		{"parameters with an invalid keyword value", func(e *tools.Entry) {
			e.Parameters = json.RawMessage(`{"type":"object","properties":{"a":{"type":"numbr"}}}`)
		}, "parameters"},
		{"parameters with an external reference", func(e *tools.Entry) {
			e.Parameters = json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`)
		}, "parameters"},
		{"parameters too large", func(e *tools.Entry) {
			e.Parameters = json.RawMessage(`{"type":"object","description":"` + strings.Repeat("x", tools.MaxParametersSize) + `"}`)
		}, "byte limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := validEntry()
			tt.change(&e)
			err := e.Validate(toolschema.Compile)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate(toolschema.Compile) = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(toolschema.Compile) = nil, want an error mentioning %q", tt.wantErr)
			}
			if !errors.Is(err, tools.ErrInvalidEntry) {
				t.Errorf("error %v does not match ErrInvalidEntry", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestDecodeEntry(t *testing.T) {
	t.Parallel()
	good, err := json.Marshal(validEntry())
	if err != nil {
		t.Fatal(err)
	}
	e, err := tools.DecodeEntry("add", good)
	if err != nil {
		t.Fatalf("DecodeEntry: %v", err)
	}
	if e.Name != "add" || e.Subject != "lion.tool.add" || e.Version != "1.0.0" || string(e.Parameters) != addParams {
		t.Fatalf("decoded %+v", e)
	}

	bad := []struct {
		name, key, value string
	}{
		{"key differs from name", "sum", string(good)},
		{"not JSON", "add", "add"},
		{"unknown field", "add", `{"name":"add","description":"","parameters":{"type":"object"},"subject":"lion.tool.add","extra":1}`},
		{"invalid entry", "add", `{"name":"add","parameters":{"type":"object"},"subject":"lion.tool.>"}`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tools.DecodeEntry(tt.key, []byte(tt.value)); !errors.Is(err, tools.ErrInvalidEntry) {
				t.Fatalf("DecodeEntry = %v, want ErrInvalidEntry", err)
			}
		})
	}
}

func ExampleDecodeEntry() {
	value := []byte(`{"name": "add", "description": "Adds two numbers.",
		"parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
		"subject": "lion.tool.add", "version": "1.0.0"}`)
	e, err := tools.DecodeEntry("add", value)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.Name, e.Subject, e.Version)

	_, err = tools.DecodeEntry("add", []byte(`{"name": "add", "parameters": {"type": "object"}, "subject": "lion.tool.*"}`))
	fmt.Println(err)
	// Output:
	// add lion.tool.add 1.0.0
	// tools: invalid registry entry: add: subject "lion.tool.*" must be a literal subject (dot-separated tokens, no wildcards or spaces)
}
