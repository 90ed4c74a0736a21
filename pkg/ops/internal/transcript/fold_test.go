package transcript

import (
	"testing"

	"github.com/lionbus/lionbus/pkg/wire"
)

// MarkSession records the session on every message of the run.
func TestFold_MarkSession(t *testing.T) {
	t.Parallel()
	s := &Fold{Msgs: []wire.Message{{ID: "a"}, {ID: "b", Metadata: map[string]any{"tool_id": "t1"}}}, Session: "S1"}
	s.MarkSession()
	for _, m := range s.Msgs {
		if m.Metadata[MetaSessionID] != "S1" {
			t.Errorf("message %s: metadata %v", m.ID, m.Metadata)
		}
	}
	if s.Msgs[1].Metadata["tool_id"] != "t1" {
		t.Errorf("metadata lost: %v", s.Msgs[1].Metadata)
	}
}
