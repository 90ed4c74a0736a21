package openai

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzDecodeResponse checks that decoding any body never panics, fails
// only with the package's response errors, and keeps a raw answer that is
// valid JSON within its bound. The seed corpus is in
// testdata/fuzz/FuzzDecodeResponse.
func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`), 256)
	f.Fuzz(func(t *testing.T, body []byte, maxRaw int) {
		maxRaw %= 1 << 20
		c, err := decodeResponse(body, maxRaw)
		if err != nil {
			if !errors.Is(err, ErrMalformedResponse) && !errors.Is(err, ErrNoChoices) && !errors.Is(err, ErrToolArguments) {
				t.Fatalf("unexpected error class: %v", err)
			}
			if c != nil {
				t.Fatalf("a completion with an error: %+v", c)
			}
			return
		}
		if c == nil {
			t.Fatal("no completion and no error")
		}
		if maxRaw <= 0 && c.Raw != nil {
			t.Fatalf("raw kept with bound %d: %s", maxRaw, c.Raw)
		}
		if len(c.Raw) > max(maxRaw, 0) || (c.Raw != nil && !json.Valid(c.Raw)) {
			t.Fatalf("raw of %d bytes (bound %d) is invalid or too large: %q", len(c.Raw), maxRaw, c.Raw)
		}
		for _, tc := range c.ToolCalls {
			if tc.Name == "" {
				t.Fatalf("tool call without a name: %+v", tc)
			}
			if _, err := json.Marshal(tc.Arguments); err != nil {
				t.Fatalf("tool call arguments do not encode: %v", err)
			}
		}
		if c.Usage != nil && c.Usage.TotalTokens == 0 && c.Usage.InputTokens+c.Usage.OutputTokens != 0 {
			t.Fatalf("usage total left at 0: %+v", c.Usage)
		}
	})
}
