package ops

import (
	"github.com/lionbus/lionbus/pkg/wire"
	"slices"
	"testing"
)

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
		for _, m := range afterSession(history, tt.session) {
			got = append(got, m.ID)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("after %s: %v, want %v", tt.session, got, tt.want)
		}
	}
}
