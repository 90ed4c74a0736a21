package history_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

// TestCompaction_folds_as_the_history_before_it: a history that starts
// with a compaction point of its prefix, or holds one after it, folds to
// the same branch as the whole history (but for the sequence, which the
// compaction point takes); a compaction point without a state, or naming
// a head not before it, is out of order.
func TestCompaction_folds_as_the_history_before_it(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	msg := func(id string) history.Message {
		return history.Message{ID: id, Kind: history.KindInstruction, Role: history.RoleUser, Content: map[string]any{"instruction": id}, CreatedAt: t0}
	}
	prefix := []history.Event{
		{Seq: 1, Type: history.EventCreated, RequestID: "c", Time: t0, BranchID: "b", Settings: &history.Settings{System: "be brief"}},
		{Seq: 3, Type: history.EventMessages, RequestID: "r1", Time: t0.Add(time.Second), Messages: []history.Message{msg("m1")}, ModelCalls: 1},
		{Seq: 4, Type: history.EventCleared, RequestID: "cl", Time: t0.Add(2 * time.Second)},
		{Seq: 6, Type: history.EventMessages, RequestID: "r2", Time: t0.Add(3 * time.Second), Messages: []history.Message{msg("m2")}, ModelCalls: 2},
	}
	suffix := []history.Event{
		{Seq: 9, Type: history.EventMessages, RequestID: "r3", Time: t0.Add(5 * time.Second), Messages: []history.Message{msg("m3")}, ModelCalls: 1},
		{Seq: 10, Type: history.EventMessages, RequestID: "r2", Time: t0.Add(6 * time.Second), Messages: []history.Message{msg("dup")}},
	}
	for cut := 1; cut <= len(prefix); cut++ {
		head, err := history.Replay(prefix[:cut])
		if err != nil {
			t.Fatal(err)
		}
		c := history.NewCompaction(head)
		point := history.Event{Seq: 8, Type: history.EventCompacted, RequestID: "retention/6", Time: t0.Add(4 * time.Second), BranchID: "b", Compaction: &c}
		whole, err := history.Replay(append(append(append([]history.Event{}, prefix[:cut]...), point), suffix...))
		if err != nil {
			t.Fatalf("cut %d: whole history: %v", cut, err)
		}
		plain, err := history.Replay(append(append([]history.Event{}, prefix[:cut]...), suffix...))
		if err != nil {
			t.Fatal(err)
		}
		trimmed, err := history.Replay(append([]history.Event{point}, suffix...))
		if err != nil {
			t.Fatalf("cut %d: history from the compaction point: %v", cut, err)
		}
		if !reflect.DeepEqual(whole, trimmed) {
			t.Fatalf("cut %d: from the compaction point\n got %+v\nwant %+v", cut, trimmed, whole)
		}
		plain.Seq = whole.Seq
		if !reflect.DeepEqual(plain.Messages, whole.Messages) || plain.ModelCalls != whole.ModelCalls || !plain.UpdatedAt.Equal(whole.UpdatedAt) ||
			!reflect.DeepEqual(plain.Settings, whole.Settings) || plain.Commits.String() != whole.Commits.String() {
			t.Fatalf("cut %d: a compaction point changed the branch\n got %+v\nwant %+v", cut, whole, plain)
		}
	}
	bad := []history.Event{
		{Seq: 2, Type: history.EventCompacted, BranchID: "b"},
		{Seq: 2, Type: history.EventCompacted, BranchID: "b", Compaction: &history.Compaction{Head: 2}},
	}
	for _, ev := range bad {
		if _, err := history.Replay([]history.Event{ev}); !errors.Is(err, history.ErrEventOrder) {
			t.Fatalf("compaction point %+v folded: %v, want %v", ev.Compaction, err, history.ErrEventOrder)
		}
	}
}
