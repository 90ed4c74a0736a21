package lndl

// Shared conformance harness for every stage test in this package.
//
// The vector files live in testdata/conformance (a verbatim copy of the
// shared suite; TestConformanceCopyIsIdentical guards the copy). Helpers:
//
//   - loadVectors(t, "round") []vector: every line of testdata/conformance/
//     round.jsonl, in file order. Each vector keeps Input and Expect as
//     json.RawMessage; decode them with decodeJSON (UseNumber) or
//     json.Unmarshal into your own struct.
//   - decodeJSON(t, raw) any: decodes raw JSON with UseNumber, so numbers
//     are json.Number (exact, big integers included).
//   - jsonEqual(a, b any) bool: deep equality of two JSON values per the
//     vectors' README: numbers by numeric value (2 == 2.0, integers wider
//     than 64 bits exact), object key order ignored, array order kept. Any
//     Go value that encoding/json can marshal is accepted (it is marshalled
//     and decoded again first), so your own ordered-map types work if they
//     implement json.Marshaler.
//   - jsonDiff(a, b any) string: "" when jsonEqual, else a short
//     description of the first difference (path and both values).
//   - errorClass(err) string: "ParseError", "MissingLvarError", ... or ""
//     for a non-LNDL error (found with errors.As).
//   - matchError(t, got, want) bool (t is a testing.TB or any reporter): want is the decoded error object of a
//     vector ({"class", "message", "substring", "line", "column"}); checks
//     the class, that got's message contains substring, and for a
//     ParseError the line and column when the vector carries them. Reports
//     failures with t.Errorf and returns whether everything matched.
//   - expectedError(expect any) (map[string]any, bool): the "error" object
//     of a decoded expect, if it has one.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// conformanceDir is the package's copy of the shared vectors.
const conformanceDir = "testdata/conformance"

// sharedConformanceDir is the shared suite, the repository's sibling
// directory shared/ seen from the package directory.
const sharedConformanceDir = "../../../shared/conformance/lndl"

// vector is one line of a stage file.
type vector struct {
	ID        string          `json:"id"`
	Stage     string          `json:"stage"`
	Input     json.RawMessage `json:"input"`
	Expect    json.RawMessage `json:"expect"`
	Note      string          `json:"note"`
	Deviation []string        `json:"deviation,omitempty"`
}

// loadVectors reads testdata/conformance/<stage>.jsonl.
func loadVectors(t testing.TB, stage string) []vector {
	t.Helper()
	path := filepath.Join(conformanceDir, stage+".jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read vectors: %v", err)
	}
	var out []vector
	seen := make(map[string]bool)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		var v vector
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s:%d: %v", path, lineNo, err)
		}
		if v.Stage != stage {
			t.Fatalf("%s:%d: stage %q, want %q", path, lineNo, v.Stage, stage)
		}
		if seen[v.ID] {
			t.Fatalf("%s:%d: duplicate id %q", path, lineNo, v.ID)
		}
		seen[v.ID] = true
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

