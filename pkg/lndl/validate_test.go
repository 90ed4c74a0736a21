package lndl

import (
	"encoding/json"
	"errors"
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
