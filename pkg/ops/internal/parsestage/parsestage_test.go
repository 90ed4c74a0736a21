package parsestage

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops/internal/conform"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonrecover"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
	"github.com/lionbus/lionbus/pkg/ops/internal/schema"
	"github.com/lionbus/lionbus/pkg/wire"
)

// mustSpec compiles schema into a parse spec with fuzzy key matching.
func mustSpec(t *testing.T, doc string) *Spec {
	t.Helper()
	v, err := schema.Compile([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return &Spec{Schema: m, Validator: v, Fuzzy: true, Threshold: conform.DefaultSimilarityThreshold, Schedule: DefaultSchedule()}
}

// TestParseLocal is the parse stage's local attempt: recovery, key
// matching, lax coercion and validation, without a model
// (docs/decisions.md#reference-a5; 0021-D3-05).
func TestParseLocal(t *testing.T) {
	const answer = `{"type":"object","properties":{"answer":{"type":"integer"}},"required":["answer"],"additionalProperties":false}`
	tests := []struct {
		name   string
		schema string
		text   string
		want   string // the value, compact; or "error:<code>"
	}{
		{"a fenced reply with \"42\" for an integer field is recovered and coerced to 42", answer,
			"Here you go:\n```json\n{\"answer\": \"42\"}\n```", `{"answer":42}`},
		{"integer in a float form", answer, `{"answer": "42.000"}`, `{"answer":42}`},
		{"a fraction is not an integer", answer, `{"answer": "4.2"}`, "error:schema_rejected"},
		{"big integer kept exact", answer, `{"answer": "123456789012345678901234567890"}`, `{"answer":123456789012345678901234567890}`},
		{"key case and a typo (reference A5)",
			`{"type":"object","properties":{"answer":{"type":"string"},"confidence":{"type":"number"}},"required":["answer","confidence"],"additionalProperties":false}`,
			"```json\n{'Answr': 'four', confidance: '0.9', extra: 1,}\n```", `{"answer":"four","confidence":0.9}`},
		{"extras kept when the schema allows them",
			`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`,
			`{"Answer": "x", "note": "y"}`, `{"answer":"x","note":"y"}`},
		{"separators and camel case", `{"type":"object","properties":{"first_name":{"type":"string"},"zipCode":{"type":"string"}},"required":["first_name","zipCode"]}`,
			`{"firstName": "Ada", "zip-code": "75001"}`, `{"first_name":"Ada","zipCode":"75001"}`},
		{"booleans", `{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"boolean"},"c":{"type":"boolean"}},"required":["a","b","c"]}`,
			`{"a": "true", "b": "No", "c": 1}`, `{"a":true,"b":false,"c":true}`},
		{"Python literals", `{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"null"}},"required":["a","b"]}`,
			`{'a': True, 'b': None}`, `{"a":true,"b":null}`},
		{"a single value becomes a list", `{"type":"object","properties":{"tags":{"type":"array","items":{"type":"integer"}}},"required":["tags"]}`,
			`{"tags": "7"}`, `{"tags":[7]}`},
		{"numeric strings for numbers", `{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]}`,
			`{"x": " 3.5 ", "y": "-1e3"}`, `{"x":3.5,"y":-1000}`},
		{"a number is never turned into a string", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
			`{"a": 4}`, "error:schema_rejected"},
		{"nested objects and arrays of objects",
			`{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"qty":{"type":"integer"}},"required":["qty"]}}},"required":["items"]}`,
			`{"Items": [{"QTY": "2"}, {"qty": 3}]}`, `{"items":[{"qty":2},{"qty":3}]}`},
		{"local $ref", `{"type":"object","properties":{"p":{"$ref":"#/$defs/point"}},"required":["p"],"$defs":{"point":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}}}`,
			`{"p": {"X": "1"}}`, `{"p":{"x":1}}`},
		{"anyOf of a type and null", `{"type":"object","properties":{"n":{"anyOf":[{"type":"integer"},{"type":"null"}]}},"required":["n"]}`,
			`{"n": "5"}`, `{"n":5}`},
		{"type list", `{"type":"object","properties":{"n":{"type":["integer","null"]}},"required":["n"]}`,
			`{"n": "None"}`, `{"n":null}`},
		{"a top-level array", `{"type":"array","items":{"type":"integer"}}`, "The numbers: [\"1\", 2, \"3\"].", `[1,2,3]`},
		{"a valid value is returned unchanged", `{"type":"object","properties":{"a":{"type":"string"}}}`,
			`{"A": 1}`, `{"A":1}`},
		{"the first candidate that validates", answer, "```json\n{\"other\": 1}\n```\n```json\n{\"answer\": 3}\n```", `{"answer":3}`},
		{"no JSON", answer, "The answer is forty-two.", "error:extraction_failed"},
		{"JSON that does not fit", answer, `{"question": "what?"}`, "error:schema_rejected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, fail := mustSpec(t, tt.schema).Local(tt.text)
			if c, ok := strings.CutPrefix(tt.want, "error:"); ok {
				if fail == nil || string(fail.Code) != c {
					t.Fatalf("local = %s, %v; want a %s failure", jsonval.Compact(v), fail, c)
				}
				return
			}
			if fail != nil {
				t.Fatalf("local failed: %v", fail)
			}
			if got := jsonval.Compact(v); got != tt.want {
				t.Errorf("value = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestParseLocal_fuzzy_off: without fuzzy matching only exact keys match;
// values are still coerced.
func TestParseLocal_fuzzy_off(t *testing.T) {
	p := mustSpec(t, `{"type":"object","properties":{"answer":{"type":"integer"}},"required":["answer"]}`)
	p.Fuzzy = false
	if _, fail := p.Local(`{"Answer": "1"}`); fail == nil || fail.Code != wire.CodeSchemaRejected {
		t.Fatalf("fuzzy off matched Answer: %v", fail)
	}
	if v, fail := p.Local(`{"answer": "1"}`); fail != nil || jsonval.Compact(v) != `{"answer":1}` {
		t.Fatalf("exact key with coercion: %s, %v", jsonval.Compact(v), fail)
	}
}

// TestParseFailure_messages: the two failures are distinct errors, and
// their messages quote at most 200 characters of the text.
func TestParseFailure_messages(t *testing.T) {
	p := mustSpec(t, `{"type":"object","required":["a"]}`)
	long := strings.Repeat("x", 1000)
	_, fail := p.Local(long)
	if fail == nil || fail.Code != wire.CodeExtraction || !errors.Is(fail, jsonrecover.ErrNoJSON) || errors.Is(fail, ErrSchemaRejected) {
		t.Fatalf("no JSON: %v", fail)
	}
	msg := fail.AsError(2).Message
	if strings.Contains(msg, strings.Repeat("x", MaxQuotedText+1)) || !strings.Contains(msg, strings.Repeat("x", MaxQuotedText)) {
		t.Fatalf("message does not quote exactly the first %d characters: %s", MaxQuotedText, msg)
	}
	if !strings.Contains(msg, "after 2 reformat round(s)") {
		t.Fatalf("message does not say how many rounds ran: %s", msg)
	}
	_, fail = p.Local(`{"b": 1} ` + long)
	if fail == nil || fail.Code != wire.CodeSchemaRejected || !errors.Is(fail, ErrSchemaRejected) || errors.Is(fail, jsonrecover.ErrNoJSON) {
		t.Fatalf("rejected: %v", fail)
	}
	if e := fail.AsError(0); e.Code != wire.CodeSchemaRejected || !strings.Contains(e.Message, "missing property 'a'") || len(e.Message) > 1200 {
		t.Fatalf("rejection message: %s", e.Message)
	}
}

// TestSchedule: ADR-0022 D1's default waits, the cap and the bounds.
func TestSchedule(t *testing.T) {
	// ADR-0022 D1 (make_parse_param): first delay 1 s, backoff 1.85.
	s := DefaultSchedule()
	var got []string
	for k := 1; k <= 5; k++ {
		got = append(got, s.Wait(k).Round(10e6).String())
	}
	if strings.Join(got, " ") != "1s 1.85s 3.42s 6.33s 11.71s" {
		t.Fatalf("default waits = %v", got)
	}
	zero, one, big := 0.0, 1.0, 4.0
	s, err := NewSchedule(&one, &big)
	if err != nil || s.Wait(4) != 30e9 {
		t.Fatalf("waits are capped at MaxWait: %v, %v", s.Wait(4), err)
	}
	if s, err := NewSchedule(&zero, nil); err != nil || s.Wait(3) != 0 {
		t.Fatalf("delay 0: %v, %v", s.Wait(3), err)
	}
	for _, bad := range [][2]float64{{-1, 1.85}, {11, 1.85}, {1, 0.5}, {1, 5}} {
		if _, err := NewSchedule(&bad[0], &bad[1]); err == nil || err.(*wire.Error).Code != wire.CodeInvalidRequest {
			t.Errorf("NewSchedule(%v) = %v, want invalid_request", bad, err)
		}
	}
}
