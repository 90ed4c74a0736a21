package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// lndlVectorDir is pkg/lndl's copy of the conformance vectors.
const lndlVectorDir = "../../pkg/lndl/testdata/conformance"

type lndlTestVector struct {
	ID     string          `json:"id"`
	Input  json.RawMessage `json:"input"`
	Expect json.RawMessage `json:"expect"`
}

func lndlLoadVectors(t *testing.T, stage string) []lndlTestVector {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(lndlVectorDir, stage+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []lndlTestVector
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var v lndlTestVector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func lndlDecode(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

// lndlDiff compares two decoded JSON values by the vectors' rules: numbers
// by value, object keys in any order, arrays in order. It returns "" when
// they are equal, else where they first differ.
func lndlDiff(path string, a, b any) string {
	mismatch := func() string {
		ra, _ := json.Marshal(a)
		rb, _ := json.Marshal(b)
		return fmt.Sprintf("%s: %s != %s", path, ra, rb)
	}
	switch x := a.(type) {
	case nil:
		if b != nil {
			return mismatch()
		}
	case bool, string:
		if a != b {
			return mismatch()
		}
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return mismatch()
		}
		rx, okx := new(big.Rat).SetString(string(x))
		ry, oky := new(big.Rat).SetString(string(y))
		if !okx || !oky || rx.Cmp(ry) != 0 {
			return mismatch()
		}
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return mismatch()
		}
		for i := range x {
			if d := lndlDiff(fmt.Sprintf("%s[%d]", path, i), x[i], y[i]); d != "" {
				return d
			}
		}
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return mismatch()
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			yv, ok := y[k]
			if !ok {
				return mismatch()
			}
			if d := lndlDiff(path+"."+k, x[k], yv); d != "" {
				return d
			}
		}
	default:
		return fmt.Sprintf("%s: unexpected %T", path, a)
	}
	return ""
}

// lndlCheckError compares an output error object with a vector's: same
// class, message containing the substring, same line and column when the
// vector has them.
func lndlCheckError(got, want map[string]any) string {
	if got == nil {
		return fmt.Sprintf("no error, want %v", want["class"])
	}
	if got["class"] != want["class"] {
		return fmt.Sprintf("class %v, want %v", got["class"], want["class"])
	}
	msg, _ := got["message"].(string)
	if sub, _ := want["substring"].(string); !strings.Contains(msg, sub) {
		return fmt.Sprintf("message %q does not contain %q", msg, sub)
	}
	for _, k := range []string{"line", "column"} {
		if w, ok := want[k]; ok {
			if d := lndlDiff(k, got[k], w); d != "" {
				return d
			}
		}
	}
	return ""
}

// lndlCheckRound compares a round output with a round expect: every key
// by value, the error by class, substring and position, and validation by
// ok and, when ok, value.
func lndlCheckRound(got, want map[string]any) string {
	for _, k := range []string{"outcome", "pending_actions", "assembled", "resolved", "notes", "error_class"} {
		if d := lndlDiff(k, got[k], want[k]); d != "" {
			return d
		}
	}
	if sub, ok := want["error_substring"].(string); ok {
		msg, _ := got["error"].(string)
		if !strings.Contains(msg, sub) {
			return fmt.Sprintf("error %q does not contain %q", msg, sub)
		}
	} else if got["error"] != nil {
		return fmt.Sprintf("unexpected error %v", got["error"])
	}
	for _, k := range []string{"error_line", "error_column"} {
		if w, ok := want[k]; ok {
			if d := lndlDiff(k, got[k], w); d != "" {
				return d
			}
		}
	}
	wv, _ := want["validated"].(map[string]any)
	gv, _ := got["validated"].(map[string]any)
	switch {
	case wv == nil && gv != nil:
		return fmt.Sprintf("validated %v, want null", gv)
	case wv != nil && gv == nil:
		return fmt.Sprintf("validated null, want %v", wv)
	case wv != nil:
		if gv["ok"] != wv["ok"] {
			return fmt.Sprintf("validated ok %v (%v), want %v", gv["ok"], gv["errors"], wv["ok"])
		}
		if wv["ok"] == true {
			if d := lndlDiff("validated.value", gv["value"], wv["value"]); d != "" {
				return d
			}
		}
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			return fmt.Sprintf("key %q missing", k)
		}
	}
	return ""
}

