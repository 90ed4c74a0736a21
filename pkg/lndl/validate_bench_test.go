package lndl

import "testing"

// BenchmarkValidate validates an assembled value of a realistic size: a
// few scalars needing coercion, a list of nested models and a dict.
func BenchmarkValidate(b *testing.B) {
	tg := mustTarget(b, validateSchema)
	in := validJSON(b, `{"s": "title", "i": " 42 ", "f": "0.75", "b": "yes",
		"tags": ["go", "nats", "lndl"], "scores": {"precision": "9", "recall": 8.0},
		"items": [{"name": "django", "score": "0.4"}, {"name": "flask", "score": 0.3}, {"name": "fastapi", "score": "1"}],
		"opt": "3", "either": "x", "level": 2, "anything": {"k": [1, 2]}, "extra": "dropped"}`)
	if _, err := tg.Validate(in); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tg.Validate(in); err != nil {
			b.Fatal(err)
		}
	}
}
