package store_test

import (
	"slices"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/internal/fence"
)

// TestStore_lease_fence: a load under the branch lease that the branch was
// last seen current under reads nothing (the lease keeps other workers
// out); a load under any other lease, or none, reads the history and sees
// every other writer; and an append from a cache that went stale (a
// writer that ignored the lease) still lands after what that writer wrote.
func TestStore_lease_fence(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := bustest.Ctx(t)
	one, two := b.newStoreOnOwnConn(t), b.newStoreOnOwnConn(t)
	held := fence.NewContext(ctx, "fenced", 7)
	if _, err := one.Create(held, "fenced", createdEvent("c0", "sys")); err != nil {
		t.Fatal(err)
	}
	// A writer outside the lease: only possible for a worker that lost its
	// lease unawares, or a program that does not take leases.
	if _, err := two.Append(ctx, "fenced", messagesEvent("other", "other")); err != nil {
		t.Fatal(err)
	}
	loads := []struct {
		name  string
		epoch uint64
		want  []string
	}{
		{"same lease: the cache is trusted, nothing read", 7, nil},
		{"a lease of another branch does not count", 0, []string{"other"}},
		{"a new acquisition reads", 8, []string{"other"}},
	}
	for _, l := range loads {
		lctx := fence.NewContext(ctx, "fenced", l.epoch)
		if l.name == "a lease of another branch does not count" {
			lctx = fence.NewContext(ctx, "another", 7)
		}
		got, err := one.Load(lctx, "fenced")
		if err != nil {
			t.Fatal(err)
		}
		if ins := instructions(got); !slices.Equal(ins, l.want) {
			t.Fatalf("%s: loaded %v, want %v", l.name, ins, l.want)
		}
	}
	// Seen current under epoch 8 now; another write outside the lease, then
	// an append under epoch 8 from the stale cache: it lands after it.
	if _, err := two.Append(ctx, "fenced", messagesEvent("x", "x")); err != nil {
		t.Fatal(err)
	}
	under8 := fence.NewContext(ctx, "fenced", 8)
	if _, err := one.Append(under8, "fenced", messagesEvent("y", "y")); err != nil {
		t.Fatal(err)
	}
	got, err := two.Load(ctx, "fenced")
	if err != nil {
		t.Fatal(err)
	}
	if ins := instructions(got); !slices.Equal(ins, []string{"other", "x", "y"}) {
		t.Fatalf("history after a stale append: %v", ins)
	}
	// The append brought one's cache up to date under epoch 8: trusted.
	if got, err := one.Load(under8, "fenced"); err != nil || !slices.Equal(instructions(got), []string{"other", "x", "y"}) {
		t.Fatalf("after its append, one loads %v (%v)", instructions(got), err)
	}
}