// TestRunLNDL_vectors is the acceptance test of `publisher lndl <stage>
// --vectors`: every vector input of every stage file, fed in one run per
// stage, gives a line matching the vector's expect.
func TestRunLNDL_vectors(t *testing.T) {
	want := map[string]int{"extract": 36, "normalize": 44, "parse": 153, "call": 77, "round": 235, "render": 24}
	for stage, n := range want {
		t.Run(stage, func(t *testing.T) {
			vectors := lndlLoadVectors(t, stage)
			if len(vectors) != n {
				t.Fatalf("%d vectors, want %d", len(vectors), n)
			}
			// Each line the vector's input object, then the vector file
			// piped in as it is (whole vector lines).
			var inputs bytes.Buffer
			for _, v := range vectors {
				inputs.Write(v.Input)
				inputs.WriteByte('\n')
			}
			file, err := os.ReadFile(filepath.Join(lndlVectorDir, stage+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range []struct {
				name  string
				stdin []byte
			}{{"inputs", inputs.Bytes()}, {"vector file", file}} {
				t.Run(in.name, func(t *testing.T) {
					lndlCheckVectorOutput(t, stage, vectors, in.stdin)
				})
			}
		})
	}
}

// lndlCheckVectorOutput runs `lndl <stage> --vectors` on stdin and checks
// one output line per vector against the vector's expect.
func lndlCheckVectorOutput(t *testing.T, stage string, vectors []lndlTestVector, stdin []byte) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := runLNDL(context.Background(), []string{stage, "--vectors"}, bytes.NewReader(stdin), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(lines) != len(vectors) {
		t.Fatalf("%d output lines for %d inputs", len(lines), len(vectors))
	}
	for i, v := range vectors {
		got, _ := lndlDecode(t, []byte(lines[i])).(map[string]any)
		exp := lndlDecode(t, v.Expect).(map[string]any)
		var d string
		switch {
		case stage != "round" && exp["error"] != nil:
			ge, _ := got["error"].(map[string]any)
			d = lndlCheckError(ge, exp["error"].(map[string]any))
		case stage == "round":
			d = lndlCheckRound(got, exp)
		default:
			d = lndlDiff("$", got, exp)
		}
		if d != "" {
			t.Errorf("%s: %s\n got: %s", v.ID, d, lines[i])
		}
	}
}

func TestRunLNDL_vectorInputErrors(t *testing.T) {
	stdin := strings.NewReader("{\"body\": \"fn(x=1)\", \"alias\": \"a\"}\nnot json\n{\"body\": \"fn(\", \"alias\": \"b\"}\n{\"bodyy\": \"fn()\", \"alias\": \"a\"}\n")
	var stdout, stderr bytes.Buffer
	code := runLNDL(context.Background(), []string{"call", "--vectors"}, stdin, &stdout, &stderr)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines: %q", len(lines), stdout.String())
	}
	classes := []string{"", "InputError", "InvalidConstructorError", "InputError"}
	for i, line := range lines {
		got := lndlDecode(t, []byte(line)).(map[string]any)
		e, _ := got["error"].(map[string]any)
		class, _ := e["class"].(string)
		if class != classes[i] {
			t.Errorf("line %d: %s, want class %q", i+1, line, classes[i])
		}
	}
	if !strings.Contains(stderr.String(), "line 2") || !strings.Contains(stderr.String(), "line 4") {
		t.Errorf("stderr does not name the bad lines: %s", stderr.String())
	}
}

func lndlWriteFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunLNDL_roundReport(t *testing.T) {
	target := lndlWriteFile(t, "target.json", `{"properties": {"answer": {"type": "string"}, "count": {"type": "integer"}},
		"required": ["answer", "count"], "title": "A", "type": "object"}`)
	results := lndlWriteFile(t, "results.json", `{"s": "found it"}`)
	notes := lndlWriteFile(t, "notes.json", `{"plan": "step 1"}`)
	executed := lndlWriteFile(t, "executed.json", `{"q": "7"}`)
	tests := []struct {
		name     string
		response string
		args     []string
		code     int
		want     []string
	}{
		{"success validated", "```lndl\n<lact s>search(q=\"x\")</lact>\n<lvar count c>4</lvar>\nOUT{answer: [s], count: [c]}\n```",
			[]string{"--target", target, "--results", results, "--notes", notes}, 0,
			[]string{"outcome: success", "pending actions: none", `"answer": "found it"`, "validation: ok", `"count": 4`, `plan: "step 1"`}},
		{"pending then resolved", "```lndl\n<lact q>count(x=1)</lact>\nOUT{answer: \"a\", count: [q]}\n```",
			[]string{"--target", target, "--executed", executed}, 0,
			[]string{"outcome: success", "pending actions (1):", `q: count {"x":1}`, `"$action"`, "resolved:", "validation: ok", `"count": 7`}},
		{"pending without results", "```lndl\n<lact q>count(x=1)</lact>\nOUT{answer: \"a\", count: [q]}\n```",
			[]string{"--target", target}, 0,
			[]string{"validation: not run, 1 action(s) pending"}},
		{"validation fails", "```lndl\n<lvar c>many</lvar>\nOUT{answer: \"a\", count: [c]}\n```",
			[]string{"--target", target}, 1,
			[]string{"validation: failed (1)", "count: input should be a valid integer, unable to parse string as an integer [int_parsing]"}},
		{"parse error", "```lndl\n<lvar a>never closed\n```", []string{"--target", target}, 1,
			[]string{"outcome: retry", "error: ParseError at line 1, column 9: Unclosed lvar tag - missing </lvar>", "notes: none"}},
		{"continue", "```lndl\n<lact s>search(q=\"x\")</lact>\n```", nil, 0,
			[]string{"outcome: continue", "pending actions (1):", `s: search {"q":"x"}`}},
		{"no block", "just prose", nil, 0, []string{"outcome: continue", "pending actions: none"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runLNDL(context.Background(), append([]string{"round"}, tt.args...), strings.NewReader(tt.response), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr %s", code, tt.code, stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, stdout.String())
				}
			}
		})
	}
}

