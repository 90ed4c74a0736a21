package conform

import (
	"encoding/json"
	"testing"
)

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func TestMatchFields(t *testing.T) {
	tests := []struct {
		text   string
		fields []string
		want   string
	}{
		{"```json\n{'Answr': 'four', confidance: 0.9, extra: 1,}\n```", []string{"answer", "confidence"}, `{"answer":"four","confidence":0.9}`},
		{`{"answer": "x", "reason": "y"}`, []string{"answer"}, `{"answer":"x"}`},
		{"no json at all", []string{"answer"}, `{}`},
		{`{"zzz": 1}`, []string{"answer"}, `{}`},
	}
	for _, tt := range tests {
		if got := compactJSON(Fields(tt.text, tt.fields)); got != tt.want {
			t.Errorf("Fields(%q, %v) = %s, want %s", tt.text, tt.fields, got, tt.want)
		}
	}
}

func TestJaroWinkler(t *testing.T) {
	tests := []struct {
		a, b string
		want float64
	}{
		{"martha", "marhta", 0.961}, {"dwayne", "duane", 0.84}, {"abc", "abc", 1}, {"abc", "xyz", 0}, {"", "", 1},
	}
	for _, tt := range tests {
		got := jaroWinkler(tt.a, tt.b)
		if d := got - tt.want; d > 0.001 || d < -0.001 {
			t.Errorf("jaroWinkler(%q, %q) = %.4f, want %.3f", tt.a, tt.b, got, tt.want)
		}
	}
}
