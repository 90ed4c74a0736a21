package bus_test

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/wire"
)

// TestBranchDelete_leaves_a_tombstone_and_purges_only_when_asked: a
// delete ends the branch's history with a branch.deleted naming the
// request, who and why; reads and writes then answer branch_not_found
// saying it was deleted, and the events stay in the history stream; a
// delete with purge leaves only the tombstone; the id can be used again;
// a branch with a live fork is not deleted until the fork is.
func TestBranchDelete_leaves_a_tombstone_and_purges_only_when_asked(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	_, _, res := b.Conn(t)
	ctx := bustest.Ctx(t)
	subjectEvents := func(id string) uint64 {
		t.Helper()
		info, err := res.History.Info(ctx, jetstream.WithSubjectFilter(res.Subjects.History(id)))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Subjects[res.Subjects.History(id)]
	}
	lastEvent := func(id string) string {
		t.Helper()
		m, err := res.History.GetLastMsgForSubject(ctx, res.Subjects.History(id))
		if err != nil {
			t.Fatal(err)
		}
		return m.Header.Get("Lionbus-Event-Type")
	}
	const id = "doomed"
	b.CreateBranch(t, id)
	for range 3 {
		bustest.MustResult(t, b.Do(t, "communicate", id, map[string]any{"instruction": "hello"}), nil)
	}
	head := branchAt(t, b, id, 0)

	r := b.Do(t, "branch.delete", id, map[string]any{"by": "alice", "reason": "test over"}, client.WithID("delete-1"))
	var del wire.BranchDeleted
	bustest.MustResult(t, r, &del)
	if !del.Deleted || del.Purged || del.Seq <= head.Seq {
		t.Fatalf("delete answered %+v after head %d", del, head.Seq)
	}
	if n, last := subjectEvents(id), lastEvent(id); n != 5 || last != string(wire.EventDeleted) {
		t.Fatalf("history holds %d events ending with %q, want the 4 events and the tombstone", n, last)
	}
	for _, c := range []struct {
		verb string
		data map[string]any
	}{
		{"branch.get", nil},
		{"branch.history", nil},
		{"communicate", map[string]any{"instruction": "still there?"}},
		{"branch.clear", nil},
		{"branch.fork", map[string]any{"branch_id": "of-doomed"}},
		{"branch.delete", nil},
	} {
		r := b.Do(t, c.verb, id, c.data)
		if code := bustest.RemoteCode(t, r); code != ops.CodeBranchNotFound {
			t.Fatalf("%s on a deleted branch: %q", c.verb, code)
		}
		if c.verb == "branch.get" && !strings.Contains(r.Err().Error(), "deleted") {
			t.Fatalf("branch.get on a deleted branch does not say so: %v", r.Err())
		}
	}
	if n := subjectEvents(id); n != 5 {
		t.Fatalf("the refused requests changed the history: %d events", n)
	}

	// Purged later, on request: the tombstone alone stays.
	b.CreateBranch(t, "doomed-later")
	bustest.MustResult(t, b.Do(t, "branch.delete", "doomed-later", nil), nil)
	bustest.MustResult(t, b.Do(t, "branch.delete", "doomed-later", map[string]any{"purge": true}), &del)
	if n, last := subjectEvents("doomed-later"), lastEvent("doomed-later"); !del.Purged || n != 1 || last != string(wire.EventDeleted) {
		t.Fatalf("a purge after the delete answered %+v and left %d events ending with %q", del, n, last)
	}

	// The id used again: a new branch, nothing of the old one.
	b.CreateBranch(t, id)
	again := branchAt(t, b, id, 0)
	if len(again.Messages) != 1 || again.Seq <= del.Seq {
		t.Fatalf("the branch created again holds %d messages at seq %d", len(again.Messages), again.Seq)
	}
	// Purged: only the tombstone is left.
	bustest.MustResult(t, b.Do(t, "branch.delete", id, map[string]any{"purge": true}), &del)
	if !del.Purged {
		t.Fatalf("delete with purge answered %+v", del)
	}
	if n, last := subjectEvents(id), lastEvent(id); n != 1 || last != string(wire.EventDeleted) {
		t.Fatalf("after a purge the history holds %d events ending with %q, want the tombstone alone", n, last)
	}

	// A parent with a live fork.
	b.CreateBranch(t, "parent")
	fork(t, b, "parent", "child", nil)
	r = b.Do(t, "branch.delete", "parent", nil)
	if code := bustest.RemoteCode(t, r); code != ops.CodeInvalidRequest || !strings.Contains(r.Err().Error(), "child") {
		t.Fatalf("delete of a parent with a live fork: %v", r.Err())
	}
	sameState(t, "the fork after the refused delete", branchAt(t, b, "child", 0), branchAt(t, b, "parent", 0), nil)
	bustest.MustResult(t, b.Do(t, "branch.delete", "child", nil), nil)
	bustest.MustResult(t, b.Do(t, "branch.delete", "parent", nil), nil)
}
