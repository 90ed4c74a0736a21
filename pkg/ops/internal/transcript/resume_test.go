package transcript

import (
	"slices"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/wire"
)

// TestWithoutMessage: WithoutMessage drops a redelivered run's stored instruction from the
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
		if got := ids(WithoutMessage(tt.in, "ins")); !slices.Equal(got, tt.want) {
			t.Errorf("WithoutMessage(%v) = %v, want %v", ids(tt.in), got, tt.want)
		}
	}
	if got := WithoutMessage(ms, "ins"); &got[0] == &ms[0] || ms[1].ID != "ins" {
		t.Error("a history with the instruction inside is changed in place")
	}
}

// A resumed run sends only what its session does not hold: the messages
// after the last one a run with that session recorded.
func TestAfterSession(t *testing.T) {
	t.Parallel()
	msg := func(id, session string) wire.Message {
		m := wire.Message{ID: id}
		if session != "" {
			m.Metadata = map[string]any{MetaSessionID: session}
		}
		return m
	}
	history := []wire.Message{msg("i1", ""), msg("r1", "S1"), msg("a1", "S1"), msg("c1", ""), msg("r2", "S2"), msg("c2", "")}
	tests := []struct {
		session string
		want    []string
	}{
		{"S1", []string{"c1", "r2", "c2"}},
		{"S2", []string{"c2"}},
		{"S3", nil}, // recorded before messages were marked: nothing is sent again
	}
	for _, tt := range tests {
		var got []string
		for _, m := range AfterSession(history, tt.session) {
			got = append(got, m.ID)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("after %s: %v, want %v", tt.session, got, tt.want)
		}
	}
}
