package metrics_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/metrics"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// TestStore_counts_what_two_stores_do: two stores (two workers' caches)
// on one branch of a real server, each counting on its own registry: the
// one that loads the branch without a snapshot counts a rebuild, the one
// whose cache went stale counts a conflict at its next append, and the
// snapshots each writes on the cadence are counted with their size; a
// branch read because the store did not keep it is a cache miss.
func TestStore_counts_what_two_stores_do(t *testing.T) {
	t.Parallel()
	srv := bustest.NewServer(t)
	newStore := func() (*store.Store, *prometheus.Registry) {
		_, js := bustest.Connect(t, srv)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := provision.Ensure(ctx, js, provision.Config{})
		if err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		obs, err := metrics.Store(reg)
		if err != nil {
			t.Fatal(err)
		}
		st, err := store.New(js, res, store.Config{Observer: obs, SnapshotEvents: 4})
		if err != nil {
			t.Fatal(err)
		}
		return st, reg
	}
	one, regOne := newStore()
	two, regTwo := newStore()
	ctx := bustest.Ctx(t)
	if _, err := one.Create(ctx, "m", history.Event{Type: history.EventCreated, RequestID: "c", Time: time.Now(), Settings: &history.Settings{System: "s"}}); err != nil {
		t.Fatal(err)
	}
	appendTo := func(st *store.Store, id string) {
		t.Helper()
		ev := history.Event{Type: history.EventMessages, RequestID: id, Time: time.Now(), Messages: []history.Message{
			{ID: id, Kind: history.KindInstruction, Role: history.RoleUser, Content: map[string]any{"instruction": id}}}}
		if _, err := st.Append(ctx, "m", ev); err != nil {
			t.Fatal(err)
		}
	}
	appendTo(one, "a1")
	// two has never seen the branch, and no snapshot exists yet (one
	// has folded 2 events of a cadence of 4): two folds the whole history.
	if _, err := two.Load(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	appendTo(two, "b1")
	appendTo(one, "a2") // one's cache ends at a1: it finds b1 first
	for i := range 6 {
		appendTo(one, fmt.Sprintf("x%d", i))
	}
	want := []struct {
		reg    *prometheus.Registry
		metric string
		n      float64
	}{
		{regTwo, "lionbus_store_rebuilds_total", 1},
		{regOne, "lionbus_store_rebuilds_total", 0},
		{regOne, "lionbus_store_append_conflicts_total", 1},
		{regTwo, "lionbus_store_append_conflicts_total", 0},
		// two read the branch it did not keep once; one made it, and
		// caught up with b1 on the branch it kept.
		{regTwo, "lionbus_store_cache_misses_total", 1},
		{regOne, "lionbus_store_cache_misses_total", 0},
	}
	for _, w := range want {
		if got := counter(t, w.reg, w.metric, nil); got != w.n {
			t.Errorf("%s = %v, want %v", w.metric, got, w.n)
		}
	}
	if n := counter(t, regOne, "lionbus_store_snapshots_total", nil); n < 2 {
		t.Errorf("store one wrote %v snapshots after 10 events at a cadence of 4, want at least 2", n)
	}
	m := gathered(t, regOne, "lionbus_store_snapshot_bytes", nil)
	if m == nil {
		t.Fatal("lionbus_store_snapshot_bytes not gathered")
	}
	h := m.GetHistogram()
	if float64(h.GetSampleCount()) != counter(t, regOne, "lionbus_store_snapshots_total", nil) || h.GetSampleSum() <= 0 {
		t.Errorf("snapshot sizes: %d observed, sum %v", h.GetSampleCount(), h.GetSampleSum())
	}
}
