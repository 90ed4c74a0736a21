package lndl

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestValidate_pydantic replays testdata/validate_pydantic.jsonl (see
// testdata/validate_pydantic_gen.py): 1500 inputs for one target model,
// with what pydantic's lax validation returned. The outcome, the value
// and the list of failures (loc and type, in any order) must be the same.
func TestValidate_pydantic(t *testing.T) {
	lines := readJSONLines(t, "testdata/validate_pydantic.jsonl")
	if len(lines) == 0 {
		t.Fatal("empty file")
	}
	var head struct {
		Schema json.RawMessage `json:"schema"`
	}
	if err := json.Unmarshal(lines[0], &head); err != nil {
		t.Fatal(err)
	}
	tg, err := ParseTarget(head.Schema)
	if err != nil {
		t.Fatal(err)
	}
	cases, failures := 0, 0
	for _, line := range lines[1:] {
		cases++
		var c struct {
			Input  json.RawMessage `json:"input"`
			OK     bool            `json:"ok"`
			Value  json.RawMessage `json:"value"`
			Errors json.RawMessage `json:"errors"`
		}
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatal(err)
		}
		in, err := DecodeJSON(c.Input)
		if err != nil {
			t.Fatal(err)
		}
		got, verr := tg.Validate(in)
		var msg string
		switch {
		case c.OK && verr != nil:
			msg = "pydantic accepts it; Validate: " + verr.Error()
		case !c.OK && verr == nil:
			msg = fmt.Sprintf("pydantic rejects it (%s); Validate gives %s", c.Errors, compactJSON(got))
		case c.OK:
			msg = jsonDiff(got, decodeJSON(t, c.Value))
		default:
			var ve *ValidationError
			if !errors.As(verr, &ve) {
				msg = "not a *ValidationError: " + verr.Error()
				break
			}
			var gotIssues, wantIssues []string
			for _, is := range ve.Issues {
				gotIssues = append(gotIssues, compactJSON(map[string]any{"loc": is.Loc, "type": is.Type}))
			}
			var want []struct {
				Loc  []any  `json:"loc"`
				Type string `json:"type"`
			}
			if err := json.Unmarshal(c.Errors, &want); err != nil {
				t.Fatal(err)
			}
			for _, w := range want {
				for i, p := range w.Loc {
					if f, ok := p.(float64); ok {
						w.Loc[i] = int(f)
					}
				}
				wantIssues = append(wantIssues, compactJSON(map[string]any{"loc": w.Loc, "type": w.Type}))
			}
			slices.Sort(gotIssues)
			slices.Sort(wantIssues)
			if !slices.Equal(gotIssues, wantIssues) {
				msg = fmt.Sprintf("issues %v, pydantic %v", gotIssues, wantIssues)
			}
		}
		if msg != "" {
			failures++
			if failures <= 20 {
				t.Errorf("%s: %s", c.Input, msg)
			}
		}
	}
	if cases != 1500 {
		t.Errorf("%d cases, want 1500", cases)
	}
	if failures > 0 {
		t.Errorf("%d of %d cases differ from pydantic", failures, cases)
	}
}