// decodeJSON decodes raw with UseNumber.
func decodeJSON(t testing.TB, raw json.RawMessage) any {
	t.Helper()
	v, err := decodeNumbered(raw)
	if err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

func decodeNumbered(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}

// canonicalJSON turns any marshalable Go value into the shapes decodeJSON
// produces (map[string]any, []any, json.Number, string, bool, nil).
func canonicalJSON(v any) (any, error) {
	switch v.(type) {
	case nil, string, bool, json.Number:
		return v, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeNumbered(raw)
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b any) bool { return jsonDiff(a, b) == "" }

// jsonDiff describes the first difference between a and b, or returns "".
func jsonDiff(a, b any) string {
	ca, err := canonicalJSON(a)
	if err != nil {
		return fmt.Sprintf("left value not JSON: %v", err)
	}
	cb, err := canonicalJSON(b)
	if err != nil {
		return fmt.Sprintf("right value not JSON: %v", err)
	}
	return diffAt("$", ca, cb)
}

func diffAt(path string, a, b any) string {
	mismatch := func() string {
		return fmt.Sprintf("%s: %s != %s", path, compactJSON(a), compactJSON(b))
	}
	switch x := a.(type) {
	case nil:
		if b != nil {
			return mismatch()
		}
	case bool:
		y, ok := b.(bool)
		if !ok || x != y {
			return mismatch()
		}
	case string:
		y, ok := b.(string)
		if !ok || x != y {
			return mismatch()
		}
	case json.Number:
		y, ok := b.(json.Number)
		if !ok || !numbersEqual(x, y) {
			return mismatch()
		}
	case []any:
		y, ok := b.([]any)
		if !ok {
			return mismatch()
		}
		if len(x) != len(y) {
			return fmt.Sprintf("%s: length %d != %d: %s != %s", path, len(x), len(y), compactJSON(a), compactJSON(b))
		}
		for i := range x {
			if d := diffAt(fmt.Sprintf("%s[%d]", path, i), x[i], y[i]); d != "" {
				return d
			}
		}
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return mismatch()
		}
		keys := make([]string, 0, len(x)+len(y))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, ok := x[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			xv, xok := x[k]
			yv, yok := y[k]
			if !xok || !yok {
				return fmt.Sprintf("%s: key %q present on one side only: %s != %s", path, k, compactJSON(a), compactJSON(b))
			}
			if d := diffAt(path+"."+k, xv, yv); d != "" {
				return d
			}
		}
	default:
		return fmt.Sprintf("%s: unexpected type %T", path, a)
	}
	return ""
}

// numbersEqual compares two JSON number texts by value. Exponents are
// bounded so a hostile text cannot make the comparison expensive; beyond
// the bound the texts are compared as written.
func numbersEqual(a, b json.Number) bool {
	if a == b {
		return true
	}
	ra, okA := numberRat(string(a))
	rb, okB := numberRat(string(b))
	if !okA || !okB {
		return false
	}
	return ra.Cmp(rb) == 0
}

func numberRat(s string) (*big.Rat, bool) {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp := strings.TrimLeft(s[i+1:], "+-")
		if len(exp) > 5 {
			return nil, false
		}
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

func compactJSON(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(raw)
}

// errorClass names the LNDL error class of err, or "" when it has none.
func errorClass(err error) string {
	var pe *ParseError
	var mle *MissingLvarError
	var mfe *MissingFieldError
	var tme *TypeMismatchError
	var ice *InvalidConstructorError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &pe):
		return "ParseError"
	case errors.As(err, &mle):
		return "MissingLvarError"
	case errors.As(err, &mfe):
		return "MissingFieldError"
	case errors.As(err, &tme):
		return "TypeMismatchError"
	case errors.As(err, &ice):
		return "InvalidConstructorError"
	}
	return ""
}

// expectedError returns the "error" object of a decoded expect value.
func expectedError(expect any) (map[string]any, bool) {
	m, ok := expect.(map[string]any)
	if !ok {
		return nil, false
	}
	e, ok := m["error"].(map[string]any)
	return e, ok
}

// reporter is the part of testing.TB that matchError uses.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// errorRecorder is a reporter that only counts failures.
type errorRecorder struct{ failures int }

func (r *errorRecorder) Helper()               {}
func (r *errorRecorder) Errorf(string, ...any) { r.failures++ }

// matchError checks got against a vector's error object.
func matchError(t reporter, got error, want map[string]any) bool {
	t.Helper()
	class, _ := want["class"].(string)
	sub, _ := want["substring"].(string)
	if got == nil {
		t.Errorf("got no error, want %s containing %q", class, sub)
		return false
	}
	ok := true
	if gc := errorClass(got); gc != class {
		t.Errorf("error class %q (%v), want %q", gc, got, class)
		ok = false
	}
	if !errors.Is(got, ErrLNDL) {
		t.Errorf("error %v is not an ErrLNDL", got)
		ok = false
	}
	if !strings.Contains(got.Error(), sub) {
		t.Errorf("error %q does not contain %q", got.Error(), sub)
		ok = false
	}
	var pe *ParseError
	if class == "ParseError" && errors.As(got, &pe) {
		if line, has := want["line"].(json.Number); has {
			if l, err := line.Int64(); err != nil || int64(pe.Line) != l {
				t.Errorf("error line %d, want %s (%v)", pe.Line, line, got)
				ok = false
			}
		}
		if col, has := want["column"].(json.Number); has {
			if c, err := col.Int64(); err != nil || int64(pe.Column) != c {
				t.Errorf("error column %d, want %s (%v)", pe.Column, col, got)
				ok = false
			}
		}
	}
	return ok
}

