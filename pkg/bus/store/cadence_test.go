package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// snapshotSeq returns the sequence of the branch's stored snapshot, 0 when
// there is none.
func snapshotSeq(t *testing.T, ctx context.Context, b *storeBundle, id string) uint64 {
	t.Helper()
	kve, err := b.res.Branches.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	snap, err := store.DecodeSnapshotForTest(kve.Value())
	if err != nil {
		t.Fatal(err)
	}
	return snap.Seq
}

// bucketKeys lists the keys of the branches bucket that start with prefix.
func bucketKeys(t *testing.T, ctx context.Context, b *storeBundle, prefix string) []string {
	t.Helper()
	lister, err := b.res.Branches.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range lister.Keys() {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	return keys
}

// replayed folds the branch's whole history, the reference every load
// must agree with.
func replayed(t *testing.T, ctx context.Context, st *store.Store, id string) string {
	t.Helper()
	var evs []history.Event
	for after := uint64(0); ; {
		page, err := st.History(ctx, id, after, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		evs = append(evs, page...)
		after = page[len(page)-1].Seq
	}
	br, err := history.Replay(evs)
	if err != nil {
		t.Fatal(err)
	}
	return jsonOf(t, br)
}

func TestStore_snapshot_cadence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  store.Config
		// every is the number of events between snapshots.
		every int
	}{
		{"by events", store.Config{SnapshotEvents: 5, SnapshotBytes: 1 << 30}, 5},
		// An event of messagesEvent encodes to 200-300 bytes.
		{"by bytes", store.Config{SnapshotEvents: 1 << 30, SnapshotBytes: 1000}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupStore(t)
			ctx := bustest.Ctx(t)
			st := b.newStoreOnOwnConn(t, tt.cfg)
			br, err := st.Create(ctx, "cad", createdEvent("c0", "sys"))
			if err != nil {
				t.Fatal(err)
			}
			seqs := []uint64{br.Seq}
			var snaps []uint64 // the snapshot's seq after each event
			snaps = append(snaps, snapshotSeq(t, ctx, b, "cad"))
			for i := range 16 {
				br, err := st.Append(ctx, "cad", messagesEvent(fmt.Sprintf("r%d", i), strings.Repeat("x", 50)))
				if err != nil {
					t.Fatal(err)
				}
				seqs = append(seqs, br.Seq)
				snaps = append(snaps, snapshotSeq(t, ctx, b, "cad"))
			}
			writes := 0
			for i := range snaps {
				if i > 0 && snaps[i] != snaps[i-1] {
					writes++
					if snaps[i] != seqs[i] {
						t.Fatalf("after event %d the snapshot reflects seq %d, want that event's %d", i+1, snaps[i], seqs[i])
					}
				}
			}
			if tt.every > 0 {
				for i := range snaps {
					want := uint64(0)
					if n := (i + 1) / tt.every * tt.every; n > 0 {
						want = seqs[n-1]
					}
					if snaps[i] != want {
						t.Fatalf("after event %d the snapshot reflects seq %d, want %d (every %d events): %v", i+1, snaps[i], want, tt.every, snaps)
					}
				}
			}
			if writes < 2 || writes > 8 {
				t.Fatalf("%d snapshots written for 17 events: %v", writes, snaps)
			}
			// A new store loads the snapshot and the events after it.
			got, err := b.newStoreOnOwnConn(t).Load(ctx, "cad")
			if err != nil {
				t.Fatal(err)
			}
			if jsonOf(t, got) != replayed(t, ctx, st, "cad") {
				t.Fatal("load from the snapshot differs from the replayed history")
			}
		})
	}
}

