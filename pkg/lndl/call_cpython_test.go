package lndl

import (
	"encoding/json"
	"testing"
)

// TestParseCall_cpython replays testdata/call_cpython.jsonl: 4000 random
// lact bodies, half accepted and half rejected by CPython's parser and
// literal rules (see testdata/call_cpython_gen.py), against ParseCall.
func TestParseCall_cpython(t *testing.T) {
	accepted, rejected, failures := 0, 0, 0
	for _, line := range readJSONLines(t, "testdata/call_cpython.jsonl") {
		var c struct {
			OK        bool            `json:"ok"`
			Body      string          `json:"body"`
			Function  string          `json:"function"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatal(err)
		}
		got, err := ParseCall("a", c.Body)
		fail := func(format string, args ...any) {
			failures++
			if failures <= 20 {
				t.Errorf("%q: "+format, append([]any{c.Body}, args...)...)
			}
		}
		switch {
		case !c.OK:
			rejected++
			if err == nil {
				fail("CPython rejects it, ParseCall gives %+v", got)
			}
		case err != nil:
			accepted++
			fail("CPython accepts it, ParseCall: %v", err)
		default:
			accepted++
			if got.Function != c.Function {
				fail("function %q, want %q", got.Function, c.Function)
			} else if d := jsonDiff(got.Arguments, decodeJSON(t, c.Arguments)); d != "" {
				fail("arguments: %s", d)
			}
		}
	}
	if accepted != 2000 || rejected != 2000 {
		t.Errorf("%d accepted and %d rejected cases, want 2000 each", accepted, rejected)
	}
	if failures > 0 {
		t.Errorf("%d of %d cases differ from CPython", failures, accepted+rejected)
	}
}