func TestConformanceCopyIsIdentical(t *testing.T) {
	entries, err := os.ReadDir(sharedConformanceDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			t.Skipf("shared suite %s not present", sharedConformanceDir)
		}
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		n++
		want, err := os.ReadFile(filepath.Join(sharedConformanceDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(conformanceDir, e.Name()))
		if err != nil {
			t.Errorf("%s: missing from %s: %v", e.Name(), conformanceDir, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: copy in %s differs from the shared suite", e.Name(), conformanceDir)
		}
	}
	if n == 0 {
		t.Fatalf("shared suite %s holds no files", sharedConformanceDir)
	}
}

func TestConformanceVectorCounts(t *testing.T) {
	want := map[string]int{
		"extract": 36, "normalize": 44, "parse": 153,
		"call": 77, "round": 235, "render": 24,
	}
	for stage, n := range want {
		vs := loadVectors(t, stage)
		if len(vs) != n {
			t.Errorf("%s: %d vectors, want %d", stage, len(vs), n)
		}
		for _, v := range vs {
			if v.ID == "" || len(v.Input) == 0 || len(v.Expect) == 0 {
				t.Errorf("%s: vector %q lacks id, input or expect", stage, v.ID)
			}
		}
	}
}

func TestJSONEqual(t *testing.T) {
	big1 := json.Number("123456789012345678901234567890")
	tests := []struct {
		name string
		a, b any
		want bool
	}{
		{"int vs float", json.Number("2"), json.Number("2.0"), true},
		{"exponent", json.Number("1e+23"), json.Number("100000000000000000000000"), true},
		{"negative zero", json.Number("-0.0"), json.Number("0"), true},
		{"big int exact", big1, json.Number("123456789012345678901234567890"), true},
		{"big int differs", big1, json.Number("123456789012345678901234567891"), false},
		{"go int vs number", 3, json.Number("3.0"), true},
		{"number vs string", json.Number("3"), "3", false},
		{"key order", map[string]any{"a": 1, "b": 2}, map[string]any{"b": 2, "a": 1}, true},
		{"missing key", map[string]any{"a": 1}, map[string]any{"a": 1, "b": nil}, false},
		{"array order", []any{1, 2}, []any{2, 1}, false},
		{"array length", []any{1}, []any{1, 1}, false},
		{"null vs missing", nil, map[string]any{}, false},
		{"nested", map[string]any{"x": []any{"a", map[string]any{"str": "b"}}}, map[string]any{"x": []any{"a", map[string]any{"str": "b"}}}, true},
		{"bool", true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := jsonEqual(tt.a, tt.b); got != tt.want {
				t.Errorf("jsonEqual(%v, %v) = %v, want %v (%s)", tt.a, tt.b, got, tt.want, jsonDiff(tt.a, tt.b))
			}
		})
	}
}

func TestMatchError(t *testing.T) {
	want := map[string]any{
		"class": "ParseError", "substring": "Unclosed lvar tag",
		"line": json.Number("1"), "column": json.Number("9"),
	}
	if !matchError(t, &ParseError{Line: 1, Column: 9, Reason: "Unclosed lvar tag - missing </lvar>"}, want) {
		t.Fatal("matching error not accepted")
	}
	// A mismatch must be detected: run against a throwaway recorder.
	for _, bad := range []error{
		nil,
		&ParseError{Line: 1, Column: 8, Reason: "Unclosed lvar tag - missing </lvar>"},
		&ParseError{Line: 1, Column: 9, Reason: "something else"},
		&MissingLvarError{Alias: "x"},
		errors.New("Unclosed lvar tag"),
	} {
		rec := &errorRecorder{}
		if matchError(rec, bad, want) || rec.failures == 0 {
			t.Errorf("matchError accepted %v", bad)
		}
	}
}
