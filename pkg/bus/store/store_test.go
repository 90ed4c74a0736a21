package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

type storeBundle struct {
	srv   *embedded.Server
	js    jetstream.JetStream
	res   *provision.Resources
	store *store.Store
}

func setupStore(t *testing.T) *storeBundle {
	t.Helper()
	srv := bustest.NewServer(t)
	_, js := bustest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := provision.Ensure(ctx, js, provision.Config{})
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	st, err := store.New(js, res, store.Config{})
	if err != nil {
		t.Fatalf("NewStore: %v", err)
	}
	return &storeBundle{srv: srv, js: js, res: res, store: st}
}

// newStoreOnOwnConn returns a second Store on its own connection, as a
// second worker process would have.
// An optional cfg configures it.
func (b *storeBundle) newStoreOnOwnConn(t *testing.T, cfg ...store.Config) *store.Store {
	t.Helper()
	_, js := bustest.Connect(t, b.srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := provision.Ensure(ctx, js, provision.Config{})
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	var c store.Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	st, err := store.New(js, res, c)
	if err != nil {
		t.Fatalf("NewStore: %v", err)
	}
	return st
}

func createdEvent(req, system string) history.Event {
	return history.Event{
		Type:      history.EventCreated,
		RequestID: req,
		Time:      time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		Settings:  &history.Settings{System: system},
	}
}

func messagesEvent(req, text string) history.Event {
	return history.Event{
		Type:      history.EventMessages,
		RequestID: req,
		Time:      time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC),
		Messages: []history.Message{{
			ID:        "m-" + req,
			Kind:      history.KindInstruction,
			Role:      history.RoleUser,
			CreatedAt: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC),
			Content:   map[string]any{"instruction": text, "n": 3, "nested": map[string]any{"ok": true}},
		}},
		Result: json.RawMessage(`{"value":"` + text + `"}`),
	}
}

// jsonOf renders a branch for comparisons: two branches are the same when
// their JSON forms are.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return string(b)
}

func instructions(b *history.Branch) []string {
	var out []string
	for _, m := range b.Messages {
		if m.Kind == history.KindInstruction {
			out = append(out, fmt.Sprint(m.Content["instruction"]))
		}
	}
	return out
}

