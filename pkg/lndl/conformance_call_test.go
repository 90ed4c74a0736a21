package lndl

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestConformanceCall runs every vector of call.jsonl through ParseCall.
func TestConformanceCall(t *testing.T) {
	vectors := loadVectors(t, "call")
	if len(vectors) == 0 {
		t.Fatal("no call vectors")
	}
	for _, v := range vectors {
		t.Run(v.ID, func(t *testing.T) {
			var in struct {
				Body  string `json:"body"`
				Alias string `json:"alias"`
			}
			if err := json.Unmarshal(v.Input, &in); err != nil {
				t.Fatalf("input: %v", err)
			}
			expect := decodeJSON(t, v.Expect)
			got, err := ParseCall(in.Alias, in.Body)
			if want, isErr := expectedError(expect); isErr {
				if err == nil {
					t.Fatalf("ParseCall(%q) = %+v, want error %v", in.Body, got, want["message"])
				}
				var ice *InvalidConstructorError
				if !errors.As(err, &ice) || ice.Alias != in.Alias || ice.Body != in.Body {
					t.Errorf("error %#v does not carry alias %q and body %q", err, in.Alias, in.Body)
				}
				matchError(t, err, want)
				return
			}
			if err != nil {
				t.Fatalf("ParseCall(%q): %v", in.Body, err)
			}
			gotJSON := map[string]any{"function": got.Function, "arguments": got.Arguments}
			if d := jsonDiff(gotJSON, expect); d != "" {
				t.Errorf("ParseCall(%q): %s", in.Body, d)
			}
		})
	}
}
