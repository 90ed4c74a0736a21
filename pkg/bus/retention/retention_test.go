package retention_test

import (
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/retention"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/bus/worker"
)

// clock is the real time plus an offset the test moves.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// TestSweeper_purges_deleted_branches_once_old_enough: a deleted
// branch's events stay while its tombstone is younger than DeletedAfter
// and are purged after (the tombstone stays); a branch created again
// after its delete, and a live branch, are not touched; a sweeper
// started again resumes from the position stored by the last.
func TestSweeper_purges_deleted_branches_once_old_enough(t *testing.T) {
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	_, js, res := b.Conn(t)
	ctx := bustest.Ctx(t)
	st, err := store.New(js, res, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	events := func(id string) uint64 {
		t.Helper()
		subject := res.Subjects.History(id)
		info, err := res.History.Info(ctx, jetstream.WithSubjectFilter(subject))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Subjects[subject]
	}
	last := func() uint64 {
		t.Helper()
		info, err := res.History.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq
	}
	do := func(verb, id string, data map[string]any) {
		t.Helper()
		bustest.MustResult(t, b.Do(t, verb, id, data), nil)
	}
	for _, id := range []string{"old", "again", "live"} {
		b.CreateBranch(t, id)
		do("communicate", id, map[string]any{"instruction": "hi"})
	}
	do("branch.delete", "old", nil)
	do("branch.delete", "again", nil)
	b.CreateBranch(t, "again")
	counts := map[string]uint64{"old": events("old"), "again": events("again"), "live": events("live")}

	clk := &clock{}
	start := func() *retention.Sweeper {
		t.Helper()
		sw, err := retention.New(js, res, st, retention.Config{DeletedAfter: time.Hour, Interval: 20 * time.Millisecond, Clock: clk.now, Logger: bustest.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		if err := sw.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return sw
	}
	sw := start()
	head := last()
	bustest.WaitFor(t, 10*time.Second, "the sweeper to read the history", func() bool {
		read, pending := sw.Position()
		return read >= head && pending == 2
	})
	// Young tombstones: a few sweeps later nothing is purged.
	for range 3 {
		time.Sleep(30 * time.Millisecond)
		for id, n := range counts {
			if got := events(id); got != n {
				t.Fatalf("branch %s holds %d events, had %d, before its tombstone was an hour old", id, got, n)
			}
		}
	}

	clk.advance(2 * time.Hour)
	bustest.WaitFor(t, 10*time.Second, "old to be purged", func() bool { return events("old") == 1 })
	bustest.WaitFor(t, 10*time.Second, "the sweeper to let both tombstones go", func() bool {
		_, pending := sw.Position()
		return pending == 0
	})
	if got := events("again"); got != counts["again"] {
		t.Fatalf("the branch created again after its delete holds %d events, had %d", got, counts["again"])
	}
	if got := events("live"); got != counts["live"] {
		t.Fatalf("the live branch holds %d events, had %d", got, counts["live"])
	}
	if err := sw.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	// Started again: from the stored position, it purges what was
	// deleted meanwhile.
	do("branch.delete", "live", map[string]any{"reason": "done"})
	sw = start()
	defer sw.Stop(ctx)
	bustest.WaitFor(t, 10*time.Second, "live to be purged", func() bool { return events("live") == 1 })
	e, err := res.Branches.Get(ctx, retention.PositionKey)
	if err != nil {
		t.Fatal(err)
	}
	if string(e.Value()) == "0" {
		t.Fatal("no position stored")
	}
}
