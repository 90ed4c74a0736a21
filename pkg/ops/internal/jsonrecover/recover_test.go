package jsonrecover

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRecoverJSON(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string // the values, compact, in order
		err  error
	}{
		{"whole text", `{"a": 1}`, []string{`{"a":1}`}, nil},
		{"fenced block", "Sure:\n```json\n{\"a\": 1}\n```\nbye", []string{`{"a":1}`}, nil},
		{"two fences", "```json\n{\"a\":1}\n```\n```json\n[2]\n```", []string{`{"a":1}`, `[2]`}, nil},
		{"unlabelled fence", "```\n{\"a\":1}\n```", []string{`{"a":1}`}, nil},
		{"other info string", "```jsonc\n{\"a\":1}\n```", []string{`{"a":1}`}, nil},
		{"trailing comma and single quotes", "```json\n{'Answr': 'four', confidance: 0.9, extra: 1,}\n```", []string{`{"Answr":"four","confidance":0.9,"extra":1}`}, nil},
		{"missing closers", `{"a": [1, 2`, []string{`{"a":[1,2]}`}, nil},
		{"apostrophe inside double quotes", `{"a": "it's"}`, []string{`{"a":"it's"}`}, nil},
		{"object amid prose", `Sure! Here it is: {"a": 1} Hope that helps.`, []string{`{"a":1}`}, nil},
		{"array amid prose", `The list is [1, 2, 3].`, []string{`[1,2,3]`}, nil},
		{"bracketed word before the object", `[note] the answer: {"a": {"b": [1]}} (done)`, []string{`{"a":{"b":[1]}}`}, nil},
		{"brace inside a string amid prose", `ok: {"a": "}{"} end`, []string{`{"a":"}{"}`}, nil},
		{"Python literals", `{'a': True, 'b': False, 'c': None}`, []string{`{"a":true,"b":false,"c":null}`}, nil},
		{"Python literals stay in strings", `{"a": "True None"}`, []string{`{"a":"True None"}`}, nil},
		{"line comments", "{\n  \"a\": 1, // one\n  # two\n  \"b\": 2\n}", []string{`{"a":1,"b":2}`}, nil},
		{"block comment", `{"a": /* the answer */ 42}`, []string{`{"a":42}`}, nil},
		{"comment marker in a string", `{"url": "http://x.org/#top"}`, []string{`{"url":"http://x.org/#top"}`}, nil},
		{"trailing comma before a comment", "{\"a\": 1, // last\n}", []string{`{"a":1}`}, nil},
		{"doubled and leading commas", `[, 1,, 2, ]`, []string{`[1,2]`}, nil},
		{"unquoted keys", `{name: "x", first-name: "y", $ref: 1}`, []string{`{"$ref":1,"first-name":"y","name":"x"}`}, nil},
		{"escaped single quote", `{'a': 'it\'s'}`, []string{`{"a":"it's"}`}, nil},
		{"double quote in single quotes", `{'a': 'say "hi"'}`, []string{`{"a":"say \"hi\""}`}, nil},
		{"raw newline in a string", "{\"a\": \"line one\nline two\"}", []string{`{"a":"line one\nline two"}`}, nil},
		{"unknown escape", `{"a": "C:\dir"}`, []string{`{"a":"C:\\dir"}`}, nil},
		{"wrong closing bracket", `{"a": [1, 2}`, []string{`{"a":[1,2]}`}, nil},
		{"key without a value", `{"a": 1, "b": `, []string{`{"a":1,"b":null}`}, nil},
		{"unterminated string", `{"a": "abc`, []string{`{"a":"abc"}`}, nil},
		{"no json", "just words", nil, ErrNoJSON},
		{"scalar is not extracted", "42", nil, ErrNoJSON},
		{"brackets that are not JSON", "see [1) and {x", nil, ErrNoJSON},
		{"empty fence", "```\n```", nil, ErrNoJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Recover(tt.text)
			if tt.err != nil {
				if err != tt.err {
					t.Fatalf("err = %v, want %v (values %v)", err, tt.err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gotJSON []string
			for _, v := range got {
				gotJSON = append(gotJSON, compactJSON(v))
			}
			if strings.Join(gotJSON, " ") != strings.Join(tt.want, " ") {
				t.Errorf("values = %s, want %s", gotJSON, tt.want)
			}
		})
	}
}

func TestRecoverJSON_bounds(t *testing.T) {
	big := strings.Repeat(" ", MaxBytes) + `{"a":1}`
	if _, err := Recover(big); !errors.Is(err, ErrNoJSON) || err == ErrNoJSON {
		t.Fatalf("oversized text: err = %v, want an error wrapping ErrNoJSON", err)
	}
	// Many unclosed brackets: the number of segments tried is bounded.
	if _, err := Recover(strings.Repeat("[x ", 10000)); err != ErrNoJSON {
		t.Fatalf("unclosed brackets: err = %v", err)
	}
	// Closing brackets with nothing of their kind open are dropped, at any
	// count, without rescanning what is open.
	s := strings.Repeat("[", 5000) + strings.Repeat("}", 5000)
	if got := Repair(s); got != strings.Repeat("[", 5000)+strings.Repeat("]", 5000) {
		t.Fatalf("Repair of unmatched closers: %.40s...", got)
	}
}

// compactJSON encodes v as compact JSON, HTML characters unescaped.
func compactJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimRight(buf.String(), "\n")
}
