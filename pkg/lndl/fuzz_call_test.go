package lndl

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"
)

// FuzzParseCall checks that ParseCall never panics, that every failure is
// an *InvalidConstructorError for the given alias and body, and that every
// success is JSON-compatible and survives a round trip: the arguments
// written back as a call (JSON literals are Python literals too, with
// true/false/null accepted) parse to the same Call. The seed corpus in
// testdata/fuzz/FuzzParseCall holds the bodies of the call vectors.
func FuzzParseCall(f *testing.F) {
	f.Add(`search(query="AI", limit=5)`)
	f.Add(`svc.fn(a="x", b=0, c='y z',d=12345)`)
	f.Fuzz(func(t *testing.T, body string) {
		got, err := ParseCall("a", body)
		if err != nil {
			var ice *InvalidConstructorError
			if !errors.As(err, &ice) || ice.Alias != "a" || ice.Body != body || ice.Err == nil {
				t.Fatalf("ParseCall(%q): error %#v", body, err)
			}
			if !errors.Is(err, ErrLNDL) {
				t.Fatalf("ParseCall(%q): error %v is not an ErrLNDL", body, err)
			}
			return
		}
		if got.Function == "" || got.Arguments == nil {
			t.Fatalf("ParseCall(%q) = %+v", body, got)
		}
		raw, err := json.Marshal(got.Arguments)
		if err != nil {
			t.Fatalf("ParseCall(%q): arguments are not JSON: %v", body, err)
		}
		decoded, err := decodeNumbered(raw)
		if err != nil {
			t.Fatalf("ParseCall(%q): arguments JSON %s does not decode: %v", body, raw, err)
		}
		if d := diffAt("$", decoded, normalizeForDiff(t, got.Arguments)); d != "" {
			t.Fatalf("ParseCall(%q): JSON round trip differs: %s", body, d)
		}
		again := writeCall(t, got)
		back, err := ParseCall("a", again)
		if err != nil {
			t.Fatalf("ParseCall(%q) = %+v, but its rewrite %q fails: %v", body, got, again, err)
		}
		if back.Function != got.Function || !jsonEqual(back.Arguments, got.Arguments) {
			t.Fatalf("ParseCall(%q) = %+v, its rewrite %q gives %+v", body, got, again, back)
		}
	})
}

// normalizeForDiff returns v unchanged after checking it holds only the
// documented argument types.
func normalizeForDiff(t *testing.T, v any) any {
	t.Helper()
	switch x := v.(type) {
	case nil, bool, string, json.Number:
	case []any:
		for _, e := range x {
			normalizeForDiff(t, e)
		}
	case map[string]any:
		for _, e := range x {
			normalizeForDiff(t, e)
		}
	default:
		t.Fatalf("argument value of type %T", v)
	}
	return v
}

// writeCall writes c back as a call body, arguments as keywords in sorted
// order, values as JSON.
func writeCall(t *testing.T, c Call) string {
	t.Helper()
	keys := make([]string, 0, len(c.Arguments))
	for k := range c.Arguments {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(c.Function + "(")
	for _, k := range keys {
		raw, err := json.Marshal(c.Arguments[k])
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(k + "=" + string(raw) + ", ")
	}
	b.WriteString(")")
	return b.String()
}