// TestStore_snapshot_larger_than_max_payload: a branch whose messages are
// several times the server's max payload is snapshotted in segments, no
// value over the limit, and a new store loads it from them.
func TestStore_snapshot_larger_than_max_payload(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := bustest.Ctx(t)
	cfg := store.Config{SnapshotEvents: 8, SegmentBytes: 64 << 10}
	st := b.newStoreOnOwnConn(t, cfg)
	if _, err := st.Create(ctx, "big", createdEvent("c0", "sys")); err != nil {
		t.Fatal(err)
	}
	maxPayload := int(b.js.Conn().MaxPayload())
	big := strings.Repeat("y", 60<<10)
	total := 0
	for i := 0; total < 3*maxPayload; i++ {
		if _, err := st.Append(ctx, "big", messagesEvent(fmt.Sprintf("r%d", i), fmt.Sprintf("%d %s", i, big))); err != nil {
			t.Fatal(err)
		}
		total += len(big)
	}
	segs := bucketKeys(t, ctx, b, "big.")
	if len(segs) < 3 {
		t.Fatalf("%d segments for %d bytes of messages", len(segs), total)
	}
	stored := 0
	for _, k := range append(segs, "big") {
		kve, err := b.res.Branches.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if len(kve.Value()) > maxPayload {
			t.Fatalf("value %s is %d bytes, over the max payload %d", k, len(kve.Value()), maxPayload)
		}
		stored += len(kve.Value())
	}
	if stored < 2*maxPayload {
		t.Fatalf("snapshot and segments hold %d bytes, want the branch (> %d)", stored, 2*maxPayload)
	}
	want := replayed(t, ctx, st, "big")
	got, err := b.newStoreOnOwnConn(t, cfg).Load(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if jsonOf(t, got) != want {
		t.Fatal("load from the segmented snapshot differs from the replayed history")
	}

	// The load really reads the segments: one planted with another text
	// shows up in a new store's load (segments are trusted as written).
	kve, err := b.res.Branches.Get(ctx, segs[0])
	if err != nil {
		t.Fatal(err)
	}
	planted := strings.Replace(string(kve.Value()), "yyyy", "zzzz", 1)
	if _, err := b.res.Branches.Put(ctx, segs[0], []byte(planted)); err != nil {
		t.Fatal(err)
	}
	got, err = b.newStoreOnOwnConn(t, cfg).Load(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(jsonOf(t, got), "zzzz") {
		t.Fatal("the load did not read the snapshot's segments")
	}
	if _, err := b.res.Branches.Put(ctx, segs[0], kve.Value()); err != nil {
		t.Fatal(err)
	}
	// A lost segment makes the load rebuild from history.
	if err := b.res.Branches.Purge(ctx, segs[len(segs)-1]); err != nil {
		t.Fatal(err)
	}
	other := b.newStoreOnOwnConn(t, cfg)
	if got, err = other.Load(ctx, "big"); err != nil || jsonOf(t, got) != want {
		t.Fatalf("load with a segment missing: %v, equal %v", err, err == nil && jsonOf(t, got) == want)
	}
	// Appends go on; deleting the branch removes the segments too.
	if _, err := other.Append(ctx, "big", messagesEvent("last", "the end")); err != nil {
		t.Fatal(err)
	}
	if err := other.Delete(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	if left := bucketKeys(t, ctx, b, "big"); len(left) != 0 {
		t.Fatalf("delete left %v in the bucket", left)
	}
}

// TestStore_load_after_a_crash_between_append_and_snapshot: events whose
// snapshot was never written (their writer died after the append), and a
// segment whose snapshot was never written, are found by every load.
func TestStore_load_after_a_crash_between_append_and_snapshot(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := bustest.Ctx(t)
	cfg := store.Config{SnapshotEvents: 4}
	st := b.newStoreOnOwnConn(t, cfg)
	if _, err := st.Create(ctx, "crash", createdEvent("c0", "sys")); err != nil {
		t.Fatal(err)
	}
	var br *history.Branch
	for i := range 5 {
		var err error
		if br, err = st.Append(ctx, "crash", messagesEvent(fmt.Sprintf("r%d", i), "before")); err != nil {
			t.Fatal(err)
		}
	}
	snapAt := snapshotSeq(t, ctx, b, "crash")
	if snapAt == 0 || snapAt >= br.Seq {
		t.Fatalf("snapshot at %d, last event %d: want one behind the last event", snapAt, br.Seq)
	}
	// The dead worker's appends: in history, no snapshot, plus a segment
	// it wrote just before dying.
	last := br.Seq
	for i := range 3 {
		ev := messagesEvent(fmt.Sprintf("dead%d", i), "appended by a worker that died")
		ev.BranchID = "crash"
		data, err := store.EncodeEventForTest(ev)
		if err != nil {
			t.Fatal(err)
		}
		m := nats.NewMsg(b.res.Subjects.History("crash"))
		m.Data = data
		ack, err := b.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(last))
		if err != nil {
			t.Fatal(err)
		}
		last = ack.Sequence
	}
	if _, err := b.res.Branches.Put(ctx, fmt.Sprintf("crash.%d-0-1", last), []byte("\x91\xc0")); err != nil {
		t.Fatal(err)
	}
	want := replayed(t, ctx, st, "crash")
	for name, s := range map[string]*store.Store{"cached": st, "new": b.newStoreOnOwnConn(t, cfg)} {
		got, err := s.Load(ctx, "crash")
		if err != nil {
			t.Fatal(err)
		}
		if jsonOf(t, got) != want || got.Seq != last {
			t.Fatalf("%s store: the load misses the dead worker's events (seq %d, want %d)", name, got.Seq, last)
		}
		if _, ok := got.Commits.Seq("dead2"); !ok {
			t.Fatalf("%s store: the dead worker's commit is not known", name)
		}
	}
	if snapshotSeq(t, ctx, b, "crash") == snapAt {
		// Load folded 3 events after a snapshot 1 behind: 4 since it.
		t.Fatal("the load did not snapshot the events it caught up on")
	}
}

// TestStore_cache_sees_other_writers: two stores (two workers) take turns
// on one branch; each load sees the other's last append, and an append
// from a stale cache lands after it.
func TestStore_cache_sees_other_writers(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := bustest.Ctx(t)
	one, two := b.newStoreOnOwnConn(t), b.newStoreOnOwnConn(t)
	if _, err := one.Create(ctx, "turns", createdEvent("c0", "sys")); err != nil {
		t.Fatal(err)
	}
	stores := []*store.Store{one, two}
	for i := range 12 {
		w, r := stores[i%2], stores[(i+1)%2]
		id := fmt.Sprintf("t%d", i)
		if i%3 == 2 {
			// w's cache is stale (r appended last): the append must
			// catch up and land after r's.
			if _, err := w.Append(ctx, "turns", messagesEvent(id, id)); err != nil {
				t.Fatal(err)
			}
		} else {
			if _, err := w.Load(ctx, "turns"); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Append(ctx, "turns", messagesEvent(id, id)); err != nil {
				t.Fatal(err)
			}
		}
		got, err := r.Load(ctx, "turns")
		if err != nil {
			t.Fatal(err)
		}
		ins := instructions(got)
		if len(ins) != i+1 || ins[i] != id {
			t.Fatalf("after %s's append, the other store loads %v", id, ins)
		}
	}
	if got, _ := one.Load(ctx, "turns"); jsonOf(t, got) != replayed(t, ctx, one, "turns") {
		t.Fatal("load differs from the replayed history")
	}
}

// TestStore_twenty_thousand_messages: a branch of 20,000 messages loads
// (into a new store, from its snapshot), appends and loads again.
func TestStore_twenty_thousand_messages(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := bustest.Ctx(t)
	st := b.newStoreOnOwnConn(t)
	if _, err := st.Create(ctx, "long", createdEvent("c0", "sys")); err != nil {
		t.Fatal(err)
	}
	const perEvent = 2000
	for i := range 10 {
		ev := messagesEvent(fmt.Sprintf("bulk%d", i), "bulk")
		ev.Messages = make([]history.Message, perEvent)
		for j := range ev.Messages {
			ev.Messages[j] = history.Message{
				ID: fmt.Sprintf("m%d-%d", i, j), Kind: history.KindInstruction, Role: history.RoleUser,
				CreatedAt: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC),
				Content:   map[string]any{"instruction": fmt.Sprintf("message %d of event %d", j, i)},
			}
		}
		if _, err := st.Append(ctx, "long", ev); err != nil {
			t.Fatal(err)
		}
	}
	fresh := b.newStoreOnOwnConn(t)
	got, err := fresh.Load(ctx, "long")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 10*perEvent {
		t.Fatalf("%d messages loaded", len(got.Messages))
	}
	if snapshotSeq(t, ctx, b, "long") != got.Seq {
		t.Fatal("no snapshot after 2 MB of history")
	}
	br, err := fresh.Append(ctx, "long", messagesEvent("one-more", "one more"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.newStoreOnOwnConn(t).Load(ctx, "long")
	if err != nil {
		t.Fatal(err)
	}
	if again.Seq != br.Seq || len(again.Messages) != 10*perEvent+1 || jsonOf(t, again) != replayed(t, ctx, st, "long") {
		t.Fatalf("after the append: seq %d (want %d), %d messages", again.Seq, br.Seq, len(again.Messages))
	}
}

// countingObserver counts what a Store tells its Observer.
type countingObserver struct {
	mu                            sync.Mutex
	conflicts, snapshots, rebuilt int
	misses                        int
}

func (o *countingObserver) AppendConflict(string) { o.mu.Lock(); o.conflicts++; o.mu.Unlock() }
func (o *countingObserver) SnapshotWritten(string, int) {
	o.mu.Lock()
	o.snapshots++
	o.mu.Unlock()
}
func (o *countingObserver) Rebuilt(string)   { o.mu.Lock(); o.rebuilt++; o.mu.Unlock() }
func (o *countingObserver) CacheMiss(string) { o.mu.Lock(); o.misses++; o.mu.Unlock() }

// TestStore_observer_is_told_of_conflicts_snapshots_and_rebuilds, and of
// cache misses.
func TestStore_observer_is_told_of_conflicts_snapshots_and_rebuilds(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := bustest.Ctx(t)
	obs := &countingObserver{}
	watched := b.newStoreOnOwnConn(t, store.Config{Observer: obs, SnapshotEvents: 3})
	other := b.newStoreOnOwnConn(t)
	if _, err := other.Create(ctx, "obs", createdEvent("c0", "sys")); err != nil {
		t.Fatal(err)
	}
	// A load without a snapshot folds the history from its start.
	if _, err := watched.Load(ctx, "obs"); err != nil {
		t.Fatal(err)
	}
	// Another writer appends; the watched store's next append conflicts.
	if _, err := other.Append(ctx, "obs", messagesEvent("o1", "x")); err != nil {
		t.Fatal(err)
	}
	if _, err := watched.Append(ctx, "obs", messagesEvent("w1", "y")); err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.rebuilt != 1 || obs.conflicts != 1 || obs.snapshots != 1 {
		t.Fatalf("observer saw %d rebuilds, %d conflicts, %d snapshots; want 1, 1, 1 (3 events folded)", obs.rebuilt, obs.conflicts, obs.snapshots)
	}
	// The first load read the branch; the append after the conflict
	// caught up with the branch it kept.
	if obs.misses != 1 {
		t.Fatalf("observer saw %d cache misses, want 1", obs.misses)
	}
}

// TestStore_cache_evicts_by_bytes: a Store whose cached branches add up to
// more than CacheBytes loads the least recently used one again from the
// stream (no snapshots here, so that load is a rebuild the observer sees),
// while the branch in use stays cached however large it is.
func TestStore_cache_evicts_by_bytes(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := bustest.Ctx(t)
	obs := &countingObserver{}
	st := b.newStoreOnOwnConn(t, store.Config{
		Observer: obs, CacheBytes: 64 << 10,
		SnapshotEvents: 1 << 20, SnapshotBytes: 1 << 30,
	})
	rebuilt := func() int {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		return obs.rebuilt
	}
	text := strings.Repeat("x", 2<<10)
	grow := func(id string, events int) {
		t.Helper()
		for i := range events {
			if _, err := st.Append(ctx, id, messagesEvent(fmt.Sprintf("%s-%d", id, i), text)); err != nil {
				t.Fatal(err)
			}
		}
	}
	load := func(id string, wantRebuilt int) {
		t.Helper()
		if _, err := st.Load(ctx, id); err != nil {
			t.Fatal(err)
		}
		if n := rebuilt(); n != wantRebuilt {
			t.Fatalf("after loading %s: %d rebuilds, want %d", id, n, wantRebuilt)
		}
	}
	for _, id := range []string{"big", "small", "tiny"} {
		if _, err := st.Create(ctx, id, createdEvent("c-"+id, "sys")); err != nil {
			t.Fatal(err)
		}
	}
	// big grows past the bound (40 events of over 2 KiB): the others,
	// used less recently, are evicted, but big stays cached while it is
	// the branch in use.
	grow("big", 40)
	load("big", 0)
	load("small", 1)
	load("small", 1)
	// Loading small evicted big.
	load("big", 2)
	// Branches under the bound together stay cached.
	load("small", 3)
	load("tiny", 4)
	load("small", 4)
	load("tiny", 4)
}

// A branch handed out by Load or Append never changes afterwards, whatever
// the next events do: a commit that appends messages, one that also sets a
// new system message (rewritten in place by the fold), a clear.
func TestStore_branches_handed_out_do_not_change(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := bustest.Ctx(t)
	created := createdWithSystemMessage("c0", "first system")
	if _, err := b.store.Create(ctx, "held", created); err != nil {
		t.Fatal(err)
	}
	withSystem := messagesEvent("m2", "two")
	withSystem.Settings = &history.Settings{System: "second system"}
	cleared := messagesEvent("m3", "three")
	cleared.Clear = true
	// Two commits first, so that the messages' array has room for the next
	// one and the fold does not move it.
	for i, ev := range []history.Event{messagesEvent("m0", "zero"), messagesEvent("m1", "one"), withSystem, cleared} {
		held, err := b.store.Load(ctx, "held")
		if err != nil {
			t.Fatal(err)
		}
		before := jsonOf(t, held)
		if _, err := b.store.Append(ctx, "held", ev); err != nil {
			t.Fatal(err)
		}
		if after := jsonOf(t, held); after != before {
			t.Errorf("event %d (%s) changed a branch loaded before it:\nbefore %s\nafter  %s", i, ev.RequestID, before, after)
		}
	}
	got, err := b.store.Load(ctx, "held")
	if err != nil {
		t.Fatal(err)
	}
	if jsonOf(t, got) != replayed(t, ctx, b.store, "held") {
		t.Error("load differs from the replayed history")
	}
}

// A commit that sets a new system message, once older messages have
// moved into segments, makes the next snapshot write the segments again:
// a new store loading the snapshot sees the new system message, as the
// history says.
func TestStore_snapshot_after_a_new_system_message(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := bustest.Ctx(t)
	cfg := store.Config{SnapshotEvents: 1, SegmentBytes: 4 << 10}
	st := b.newStoreOnOwnConn(t, cfg)
	created := createdWithSystemMessage("c0", "first system")
	if _, err := st.Create(ctx, "sys", created); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("s", 1<<10)
	for i := range 10 {
		if _, err := st.Append(ctx, "sys", messagesEvent(fmt.Sprintf("r%d", i), big)); err != nil {
			t.Fatal(err)
		}
	}
	if len(bucketKeys(t, ctx, b, "sys.")) == 0 {
		t.Fatal("no segments: the test needs the system message in one")
	}
	withSystem := messagesEvent("new-system", "after the change")
	withSystem.Settings = &history.Settings{System: "second system"}
	if _, err := st.Append(ctx, "sys", withSystem); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := st.Append(ctx, "sys", messagesEvent(fmt.Sprintf("s%d", i), "small")); err != nil {
			t.Fatal(err)
		}
	}
	got, err := b.newStoreOnOwnConn(t, cfg).Load(ctx, "sys")
	if err != nil {
		t.Fatal(err)
	}
	if first := got.Messages[0].Content["system_message"]; first != "second system" {
		t.Errorf("a new store loads the system message %q, want the new one", first)
	}
	if jsonOf(t, got) != replayed(t, ctx, st, "sys") {
		t.Error("the load from the snapshot differs from the replayed history")
	}
}

// createdWithSystemMessage is createdEvent with the system message among
// the branch's messages, as branch.create records it.
func createdWithSystemMessage(req, system string) history.Event {
	ev := createdEvent(req, system)
	ev.Messages = []history.Message{{ID: "sys", Kind: history.KindSystem, Role: history.RoleSystem,
		Content: map[string]any{"system_message": system}}}
	return ev
}
