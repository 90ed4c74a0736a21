package conform

import (
	"fmt"
	"sort"
	"testing"
)

func TestMatchKeys(t *testing.T) {
	tests := []struct {
		name      string
		keys      []string
		fields    []string
		fuzzy     bool
		threshold float64
		want      string // key→field pairs, sorted
	}{
		{"exact", []string{"answer", "extra"}, []string{"answer"}, true, 0.85, "[answer→answer]"},
		{"case", []string{"Answer"}, []string{"answer"}, true, 0.85, "[Answer→answer]"},
		{"separators and camel case", []string{"first-name", "LastName", "zip code"}, []string{"first_name", "last_name", "zipCode"}, true, 0.85,
			"[LastName→last_name first-name→first_name zip code→zipCode]"},
		{"typos (reference A5)", []string{"Answr", "confidance", "extra"}, []string{"answer", "confidence"}, true, 0.85,
			"[Answr→answer confidance→confidence]"},
		{"below the threshold", []string{"zzz", "name"}, []string{"answer", "game"}, true, 0.85, "[]"},
		{"a lower threshold", []string{"name"}, []string{"game"}, true, 0.8, "[name→game]"},
		{"exact wins over a similar key", []string{"answer", "answr"}, []string{"answer"}, true, 0.85, "[answer→answer]"},
		{"never two keys onto one field", []string{"first_name", "firstName"}, []string{"FirstName"}, true, 0.85, "[firstName→FirstName]"},
		{"most similar pair first", []string{"answers_given", "answr"}, []string{"answer"}, true, 0.85, "[answr→answer]"},
		{"ambiguous normalized fields are left to similarity", []string{"ab"}, []string{"a_b", "aB"}, true, 0.85, "[ab→aB]"},
		{"fuzzy off: exact only", []string{"Answer", "confidence"}, []string{"answer", "confidence"}, false, 0.85, "[confidence→confidence]"},
		{"separators only", []string{"__"}, []string{"_"}, true, 0.85, "[]"},
		{"unicode", []string{"Größe"}, []string{"größe"}, true, 0.85, "[Größe→größe]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := matchKeys(tt.keys, tt.fields, tt.fuzzy, tt.threshold)
			var pairs []string
			for k, f := range got {
				pairs = append(pairs, k+"→"+f)
			}
			sort.Strings(pairs)
			if s := fmt.Sprint(pairs); s != tt.want {
				t.Errorf("matchKeys = %s, want %s", s, tt.want)
			}
		})
	}
}

func TestMatchKeys_order_does_not_matter(t *testing.T) {
	keys := []string{"nme", "name_", "NAME", "adress", "address2"}
	fields := []string{"name", "address", "address_2"}
	want := fmt.Sprint(matchKeys(keys, fields, true, 0.85))
	for i := 0; i < 10; i++ {
		k := append([]string(nil), keys...)
		f := append([]string(nil), fields...)
		// rotate
		k = append(k[i%len(k):], k[:i%len(k)]...)
		f = append(f[i%len(f):], f[:i%len(f)]...)
		if got := fmt.Sprint(matchKeys(k, f, true, 0.85)); got != want {
			t.Fatalf("order %d: %s, want %s", i, got, want)
		}
	}
}
