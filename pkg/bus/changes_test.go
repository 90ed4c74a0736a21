package bus_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/wire"
)

// feed reads the change feed from after to what is there.
func feed(t *testing.T, b *bustest.Bus, after uint64) []wire.Change {
	t.Helper()
	var out []wire.Change
	err := b.Client.Changes(bustest.Ctx(t), client.ChangesOptions{After: after}, func(c wire.Change) error {
		out = append(out, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestChanges_the_feed_is_every_branch_history_in_commit_order: the
// change feed holds, in increasing sequence, every event of every branch
// — created, messages (with and without clear), cleared, forked,
// deleted, purged — each equal to the event branch.history
// answers, as a CloudEvent naming its branch and sequence; resumed after
// any sequence it gives exactly the rest; followed, it gives new changes
// as they are committed.
func TestChanges_the_feed_is_every_branch_history_in_commit_order(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	pastBranch(t, b, "feed-a", 12, 5) // clears, and feed-a-other in between
	fork(t, b, "feed-a", "feed-fork", nil)
	bustest.MustResult(t, b.Do(t, "communicate", "feed-fork", map[string]any{"instruction": "on the fork"}), nil)
	b.CreateBranch(t, "feed-gone")
	bustest.MustResult(t, b.Do(t, "communicate", "feed-gone", map[string]any{"instruction": "soon gone"}), nil)
	bustest.MustResult(t, b.Do(t, "branch.delete", "feed-gone", map[string]any{"by": "test", "reason": "done"}), nil)
	b.CreateBranch(t, "feed-purged")
	bustest.MustResult(t, b.Do(t, "branch.delete", "feed-purged", map[string]any{"purge": true}), nil)

	all := feed(t, b, 0)
	byBranch := map[string][]wire.Event{}
	var last uint64
	for _, c := range all {
		if c.LionSeq <= last {
			t.Fatalf("change %s after seq %d: not in order", c.ID, last)
		}
		last = c.LionSeq
		if c.SpecVersion != "1.0" || c.Subject != c.Data.BranchID || c.Source != wire.ChangeSource+c.Subject ||
			c.Type != wire.ChangeTypePrefix+string(c.Data.Type) || c.Data.Seq != c.LionSeq || !c.Time.Equal(c.Data.Time) {
			t.Fatalf("change %+v: its attributes do not name its event", c)
		}
		byBranch[c.Subject] = append(byBranch[c.Subject], c.Data)
	}
	for _, id := range []string{"feed-a", "feed-a-other", "feed-fork"} {
		want := readHistory(t, b, id, 1000, nil)
		if got := byBranch[id]; !reflect.DeepEqual(asJSON(t, got), asJSON(t, want)) {
			t.Fatalf("the feed's %d events of %s differ from its %d history events", len(got), id, len(want))
		}
	}
	types := map[wire.EventType]int{}
	for _, evs := range byBranch {
		for _, ev := range evs {
			types[ev.Type]++
			if ev.Clear {
				types["clear"]++
			}
		}
	}
	for _, typ := range []wire.EventType{wire.EventCreated, wire.EventMessages, wire.EventCleared, wire.EventForked, wire.EventDeleted, "clear"} {
		if types[typ] == 0 {
			t.Fatalf("the feed holds no %s event (the test must cover it): %v", typ, types)
		}
	}
	gone := byBranch["feed-gone"]
	if len(gone) != 3 || gone[2].Type != wire.EventDeleted || gone[2].Tombstone == nil || gone[2].Tombstone.By != "test" || gone[2].Tombstone.Reason != "done" || gone[2].Tombstone.Head != gone[1].Seq {
		t.Fatalf("a deleted branch's changes: %+v", gone)
	}
	if purged := byBranch["feed-purged"]; len(purged) != 1 || purged[0].Type != wire.EventDeleted || !purged[0].Tombstone.Purge {
		t.Fatalf("a purged branch's changes: %+v", purged)
	}

	// Resumed after any change: exactly the rest.
	for i := 0; i < len(all); i += 7 {
		if rest := feed(t, b, all[i].LionSeq); !reflect.DeepEqual(asJSON(t, rest), asJSON(t, all[i+1:])) {
			t.Fatalf("resumed after seq %d: %d changes, want %d", all[i].LionSeq, len(rest), len(all)-i-1)
		}
	}

	// Followed: new changes as they come.
	ctx, cancel := context.WithTimeout(bustest.Ctx(t), 20*time.Second)
	defer cancel()
	got := make(chan wire.Change, 16)
	done := make(chan error, 1)
	go func() {
		done <- b.Client.Changes(ctx, client.ChangesOptions{After: last, Follow: true}, func(c wire.Change) error {
			got <- c
			return nil
		})
	}()
	bustest.MustResult(t, b.Do(t, "communicate", "feed-a", map[string]any{"instruction": "one more"}), nil)
	c := <-got
	head := branchAt(t, b, "feed-a", 0)
	if c.Subject != "feed-a" || c.LionSeq != head.Seq || c.Data.Type != wire.EventMessages {
		t.Fatalf("followed change %+v, want feed-a's messages at %d", c, head.Seq)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a followed feed ended without its context")
	}
}