func TestStore_create_append_load_history_delete(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := bustest.Ctx(t)
	st := b.store

	created, err := st.Create(ctx, "b1", createdEvent("r0", "be brief"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if created.ID != "b1" || created.Settings.System != "be brief" || created.Seq == 0 {
		t.Fatalf("Create returned %+v", created)
	}
	for i := 1; i <= 3; i++ {
		got, err := st.Append(ctx, "b1", messagesEvent(fmt.Sprintf("r%d", i), fmt.Sprintf("hello %d", i)))
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		if n := len(instructions(got)); n != i {
			t.Fatalf("Append %d: branch has %d instructions", i, n)
		}
	}
	loaded, err := st.Load(ctx, "b1")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got, want := strings.Join(instructions(loaded), ","), "hello 1,hello 2,hello 3"; got != want {
		t.Fatalf("instructions = %q, want %q", got, want)
	}
	if loaded.Messages[1].Content["n"] == nil {
		t.Fatalf("content lost a field: %v", loaded.Messages[1].Content)
	}

	hist, err := st.History(ctx, "b1", 0, 0)
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	if len(hist) != 4 || hist[0].Type != history.EventCreated || hist[3].RequestID != "r3" {
		t.Fatalf("History = %+v", hist)
	}
	for i := 1; i < len(hist); i++ {
		if hist[i].Seq <= hist[i-1].Seq {
			t.Fatalf("history not in order: %d after %d", hist[i].Seq, hist[i-1].Seq)
		}
	}
	if hist[3].Seq != loaded.Seq {
		t.Fatalf("last history seq %d, branch seq %d", hist[3].Seq, loaded.Seq)
	}
	page, err := st.History(ctx, "b1", hist[1].Seq, 1)
	if err != nil {
		t.Fatalf("History page: %v", err)
	}
	if len(page) != 1 || page[0].RequestID != "r2" {
		t.Fatalf("History(after r1, 1) = %+v", page)
	}
	tail, err := st.History(ctx, "b1", loaded.Seq, 10)
	if err != nil || len(tail) != 0 {
		t.Fatalf("History after last = %v, %v; want empty", tail, err)
	}

	if err := st.Delete(ctx, "b1"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := st.Load(ctx, "b1"); !errors.Is(err, history.ErrBranchNotFound) {
		t.Fatalf("Load after Delete: %v, want ErrBranchNotFound", err)
	}
	if _, err := b.res.Branches.Get(ctx, "b1"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("snapshot after Delete: %v, want ErrKeyNotFound", err)
	}
	// The id can be used again; nothing of the deleted branch shows.
	again, err := st.Create(ctx, "b1", createdEvent("r10", "second life"))
	if err != nil {
		t.Fatalf("Create again: %v", err)
	}
	if len(again.Messages) != 0 || again.Settings.System != "second life" {
		t.Fatalf("re-created branch = %+v", again)
	}
}

func TestStore_errors(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := bustest.Ctx(t)
	st := b.store
	if _, err := st.Create(ctx, "e1", createdEvent("c1", "")); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if _, err := st.Append(ctx, "e1", messagesEvent("m1", "x")); err != nil {
		t.Fatalf("Append: %v", err)
	}

	tests := []struct {
		name string
		call func() error
		want error
		code ops.Code
	}{
		{"create existing", func() error { _, err := st.Create(ctx, "e1", createdEvent("c2", "")); return err }, history.ErrBranchExists, ""},
		{"create repeated by same request", func() error { _, err := st.Create(ctx, "e1", createdEvent("c1", "")); return err }, history.ErrAlreadyCommitted, ""},
		{"append same request twice", func() error { _, err := st.Append(ctx, "e1", messagesEvent("m1", "x")); return err }, history.ErrAlreadyCommitted, ""},
		{"load unknown", func() error { _, err := st.Load(ctx, "nope"); return err }, history.ErrBranchNotFound, ""},
		{"append unknown", func() error { _, err := st.Append(ctx, "nope", messagesEvent("m2", "x")); return err }, history.ErrBranchNotFound, ""},
		{"history unknown", func() error { _, err := st.History(ctx, "nope", 0, 0); return err }, history.ErrBranchNotFound, ""},
		{"delete unknown", func() error { return st.Delete(ctx, "nope") }, history.ErrBranchNotFound, ""},
		{"load bad id", func() error { _, err := st.Load(ctx, "a.b"); return err }, nil, ops.CodeInvalidRequest},
		{"create bad id", func() error { _, err := st.Create(ctx, "a b", createdEvent("c3", "")); return err }, nil, ops.CodeInvalidRequest},
		{"append too long id", func() error {
			_, err := st.Append(ctx, strings.Repeat("x", protocol.MaxTokenLength+1), messagesEvent("m3", "x"))
			return err
		}, nil, ops.CodeInvalidRequest},
		{"delete wildcard id", func() error { return st.Delete(ctx, ">") }, nil, ops.CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if err == nil {
				t.Fatal("no error")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if tt.code != "" {
				var oe *ops.Error
				if !errors.As(err, &oe) || oe.Code != tt.code {
					t.Fatalf("err = %v, want *ops.Error with code %s", err, tt.code)
				}
			}
		})
	}
	hist, err := st.History(ctx, "e1", 0, 0)
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	if len(hist) != 2 {
		t.Fatalf("history has %d events after the rejected writes, want 2", len(hist))
	}
}

func TestStore_concurrent_appends_all_land(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := bustest.Ctx(t)
	if _, err := b.store.Create(ctx, "c", createdEvent("c0", "")); err != nil {
		t.Fatalf("Create: %v", err)
	}
	// Four stores on four connections, as four workers; each appends
	// several operations at the same time as the others.
	const writers, each = 4, 6
	stores := []*store.Store{b.store}
	for len(stores) < writers {
		stores = append(stores, b.newStoreOnOwnConn(t))
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w, st := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprintf("w%d-%d", w, i)
				if _, err := st.Append(ctx, "c", messagesEvent(id, id)); err != nil {
					errs <- fmt.Errorf("%s: %w", id, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, err := b.store.Load(ctx, "c")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	seen := map[string]int{}
	for _, s := range instructions(got) {
		seen[s]++
	}
	for w := range writers {
		for i := range each {
			id := fmt.Sprintf("w%d-%d", w, i)
			if seen[id] != 1 {
				t.Errorf("%s recorded %d times, want 1", id, seen[id])
			}
		}
	}
	if len(seen) != writers*each {
		t.Errorf("%d distinct instructions, want %d", len(seen), writers*each)
	}
	hist, err := b.store.History(ctx, "c", 0, 0)
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	if len(hist) != 1+writers*each {
		t.Fatalf("history has %d events, want %d", len(hist), 1+writers*each)
	}
}

func TestStore_snapshot_rebuilt(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := bustest.Ctx(t)
	st := b.store
	// More events than the store reads one by one, so that a rebuild also
	// goes through the ordered-consumer path.
	const n = 40
	if _, err := st.Create(ctx, "s", createdEvent("s0", "sys")); err != nil {
		t.Fatalf("Create: %v", err)
	}
	for i := range n {
		if _, err := st.Append(ctx, "s", messagesEvent(fmt.Sprintf("s%d", i+1), fmt.Sprint(i))); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	want, err := st.Load(ctx, "s")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	wantJSON := jsonOf(t, want)

	tests := []struct {
		name  string
		spoil func(t *testing.T)
	}{
		{"deleted", func(t *testing.T) {
			if err := b.res.Branches.Delete(ctx, "s"); err != nil {
				t.Fatal(err)
			}
		}},
		{"corrupt", func(t *testing.T) {
			if _, err := b.res.Branches.Put(ctx, "s", []byte("\xc1 not msgpack")); err != nil {
				t.Fatal(err)
			}
		}},
		{"behind", func(t *testing.T) {
			// Rewind the snapshot: rebuild a branch from the first event only.
			hist, err := st.History(ctx, "s", 0, 5)
			if err != nil {
				t.Fatal(err)
			}
			old, err := history.Replay(hist)
			if err != nil {
				t.Fatal(err)
			}
			putSnapshot(t, ctx, b, old)
		}},
		{"ahead of history", func(t *testing.T) {
			fake := *want
			fake.Seq = want.Seq + 1000
			fake.Messages = nil
			putSnapshot(t, ctx, b, &fake)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spoil(t)
			// A store that has not cached the branch, as a new worker.
			fresh := b.newStoreOnOwnConn(t, store.Config{SnapshotEvents: 4})
			got, err := fresh.Load(ctx, "s")
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if g := jsonOf(t, got); g != wantJSON {
				t.Fatalf("reloaded branch differs:\n got %s\nwant %s", g, wantJSON)
			}
			// The load folded more events than the cadence: it wrote the
			// snapshot back, and another new store agrees.
			entry, err := b.res.Branches.Get(ctx, "s")
			if err != nil {
				t.Fatalf("snapshot not written back: %v", err)
			}
			if snap, err := store.DecodeSnapshotForTest(entry.Value()); err != nil || snap.Seq != want.Seq {
				t.Fatalf("snapshot written back: %v, seq %v, want %d", err, snap, want.Seq)
			}
			again, err := b.newStoreOnOwnConn(t).Load(ctx, "s")
			if err != nil || jsonOf(t, again) != wantJSON {
				t.Fatalf("second load differs: %v", err)
			}
		})
	}
}

// putSnapshot overwrites the snapshot of br.ID with br, in the store's
// encoding.
func putSnapshot(t *testing.T, ctx context.Context, b *storeBundle, br *history.Branch) {
	t.Helper()
	data, err := store.EncodeSnapshotForTest(br)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.res.Branches.Put(ctx, br.ID, data); err != nil {
		t.Fatal(err)
	}
}

func TestStore_stale_snapshot_of_deleted_branch_is_ignored(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := bustest.Ctx(t)
	st := b.store
	if _, err := st.Create(ctx, "d", createdEvent("d0", "old")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, "d", messagesEvent("d1", "old message")); err != nil {
		t.Fatal(err)
	}
	old, err := st.Load(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	// A late snapshot write of the deleted branch, as a slow worker could
	// make after the delete.
	putSnapshot(t, ctx, b, old)
	if _, err := st.Load(ctx, "d"); !errors.Is(err, history.ErrBranchNotFound) {
		t.Fatalf("Load of deleted branch with stale snapshot: %v", err)
	}
	// Re-create, and put the stale snapshot back on top of the new one.
	if _, err := st.Create(ctx, "d", createdEvent("d2", "new")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, "d", messagesEvent("d3", "new message")); err != nil {
		t.Fatal(err)
	}
	putSnapshot(t, ctx, b, old)
	// This store has the branch cached; a new one reads the snapshot.
	for _, s := range []*store.Store{st, b.newStoreOnOwnConn(t)} {
		got, err := s.Load(ctx, "d")
		if err != nil {
			t.Fatal(err)
		}
		if got.Settings.System != "new" || strings.Join(instructions(got), ",") != "new message" {
			t.Fatalf("branch mixes a deleted branch in: %+v", got)
		}
	}
}

func TestStore_history_limit_is_bounded(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := bustest.Ctx(t)
	st := b.store
	if _, err := st.Create(ctx, "h", createdEvent("h0", "")); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := st.Append(ctx, "h", messagesEvent(fmt.Sprintf("h%d", i+1), "x")); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		limit, want int
	}{{0, 21}, {-1, 21}, {5, 5}, {history.MaxHistoryPage + 1, 21}, {21, 21}, {12, 12}}
	for _, tt := range tests {
		got, err := st.History(ctx, "h", 0, tt.limit)
		if err != nil {
			t.Fatalf("History(limit %d): %v", tt.limit, err)
		}
		if len(got) != tt.want {
			t.Fatalf("History(limit %d) returned %d events, want %d", tt.limit, len(got), tt.want)
		}
		for i, ev := range got {
			if i > 0 && ev.Seq <= got[i-1].Seq {
				t.Fatalf("History(limit %d) out of order", tt.limit)
			}
		}
	}
}

func TestStore_conformance(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	opstest.TestStore(t, func(t *testing.T) history.Store { return b.store })
}

func TestStore_request_ids_reused_after_delete(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := bustest.Ctx(t)
	st := b.store
	for round := range 2 {
		if _, err := st.Create(ctx, "r", createdEvent("c", "")); err != nil {
			t.Fatalf("round %d: Create: %v", round, err)
		}
		got, err := st.Append(ctx, "r", messagesEvent("m", "again"))
		if err != nil {
			t.Fatalf("round %d: Append: %v", round, err)
		}
		if n := len(instructions(got)); n != 1 {
			t.Fatalf("round %d: %d instructions, want 1", round, n)
		}
		if err := st.Delete(ctx, "r"); err != nil {
			t.Fatalf("round %d: Delete: %v", round, err)
		}
	}
}

// BenchmarkStore measures the NATS store: Append (load, conditional
// publish, snapshot update) on a branch kept at a constant size, Load with
// a fresh snapshot, and Load rebuilding a 50-event branch from history.
func BenchmarkStore(b *testing.B) {
	sb := setupStoreBench(b)
	ctx := context.Background()
	st := sb.store
	if _, err := st.Create(ctx, "append", createdEvent("c", "sys")); err != nil {
		b.Fatal(err)
	}
	next := 0 // request ids stay unique when -count runs Append again
	b.Run("Append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			next++
			ev := messagesEvent(fmt.Sprintf("a%d", next), "x")
			ev.Clear = true
			if _, err := st.Append(ctx, "append", ev); err != nil {
				b.Fatal(err)
			}
		}
	})

	// A branch that remembers as many commits as it may: every append
	// also forgets the oldest.
	if _, err := st.Create(ctx, "long", createdEvent("c", "sys")); err != nil {
		b.Fatal(err)
	}
	for i := range history.MaxRememberedCommits + 100 {
		ev := messagesEvent(fmt.Sprintf("f%d", i), "x")
		ev.Clear = true
		if _, err := st.Append(ctx, "long", ev); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("Append/long", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			next++
			ev := messagesEvent(fmt.Sprintf("a%d", next), "x")
			ev.Clear = true
			if _, err := st.Append(ctx, "long", ev); err != nil {
				b.Fatal(err)
			}
		}
	})

	if _, err := st.Create(ctx, "load", createdEvent("c", "sys")); err != nil {
		b.Fatal(err)
	}
	for i := range 49 {
		if _, err := st.Append(ctx, "load", messagesEvent(fmt.Sprintf("l%d", i), "x")); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("Load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := st.Load(ctx, "load"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Load/rebuild-50", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			if err := sb.res.Branches.Delete(ctx, "load"); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := st.Load(ctx, "load"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func setupStoreBench(b *testing.B) *storeBundle {
	b.Helper()
	srv := bustest.NewServer(b)
	_, js := bustest.Connect(b, srv)
	res, err := provision.Ensure(context.Background(), js, provision.Config{})
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.New(js, res, store.Config{})
	if err != nil {
		b.Fatal(err)
	}
	return &storeBundle{srv: srv, js: js, res: res, store: st}
}

func TestStore_undecodable_history_is_an_error(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := bustest.Ctx(t)
	if _, err := b.store.Create(ctx, "g", createdEvent("g0", "")); err != nil {
		t.Fatal(err)
	}
	// Something that is not a msgpack event lands on the history subject.
	if _, err := b.js.Publish(ctx, b.res.Subjects.History("g"), []byte("\xc1garbage")); err != nil {
		t.Fatal(err)
	}
	if err := b.res.Branches.Delete(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	_, err := b.store.Load(ctx, "g")
	if !errors.Is(err, store.ErrCorruptHistory) {
		t.Fatalf("Load = %v, want ErrCorruptHistory", err)
	}
}

func TestStore_events_without_request_id_are_never_deduplicated(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := bustest.Ctx(t)
	if _, err := b.store.Create(ctx, "anon", createdEvent("", "")); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := b.store.Append(ctx, "anon", messagesEvent("", fmt.Sprint(i))); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	got, err := b.store.Load(ctx, "anon")
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.Join(instructions(got), ","); s != "0,1,2" {
		t.Fatalf("instructions %q, want 0,1,2", s)
	}
}