func TestRunLNDL_singleInput(t *testing.T) {
	schema := lndlWriteFile(t, "t.json", `{"properties": {"a": {"type": "string"}}, "title": "M", "type": "object"}`)
	tests := []struct {
		name  string
		args  []string
		stdin string
		code  int
		want  string
	}{
		{"call", []string{"call", "--alias", "s1"}, `svc.fn(x=[1, 2])`, 0, `"function": "svc.fn"`},
		{"call error", []string{"call", "--alias", "s1"}, `fn(`, 1, `"message": "lact 's1' body is not a parseable function call: 'fn('`},
		{"extract", []string{"extract"}, "```lndl\nx\n```", 0, `"x\n"`},
		{"normalize", []string{"normalize"}, "{lvar a}x{/lvar}", 0, `"text": "<lvar a>x</lvar>"`},
		{"parse", []string{"parse"}, "<lvar a>x</lvar>OUT{r: [a]}", 0, `"alias": "a"`},
		{"render from file", []string{"render", "--target", schema}, "", 0, `"specs": "Specs: a(str)"`},
		{"render from stdin", []string{"render"}, `{"properties": {"n": {"type": "integer"}}, "title": "M", "type": "object"}`, 0, `"specs": "Specs: n(int)"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runLNDL(context.Background(), tt.args, strings.NewReader(tt.stdin), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr %s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.want) {
				t.Errorf("output lacks %q:\n%s", tt.want, stdout.String())
			}
		})
	}
}

func TestRunLNDL_usage(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"no stage", nil, 2, "", "Usage: publisher lndl"},
		{"help", []string{"--help"}, 0, "Usage: publisher lndl", ""},
		{"stage help", []string{"round", "--help"}, 0, "--vectors", ""},
		{"unknown stage", []string{"lex"}, 2, "", `unknown stage "lex"`},
		{"unknown flag", []string{"call", "--bogus"}, 2, "", "flag provided but not defined"},
		{"extra argument", []string{"parse", "file.txt"}, 2, "", `unexpected argument "file.txt"`},
		{"vectors with target", []string{"round", "--vectors", "--target", "x.json"}, 2, "", "cannot be used with --vectors"},
		{"target for parse", []string{"parse", "--target", "x.json"}, 2, "", "apply to round"},
		{"missing target file", []string{"round", "--target", "/nonexistent/x.json"}, 1, "", "/nonexistent/x.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runLNDL(context.Background(), tt.args, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr %s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout lacks %q: %s", tt.stdout, stdout.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr lacks %q: %s", tt.stderr, stderr.String())
			}
		})
	}
}

func TestRunLNDL_canceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := runLNDL(ctx, []string{"extract", "--vectors"}, strings.NewReader("{\"text\": \"x\"}\n"), &stdout, &stderr)
	if code != 1 || stdout.Len() != 0 {
		t.Errorf("canceled run: exit %d, output %q", code, stdout.String())
	}
}

func TestLNDLUnescapeHTML(t *testing.T) {
	tests := []struct{ in, want string }{
		{`"\u003clvar a\u003e \u0026"`, `"<lvar a> &"`},
		{`"\\u003c stays"`, `"\\u003c stays"`},
		{`"\\\u003c"`, `"\\<"`},
		{`"\u2028 \n"`, `"\u2028 \n"`},
		{`"plain"`, `"plain"`},
	}
	for _, tt := range tests {
		if got := string(lndlUnescapeHTML([]byte(tt.in))); got != tt.want {
			t.Errorf("lndlUnescapeHTML(%s) = %s, want %s", tt.in, got, tt.want)
		}
		var a, b string
		if err := json.Unmarshal([]byte(tt.in), &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(tt.want), &b); err != nil || a != b {
			t.Errorf("%s and %s decode differently (%q, %q, %v)", tt.in, tt.want, a, b, err)
		}
	}
}

func TestRunLNDL_vectorOfAnotherStage(t *testing.T) {
	line := `{"id": "x", "stage": "extract", "input": {"text": "a"}, "expect": {"blocks": []}}` + "\n"
	var stdout, stderr bytes.Buffer
	code := runLNDL(context.Background(), []string{"normalize", "--vectors"}, strings.NewReader(line), &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	got := lndlDecode(t, stdout.Bytes()).(map[string]any)
	e, _ := got["error"].(map[string]any)
	if e["class"] != "InputError" || !strings.Contains(fmt.Sprint(e["message"]), `stage "extract" given to stage "normalize"`) {
		t.Fatalf("output %s", stdout.String())
	}
}
