package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// nestedItems returns an array schema nested depth levels deep.
func nestedItems(depth int) string {
	return strings.Repeat(`{"type":"array","items":`, depth) + `{"type":"string"}` + strings.Repeat(`}`, depth)
}

// wideSchema returns an object schema with n properties.
func wideSchema(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"p` + strings.Repeat("x", 3) + string(rune('a'+i%26)) + itoa(i) + `":{"type":"string"}`)
	}
	b.WriteString(`}}`)
	return b.String()
}

func itoa(i int) string {
	s, _ := json.Marshal(i)
	return string(s)
}

func TestCompileResponseSchema_bounds(t *testing.T) {
	tests := []struct {
		name    string
		schema  string
		tooBig  bool
		wantErr bool
	}{
		{"nested 30 deep", nestedItems(30), false, false},
		{"nested 1000 deep (a denial of service when compiled)", nestedItems(1000), true, true},
		{"nested 9000 deep", nestedItems(9000), true, true},
		{"1,000 properties", wideSchema(1000), false, false},
		{"an enum of 30,000 values", `{"enum":[` + strings.TrimSuffix(strings.Repeat("0,", 30000), ",") + `]}`, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile([]byte(tt.schema))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.tooBig != errors.Is(err, ErrTooComplex) {
				t.Fatalf("err = %v, want ErrTooComplex %v", err, tt.tooBig)
			}
		})
	}
}

// TestCompileResponseSchema_cached_by_content: the same schema text is
// compiled once; another text is compiled again.
func TestCompileResponseSchema_cached_by_content(t *testing.T) {
	a := []byte(`{"type":"object","properties":{"cache_probe_a":{"type":"integer"}}}`)
	s1, err := Compile(a)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Compile(append([]byte(nil), a...))
	if err != nil {
		t.Fatal(err)
	}
	if s1 != s2 {
		t.Fatal("the same schema was compiled twice")
	}
	s3, err := Compile([]byte(`{"type":"object","properties":{"cache_probe_b":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s3 == s1 {
		t.Fatal("another schema got the cached one")
	}
	if err := s1.Validate(map[string]any{"cache_probe_a": "x"}); err == nil {
		t.Fatal("the cached schema does not validate")
	}
}

func TestCompiledSchemas_evicts_least_recently_used(t *testing.T) {
	c := newCompiledSchemas(2)
	k := func(b byte) [32]byte { return [32]byte{b} }
	s := func() *Compiled { return &Compiled{} }
	a, b2, c3 := s(), s(), s()
	c.put(k(1), a)
	c.put(k(2), b2)
	if _, ok := c.get(k(1)); !ok { // 1 is now the most recent
		t.Fatal("1 missing")
	}
	c.put(k(3), c3)
	if _, ok := c.get(k(2)); ok {
		t.Fatal("2, the least recently used, was kept")
	}
	if got, ok := c.get(k(1)); !ok || got != a {
		t.Fatal("1 was evicted")
	}
}
