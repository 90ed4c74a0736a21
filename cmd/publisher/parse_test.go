package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPublisher_parse(t *testing.T) {
	url := startWorker(t, "lion")
	dir := t.TempDir()
	format := filepath.Join(dir, "n.json")
	if err := os.WriteFile(format, []byte(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	textFile := filepath.Join(dir, "reply.txt")
	if err := os.WriteFile(textFile, []byte("Here:\n```json\n{\"N\": \"42\"}\n```\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := []string{"--nats", url}
	if code, _, stderr := call(t, "", append(n, "branch", "create", "--id", "p1", "--chat-model", `{"provider":"scripted","replies":["{\"n\": 5}"]}`)...); code != exitOK {
		t.Fatalf("create: %d %s", code, stderr)
	}
	steps := []step{
		{name: "a fenced \"42\" coerced to 42", args: append(n, "parse", "p1", "--text-file", textFile, "--response-format", format),
			wantOut: []string{`"n": 42`}},
		{name: "as JSON", args: append(n, "--json", "parse", "--branch", "p1", "--text", `{'n': '7'}`, "--response-format", format),
			wantOut: []string{`"value": {`, `"n": 7`, `"branch_id": "p1"`}},
		{name: "a reformat round", args: append(n, "parse", "p1", "--text", "five", "--response-format", format, "--retry-initial-delay", "0"),
			wantOut: []string{`"n": 5`}},
		{name: "extraction failure", args: append(n, "parse", "p1", "--text", "five", "--response-format", format, "--max-retries", "0"),
			wantCode: exitFailed, wantErr: []string{"error: extraction_failed:", `text: "five"`}},
		{name: "schema rejection", args: append(n, "parse", "p1", "--text", `{"n": "five"}`, "--response-format", format, "--max-retries", "0", "--no-fuzzy-match"),
			wantCode: exitFailed, wantErr: []string{"error: schema_rejected:"}},
		{name: "return_none", args: append(n, "parse", "p1", "--text", "five", "--response-format", format, "--max-retries", "0", "--handle-validation", "return_none"),
			wantOut: []string{"null\n"}},
		{name: "a bad threshold", args: append(n, "parse", "p1", "--text", "{}", "--response-format", format, "--similarity-threshold", "0.1"),
			wantCode: exitFailed, wantErr: []string{"error: invalid_data:"}},
		{name: "text from --data", stdin: `{"text": "{\"n\": 1}"}`, args: append(n, "parse", "p1", "--data", "-", "--response-format", format),
			wantOut: []string{`"n": 1`}},
		{name: "no text", args: append(n, "parse", "p1", "--response-format", format),
			wantCode: exitUsage, wantErr: []string{"parse needs --text"}},
		{name: "no schema", args: append(n, "parse", "p1", "--text", "x"),
			wantCode: exitUsage, wantErr: []string{"parse needs --response-format"}},
		{name: "two texts", args: append(n, "parse", "p1", "--text", "x", "--text-file", textFile, "--response-format", format),
			wantCode: exitUsage, wantErr: []string{"not both"}},
	}
	for _, s := range steps {
		code, stdout, stderr := call(t, s.stdin, s.args...)
		s.check(t, code, stdout, stderr)
	}
}
