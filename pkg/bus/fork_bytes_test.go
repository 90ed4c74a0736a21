package bus_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
)

// storedBytes is what the history stream and the branches bucket hold.
func storedBytes(t testing.TB, ctx context.Context, res *provision.Resources) (history, snapshots uint64) {
	t.Helper()
	info, err := res.History.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := res.Branches.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Bytes, st.Bytes()
}

// exchanges adds n echo exchanges to the new branch id.
func exchanges(t testing.TB, b *bustest.Bus, id string, n int) {
	t.Helper()
	b.CreateBranch(t, id)
	for i := range n {
		bustest.MustResult(t, b.Do(t, "communicate", id, map[string]any{"instruction": fmt.Sprintf("exchange %d of a branch that grows", i)}), nil)
	}
}

// TestBranchFork_bytes_written_do_not_grow_with_the_parent: the history
// bytes a fork writes (its branch.created and the parent's
// branch.forked) are the same for a parent of 10 exchanges and one of
// 400, while a clone of the larger parent writes its messages: the
// test would see a fork that copied.
func TestBranchFork_bytes_written_do_not_grow_with_the_parent(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	_, _, res := b.Conn(t)
	ctx := bustest.Ctx(t)
	written := func(verb, parent, id string) uint64 {
		h0, _ := storedBytes(t, ctx, res)
		bustest.MustResult(t, b.Do(t, verb, parent, map[string]any{"branch_id": id}), nil)
		h1, _ := storedBytes(t, ctx, res)
		return h1 - h0
	}
	sizes := []int{10, 400}
	var forks, clones []uint64
	for _, n := range sizes {
		parent := fmt.Sprintf("bytes-%d", n)
		exchanges(t, b, parent, n)
		// Same-length ids, so that only the parent differs.
		forks = append(forks, written("branch.fork", parent, fmt.Sprintf("f-%04d", n)))
		clones = append(clones, written("branch.clone", parent, fmt.Sprintf("c-%04d", n)))
	}
	t.Logf("history bytes written for parents of %v exchanges: fork %v, clone %v", sizes, forks, clones)
	// A fork names the parent's sequence, a few bytes longer for a
	// larger number: allow 8.
	if forks[1] > forks[0]+8 {
		t.Fatalf("a fork of %d exchanges wrote %d bytes, of %d exchanges %d: it grows with the parent", sizes[1], forks[1], sizes[0], forks[0])
	}
	if clones[1] < clones[0]+100*8 {
		t.Fatalf("clones wrote %v bytes: the parents do not differ enough for the test to see a copy", clones)
	}
}
