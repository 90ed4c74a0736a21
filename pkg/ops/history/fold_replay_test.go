package history_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

// Folding the same events twice (a snapshot and a rebuild from history, or
// two workers) gives the same branch, message ids included, also when an
// EventUpdated adds a system message that the branch did not have.
func TestBranch_Apply_is_deterministic(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	events := []history.Event{
		{Type: history.EventCreated, Seq: 1, BranchID: "d", RequestID: "c", Time: at, Settings: &history.Settings{}},
		{Type: history.EventUpdated, Seq: 4, BranchID: "d", RequestID: "u", Time: at, Settings: &history.Settings{System: "be brief"}},
	}
	fold := func() string {
		b, err := history.Replay(events)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Messages) != 1 || b.Messages[0].Kind != history.KindSystem {
			t.Fatalf("messages %+v, want one system message", b.Messages)
		}
		out, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	if a, b := fold(), fold(); a != b {
		t.Fatalf("two folds of the same events differ:\n%s\n%s", a, b)
	}
}
