package lndl

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzValidate checks, for any JSON input, that Target.Validate never
// panics, fails only with a *ValidationError listing at least one issue,
// and that a validated value is a fixed point: validating it again gives
// the same value. Against the same schema without its constraints, which
// is structural, it checks that skipping the schema validator, as
// Validate does there, gives the values and issues running it gives.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{
		`{"s": "a", "i": " 42 ", "f": "0.5", "b": "yes"}`,
		`{"s": "a", "i": 1, "f": 1, "b": true, "items": [{"name": "n", "score": "1"}], "scores": {"k": "2"}}`,
		`{"s": 1, "i": "1e3", "f": "inf", "b": 2, "opt": "11", "either": [1], "level": "9", "strict": {"x": 1, "y": 2}}`,
		`{"s": "a", "i": 2.0, "f": 1e400, "b": 0, "tags": "[\"x\"]", "anything": {"k": [null]}}`,
		`[1, 2]`,
		`null`,
	} {
		f.Add(seed)
	}
	tg := mustTarget(f, validateSchema)
	var schema any
	if err := json.Unmarshal([]byte(validateSchema), &schema); err != nil {
		f.Fatal(err)
	}
	raw, err := json.Marshal(stripConstraints(schema))
	if err != nil {
		f.Fatal(err)
	}
	st := mustTarget(f, string(raw))
	if !st.compiledSchema().structural {
		f.Fatal("validateSchema without its constraints is not structural")
	}
	f.Fuzz(func(t *testing.T, input string) {
		in, err := DecodeJSON([]byte(input))
		if err != nil {
			return
		}
		compareValidatePaths(t, st, in)
		got, err := tg.Validate(in)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Issues) == 0 {
				t.Fatalf("Validate(%s): %v", input, err)
			}
			return
		}
		again, err := tg.Validate(got)
		if err != nil {
			t.Fatalf("Validate(%s) = %s, which does not validate: %v", input, compactJSON(got), err)
		}
		if d := jsonDiff(again, got); d != "" {
			t.Fatalf("Validate(%s) = %s, validated again: %s", input, compactJSON(got), d)
		}
	})
}
