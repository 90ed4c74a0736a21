package ops

import (
	"slices"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

// withoutMessage drops a redelivered run's stored instruction from the
// prompt's history wherever it is, and leaves a history without it as it
// is.
func TestWithoutMessage(t *testing.T) {
	ms := []history.Message{{ID: "a"}, {ID: "ins"}, {ID: "b"}}
	ids := func(ms []history.Message) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	for _, tt := range []struct {
		in   []history.Message
		want []string
	}{
		{in: ms[:1], want: []string{"a"}},
		{in: ms[:2], want: []string{"a"}},
		{in: ms, want: []string{"a", "b"}},
		{in: nil, want: nil},
	} {
		if got := ids(withoutMessage(tt.in, "ins")); !slices.Equal(got, tt.want) {
			t.Errorf("withoutMessage(%v) = %v, want %v", ids(tt.in), got, tt.want)
		}
	}
	if got := withoutMessage(ms, "ins"); &got[0] == &ms[0] || ms[1].ID != "ins" {
		t.Error("a history with the instruction inside is changed in place")
	}
}
