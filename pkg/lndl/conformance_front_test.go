package lndl

import (
	"encoding/json"
	"testing"
)

// The front-end stages against the conformance vectors: extract, normalize
// and parse. Every vector must pass.

type textInput struct {
	Text string `json:"text"`
}

func decodeTextInput(t *testing.T, v vector) string {
	t.Helper()
	var in textInput
	if err := json.Unmarshal(v.Input, &in); err != nil {
		t.Fatalf("input: %v", err)
	}
	return in.Text
}

func TestConformanceExtract(t *testing.T) {
	vs := loadVectors(t, "extract")
	for _, v := range vs {
		t.Run(v.ID, func(t *testing.T) {
			blocks := Extract(decodeTextInput(t, v))
			got := map[string]any{"blocks": stringsToAny(blocks)}
			want := decodeJSON(t, v.Expect)
			if d := jsonDiff(got, want); d != "" {
				t.Errorf("%s\nnote: %s", d, v.Note)
			}
		})
	}
}

func TestConformanceNormalize(t *testing.T) {
	vs := loadVectors(t, "normalize")
	for _, v := range vs {
		t.Run(v.ID, func(t *testing.T) {
			got := map[string]any{"text": Normalize(decodeTextInput(t, v))}
			want := decodeJSON(t, v.Expect)
			if d := jsonDiff(got, want); d != "" {
				t.Errorf("%s\nnote: %s", d, v.Note)
			}
		})
	}
}

func TestConformanceParse(t *testing.T) {
	vs := loadVectors(t, "parse")
	for _, v := range vs {
		t.Run(v.ID, func(t *testing.T) {
			prog, err := Parse(decodeTextInput(t, v))
			want := decodeJSON(t, v.Expect)
			if we, ok := expectedError(want); ok {
				matchError(t, err, we)
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v\nnote: %s", err, v.Note)
			}
			if d := jsonDiff(programJSON(prog), want); d != "" {
				t.Errorf("%s\nnote: %s", d, v.Note)
			}
		})
	}
}

func stringsToAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// programJSON renders a program in the parse vectors' shape.
func programJSON(p *Program) map[string]any {
	nullable := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	lvars := []any{}
	for _, lv := range p.Lvars {
		lvars = append(lvars, map[string]any{
			"model": nullable(lv.Model), "field": nullable(lv.Field), "alias": lv.Alias,
			"content": lv.Content, "extra_id": nullable(lv.Hint),
		})
	}
	lacts := []any{}
	for _, la := range p.Lacts {
		lacts = append(lacts, map[string]any{
			"model": nullable(la.Model), "field": nullable(la.Field), "alias": la.Alias,
			"call": la.Call, "extra_id": nullable(la.Hint),
		})
	}
	var out any
	if p.Out != nil {
		pairs := []any{}
		for _, f := range p.Out.Fields(p.DefaultBinding()) {
			pairs = append(pairs, []any{f.Key, valueJSON(f.Value, true)})
		}
		out = pairs
	}
	return map[string]any{"lvars": lvars, "lacts": lacts, "out": out}
}

// valueJSON renders an OUT value as the parse vectors do: at the top level
// a string literal is a plain string; inside lists a reference is a plain
// string and a string literal {"str": ...}.
func valueJSON(v Value, top bool) any {
	switch v.Kind {
	case ValueNull:
		return nil
	case ValueBool:
		return v.Bool
	case ValueInt, ValueFloat:
		return json.Number(v.Text)
	case ValueString:
		if top {
			return v.Text
		}
		return map[string]any{"str": v.Text}
	case ValueRef:
		return v.Text
	case ValueList:
		items := make([]any, len(v.List))
		for i, it := range v.List {
			items[i] = valueJSON(it, false)
		}
		return items
	}
	return map[string]any{"unknown kind": int(v.Kind)}
}

// TestConformanceRoundFrontEnd runs the front end of a round (docs/lndl.md#rounds,
// steps 1-2) over the round vectors: a response whose expected
// outcome is a ParseError must fail with that error and position; every
// other response with a lndl block must parse.
func TestConformanceRoundFrontEnd(t *testing.T) {
	vs := loadVectors(t, "round")
	parseErrors := 0
	for _, v := range vs {
		t.Run(v.ID, func(t *testing.T) {
			var in struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(v.Input, &in); err != nil {
				t.Fatal(err)
			}
			var exp struct {
				ErrorClass     *string      `json:"error_class"`
				ErrorSubstring string       `json:"error_substring"`
				ErrorLine      *json.Number `json:"error_line"`
				ErrorColumn    *json.Number `json:"error_column"`
			}
			if err := json.Unmarshal(v.Expect, &exp); err != nil {
				t.Fatal(err)
			}
			blocks := Extract(in.Text)
			if len(blocks) == 0 {
				return
			}
			_, err := Parse(NormalizeBlock(joinBlocks(blocks)))
			if exp.ErrorClass != nil && *exp.ErrorClass == "ParseError" {
				parseErrors++
				want := map[string]any{"class": "ParseError", "substring": exp.ErrorSubstring}
				if exp.ErrorLine != nil {
					want["line"] = *exp.ErrorLine
				}
				if exp.ErrorColumn != nil {
					want["column"] = *exp.ErrorColumn
				}
				matchError(t, err, want)
				return
			}
			if err != nil {
				t.Errorf("Parse: %v (expected outcome has no parse error)", err)
			}
		})
	}
	if parseErrors == 0 {
		t.Error("no round vector expects a ParseError; the check tested nothing")
	}
}

func joinBlocks(blocks []string) string {
	out := ""
	for i, b := range blocks {
		if i > 0 {
			out += "\n\n"
		}
		out += b
	}
	return out
}
