package schemas_test

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/schemas"
)

func TestCompile_every_embedded_schema(t *testing.T) {
	t.Parallel()
	if err := schemas.Compile(); err != nil {
		t.Fatalf("Compile: %v", err)
	}
	types := schemas.Types()
	if !slices.Contains(types, "lionbus.error") {
		t.Fatalf("Types() = %v, missing lionbus.error", types)
	}
	if !slices.IsSorted(types) {
		t.Errorf("Types() not sorted: %v", types)
	}
	for _, typ := range types {
		if !schemas.Has(typ) {
			t.Errorf("Has(%q) = false for a listed type", typ)
		}
		raw, ok := schemas.Schema(typ)
		if !ok || !json.Valid(raw) {
			t.Errorf("Schema(%q) = %d bytes, ok %v", typ, len(raw), ok)
		}
		if !strings.HasPrefix(typ, "lionbus.") {
			t.Errorf("Types() lists %q, not a lionbus type", typ)
		}
	}
}

func TestValidate_error_schema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		data    string
		pointer string // "" with valid true
		valid   bool
	}{
		{"example", `{"code":"invalid_data","message":"data at /instruction: missing","request_id":"r1"}`, "", true},
		{"empty request id", `{"code":"malformed_event","message":"body is not JSON","request_id":""}`, "", true},
		{"missing code", `{"message":"m","request_id":"r1"}`, "", false},
		{"bad code", `{"code":"Not A Code","message":"m","request_id":"r1"}`, "/code", false},
		{"message type", `{"code":"x","message":3,"request_id":"r1"}`, "/message", false},
		{"extra field", `{"code":"x","message":"m","request_id":"r1","other":1}`, "", false},
		{"not an object", `[]`, "", false},
		{"not JSON", `{"code":`, "", false},
		{"trailing garbage", `{"code":"x","message":"m","request_id":"r1"} x`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := schemas.Validate("lionbus.error", []byte(tt.data))
			if tt.valid {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			var ve *schemas.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, schemas.ErrInvalid) {
				t.Fatalf("Validate = %v, want *ValidationError", err)
			}
			if ve.Pointer != tt.pointer || ve.Reason == "" || ve.Type != "lionbus.error" {
				t.Errorf("ValidationError = %+v, want pointer %q and a reason", ve, tt.pointer)
			}
		})
	}
}

func TestValidate_missing_property_reason(t *testing.T) {
	t.Parallel()
	err := schemas.Validate("lionbus.error", []byte(`{"code":"x","request_id":"r"}`))
	var ve *schemas.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(ve.Reason, "missing property 'message'") {
		t.Fatalf("Validate = %v, want a reason naming the missing property", err)
	}
	if !strings.Contains(err.Error(), "lionbus.error") {
		t.Errorf("Error() = %q does not name the type", err)
	}
}

func TestValidate_named_operations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ     string
		data    string
		wantErr error
	}{
		{"lionbus.op.summarize.request", `{"text":"x","n":3}`, nil},
		{"lionbus.op.summarize.request", `"text"`, schemas.ErrInvalid},
		{"lionbus.op..request", `{}`, schemas.ErrUnknownType},
		{"lionbus.op.a.b.request", `{}`, schemas.ErrUnknownType},
		{"lionbus.op.x.result", `{}`, schemas.ErrUnknownType},
		{"lionbus.nosuchverb.request", `{}`, schemas.ErrUnknownType},
		{"op.request", `{}`, schemas.ErrUnknownType},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			t.Parallel()
			err := schemas.Validate(tt.typ, []byte(tt.data))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("Validate(%q, %s) = %v, want %v", tt.typ, tt.data, err, tt.wantErr)
			}
			if got, want := schemas.Has(tt.typ), !errors.Is(tt.wantErr, schemas.ErrUnknownType); got != want {
				t.Errorf("Has(%q) = %v, want %v", tt.typ, got, want)
			}
		})
	}
}

func TestSchema_returns_a_copy(t *testing.T) {
	t.Parallel()
	a, ok := schemas.Schema("lionbus.error")
	if !ok {
		t.Fatal("no lionbus.error schema")
	}
	a[0] = 'X'
	b, _ := schemas.Schema("lionbus.error")
	if b[0] == 'X' {
		t.Error("Schema returned shared bytes")
	}
}

// TestIDPattern_is_the_ops_rule: the schemas state the id rule once
// (ops.defs.json#/$defs/id), as ops.IDPattern, the rule the Go code
// applies; every other id refers to it.
func TestIDPattern_is_the_ops_rule(t *testing.T) {
	var patterns []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if p, ok := e.(string); ok && k == "pattern" && strings.Contains(p, "A-Za-z0-9") {
					patterns = append(patterns, p)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		raw, err := os.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		walk(v)
	}
	if len(patterns) != 1 || patterns[0] != ops.IDPattern {
		t.Fatalf("id patterns in the schemas: %q, want exactly [%q]", patterns, ops.IDPattern)
	}
}
