package protocol

import (
	"encoding/json"
	"testing"
)

// FuzzJSONString: jsonString, whose plain strings skip json.Unmarshal,
// decodes every input as json.Unmarshal into a string does: the same
// string, or an error when json.Unmarshal gives one.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{
		`"b1"`, `""`, `"00-b2eb8fc9388411abd18a5d0168c80ab3-0cc4f5a1251fb1a4-01"`,
		`"a\"b"`, `"tab\there"`, `"\u00e9t\u00e9"`, `"été"`, "\"\xff\"", `"a"b"`, `"`, `12`, `null`,
		`true`, `"<&>"`, "\"line\nbreak\"", `"a\\"`, ` "pad" `, `{"a":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want string
		wantErr := json.Unmarshal(raw, &want)
		got, err := jsonString(raw)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("jsonString(%q): error %v, json.Unmarshal: %v", raw, err, wantErr)
		}
		if err == nil && got != want {
			t.Fatalf("jsonString(%q) = %q, json.Unmarshal: %q", raw, got, want)
		}
	})
}
