package retention_test

import (
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/retention"
)

// TestCompactor_passes_read_only_what_was_written_since: the first pass
// reads every header of the history stream, each later one only those
// written since the one before (none when nothing was); a branch left
// alone since is still trimmed when its age comes, from what the passes
// remember of it.
func TestCompactor_passes_read_only_what_was_written_since(t *testing.T) {
	b := newLiveBus(t)
	lastSeq := func() uint64 {
		info, err := b.res.History.Info(bustest.Ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq
	}
	for _, id := range []string{"busy", "idle"} {
		b.CreateBranch(t, id)
		b.exchanges(t, id, 3)
	}
	const age = time.Hour
	now := time.Now()
	c := b.compactor(t, retention.LiveConfig{MaxAge: age, Clock: func() time.Time { return now }})

	before := lastSeq()
	if tr := passAll(t, c); len(tr) != 0 {
		t.Fatalf("a pass with nothing older than the age did %+v", tr)
	}
	if got := c.HeadersRead(); got != before {
		t.Fatalf("the first pass read %d headers, the stream holds %d", got, before)
	}
	passAll(t, c)
	if got := c.HeadersRead(); got != 0 {
		t.Fatalf("a pass with nothing written since the last read %d headers", got)
	}
	b.exchanges(t, "busy", 2)
	written := lastSeq() - before
	passAll(t, c)
	if got := c.HeadersRead(); got != written {
		t.Fatalf("a pass read %d headers; %d were written since the last", got, written)
	}

	// Later, by the compactor's clock: both branches are due, the idle one
	// unchanged since the first pass.
	now = now.Add(2 * age)
	idleEvents := len(b.stored(t, "idle"))
	tr := passAll(t, c)
	if c.HeadersRead() != 0 {
		t.Fatalf("the pass read %d headers, none written since the last", c.HeadersRead())
	}
	if tr["idle"].Compaction == 0 || len(b.stored(t, "idle")) != idleEvents+1 {
		t.Fatalf("the idle branch, due by its age, was not compacted: %+v", tr["idle"])
	}
	if tr["busy"].Compaction == 0 {
		t.Fatalf("the busy branch, due by its age, was not compacted: %+v", tr["busy"])
	}
	// The next pass reads the two compaction points, and cuts at them
	// once they too are older than the age.
	now = now.Add(2 * age)
	tr = passAll(t, c)
	if c.HeadersRead() != 2 {
		t.Fatalf("the pass read %d headers, want the 2 compaction points written since", c.HeadersRead())
	}
	if tr["idle"].DroppedEvents == 0 || b.stored(t, "idle")[0].Seq != tr["idle"].DroppedBefore {
		t.Fatalf("the idle branch was not cut at its compaction point: %+v", tr["idle"])
	}
}
