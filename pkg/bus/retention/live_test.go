package retention_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/retention"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// liveBus is a bus with a worker, and a store of its own for the
// compactor and for reading what is stored.
type liveBus struct {
	*bustest.Bus
	st  *store.Store
	js  jetstream.JetStream
	res *provision.Resources
}

func newLiveBus(t *testing.T) *liveBus {
	t.Helper()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	_, js, res := b.Conn(t)
	st, err := store.New(js, res, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return &liveBus{Bus: b, st: st, js: js, res: res}
}

func (b *liveBus) do(t *testing.T, verb, id string, data map[string]any) {
	t.Helper()
	bustest.MustResult(t, b.Do(t, verb, id, data), nil)
}

func (b *liveBus) exchanges(t *testing.T, id string, n int) {
	t.Helper()
	for i := range n {
		b.do(t, "communicate", id, map[string]any{"instruction": "hi " + id + " " + string(rune('a'+i%26))})
	}
}

// get is branch.get of id at seq (0: head).
func (b *liveBus) get(t *testing.T, id string, seq uint64) history.Branch {
	t.Helper()
	var data any
	if seq != 0 {
		data = map[string]any{"at_seq": seq}
	}
	var br history.Branch
	bustest.MustResult(t, b.Do(t, "branch.get", id, data), &br)
	return br
}

// stored is the branch's history as the stream holds it.
func (b *liveBus) stored(t *testing.T, id string) []history.Event {
	t.Helper()
	evs, err := b.st.History(bustest.Ctx(t), id, 0, 0)
	if err != nil {
		t.Fatalf("history of %s: %v", id, err)
	}
	return evs
}

func (b *liveBus) compactor(t *testing.T, cfg retention.LiveConfig) *retention.Compactor {
	t.Helper()
	cfg.Logger = bustest.Logger(t)
	c, err := retention.NewCompactor(b.js, b.res, b.st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// passAll runs one pass and returns its reports by branch.
func passAll(t *testing.T, c *retention.Compactor) map[string]retention.Trimmed {
	t.Helper()
	out, err := c.Pass(bustest.Ctx(t))
	if err != nil {
		t.Fatalf("pass: %v", err)
	}
	m := map[string]retention.Trimmed{}
	for _, tr := range out {
		m[tr.Branch] = tr
	}
	return m
}

// pass runs one pass and returns its report of branch id.
func pass(t *testing.T, c *retention.Compactor, id string) retention.Trimmed {
	t.Helper()
	return passAll(t, c)[id]
}

// state is what branch.get answers but for the sequence and commits,
// which a compaction point moves or re-encodes.
type state struct {
	ID         string
	Settings   any
	Messages   any
	ModelCalls uint64
	CreatedAt  time.Time
	UpdatedAt  time.Time
	Fork       any
	Commits    map[string]uint64
}

func stateOf(t *testing.T, br history.Branch) state {
	t.Helper()
	commits := map[string]uint64{}
	for id, seq := range br.Commits.All() {
		commits[id] = seq
	}
	s := state{ID: br.ID, Settings: br.Settings, Messages: br.Messages, ModelCalls: br.ModelCalls,
		CreatedAt: br.CreatedAt.UTC(), UpdatedAt: br.UpdatedAt.UTC(), Commits: commits}
	if br.Fork != nil {
		s.Fork = *br.Fork
	}
	// Compare through JSON, as a client sees them.
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out state
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameState(t *testing.T, what string, got, want history.Branch) {
	t.Helper()
	if g, w := stateOf(t, got), stateOf(t, want); !reflect.DeepEqual(g, w) {
		t.Fatalf("%s: branch.get differs\n got %+v\nwant %+v", what, g, w)
	}
}

// refusedAsCompacted checks that a read of id at seq is refused as a
// read before the branch's first compaction point.
func refusedAsCompacted(t *testing.T, b *liveBus, id string, seq uint64) {
	t.Helper()
	r := b.Do(t, "branch.get", id, map[string]any{"at_seq": seq})
	if code := bustest.RemoteCode(t, r); code != ops.CodeInvalidRequest {
		t.Fatalf("branch.get %s at seq %d before the compaction point answered %s, want %s", id, seq, code, ops.CodeInvalidRequest)
	}
	var re *client.RemoteError
	if err := r.Err(); !errors.As(err, &re) || !strings.Contains(re.Message, "dropped by retention") {
		t.Fatalf("branch.get %s at seq %d: %v, want it to say the history was dropped by retention", id, seq, r.Err())
	}
}

// TestCompactor_never_removes_a_prefix_a_live_fork_needs: a parent with
// a live fork keeps every event up to the fork point through passes
// that trim a branch without forks, the fork and the parent read as
// before; once the fork is deleted the parent is trimmed past that
// point, its head reads as before and a read before its compaction
// point is refused, saying why.
func TestCompactor_never_removes_a_prefix_a_live_fork_needs(t *testing.T) {
	b := newLiveBus(t)
	for _, id := range []string{"parent", "alone"} {
		b.CreateBranch(t, id)
		b.exchanges(t, id, 4)
	}
	forkAt := b.get(t, "parent", 0).Seq
	b.do(t, "branch.fork", "parent", map[string]any{"branch_id": "fork", "at_seq": forkAt})
	b.exchanges(t, "fork", 1)
	b.exchanges(t, "parent", 4)
	b.exchanges(t, "alone", 4)
	wantParentAtFork := b.get(t, "parent", forkAt)
	wantFork := b.get(t, "fork", 0)

	c := b.compactor(t, retention.LiveConfig{KeepEvents: 3})
	var droppedAlone uint64
	for round := range 4 {
		reports := passAll(t, c)
		droppedAlone += reports["alone"].DroppedEvents
		if tp := reports["parent"]; tp.DroppedEvents != 0 {
			t.Fatalf("round %d: dropped %d events of the parent (before seq %d), whose fork starts at seq %d", round, tp.DroppedEvents, tp.DroppedBefore, forkAt)
		}
		if first := b.stored(t, "parent")[0]; first.Seq > forkAt {
			t.Fatalf("round %d: the parent's history starts at seq %d, after its live fork's point %d", round, first.Seq, forkAt)
		}
		sameState(t, "the fork", b.get(t, "fork", 0), wantFork)
		sameState(t, "the parent at the fork point", b.get(t, "parent", forkAt), wantParentAtFork)
		b.exchanges(t, "parent", 3)
		b.exchanges(t, "alone", 3)
	}
	if droppedAlone == 0 {
		t.Fatal("the branch without forks lost nothing: the limits never applied")
	}
	alone := b.stored(t, "alone")
	if alone[0].Type != history.EventCompacted || alone[0].Compaction == nil {
		t.Fatalf("the trimmed branch's history starts with a %s, want a %s", alone[0].Type, history.EventCompacted)
	}
	if len(alone) < 4 {
		t.Fatalf("the trimmed branch holds %d events, want at least the last 3 and a compaction point", len(alone))
	}
	refusedAsCompacted(t, b, "alone", alone[0].Seq-1)

	b.do(t, "branch.delete", "fork", nil)
	before := b.get(t, "parent", 0)
	var dropped uint64
	for range 3 {
		dropped += pass(t, c, "parent").DroppedEvents
		b.exchanges(t, "parent", 3)
		before = b.get(t, "parent", 0)
	}
	if dropped == 0 {
		t.Fatal("the parent lost nothing once its fork was deleted")
	}
	first := b.stored(t, "parent")[0]
	if first.Seq <= forkAt || first.Type != history.EventCompacted {
		t.Fatalf("the parent's history starts with a %s at seq %d, want a compaction point after the dead fork's point %d", first.Type, first.Seq, forkAt)
	}
	sameState(t, "the parent's head after the passes", b.get(t, "parent", 0), before)
	refusedAsCompacted(t, b, "parent", forkAt)
}

// TestCompactor_limits: each limit keeps what it names, drops the rest
// at a compaction point, and branch.get at the head answers the same
// after every pass; a limit that keeps everything drops nothing. What
// was dropped is in the compaction point that reports it.
func TestCompactor_limits(t *testing.T) {
	const age = time.Hour
	cases := []struct {
		name     string
		keep     int
		age      bool
		wantDrop bool
	}{
		{name: "keep_events", keep: 4, wantDrop: true},
		{name: "max_age", age: true, wantDrop: true},
		{name: "both", keep: 4, age: true, wantDrop: true},
		{name: "keep_more_than_there_is", keep: 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newLiveBus(t)
			var cutoff time.Time
			cfg := retention.LiveConfig{KeepEvents: tc.keep, Clock: func() time.Time { return cutoff.Add(age) }}
			if tc.age {
				cfg.MaxAge = age
			}
			c := b.compactor(t, cfg)
			b.CreateBranch(t, "b")
			var dropped uint64
			var report *history.Compaction
			for round := range 3 {
				b.exchanges(t, "b", 6)
				// Everything stored until now is older than the age, by
				// the compactor's clock; what follows younger.
				cutoff = time.Now()
				before := b.get(t, "b", 0)
				tr := pass(t, c, "b")
				if tr.Skipped != "" {
					t.Fatalf("round %d: skipped: %s", round, tr.Skipped)
				}
				sameState(t, "after a pass", b.get(t, "b", 0), before)
				if tr.DroppedEvents > 0 {
					dropped += tr.DroppedEvents
					evs := b.stored(t, "b")
					if evs[0].Seq != tr.DroppedBefore || evs[0].Type != history.EventCompacted {
						t.Fatalf("round %d: dropped before seq %d, the history starts with a %s at seq %d", round, tr.DroppedBefore, evs[0].Type, evs[0].Seq)
					}
					last := evs[len(evs)-1]
					if last.Seq != tr.Compaction || last.Compaction == nil {
						t.Fatalf("round %d: the compaction point %d reporting the drop is not the head (%s at %d)", round, tr.Compaction, last.Type, last.Seq)
					}
					report = last.Compaction
					if report.DroppedBefore != tr.DroppedBefore || report.DroppedEvents != tr.DroppedEvents || report.Reason == "" {
						t.Fatalf("round %d: the compaction point reports %+v, the pass %+v", round, report, tr)
					}
				}
			}
			if dropped > 0 != tc.wantDrop {
				t.Fatalf("dropped %d events, want some: %v", dropped, tc.wantDrop)
			}
			evs := b.stored(t, "b")
			if tc.keep > 0 && tc.wantDrop && len(evs) < tc.keep+1 {
				t.Fatalf("%d events kept, want at least the last %d and the compaction point before them", len(evs), tc.keep)
			}
			if !tc.wantDrop && evs[0].Type != history.EventCreated {
				t.Fatalf("nothing to drop, yet the history starts with a %s", evs[0].Type)
			}
			// Every event the age keeps can still be read at.
			for _, ev := range evs {
				if ev.Type == history.EventMessages {
					at := b.get(t, "b", ev.Seq)
					if at.Seq != ev.Seq {
						t.Fatalf("branch.get at kept seq %d answered seq %d", ev.Seq, at.Seq)
					}
				}
			}
		})
	}
}

// TestCompactor_skips_a_state_larger_than_an_event: a branch whose state
// does not fit in one history event is not compacted, and nothing of it
// is dropped; the pass says why.
func TestCompactor_skips_a_state_larger_than_an_event(t *testing.T) {
	b := newLiveBus(t)
	b.CreateBranch(t, "big")
	// Each exchange fits an event; together they do not.
	big := strings.Repeat("x", 200<<10)
	for range 6 {
		b.do(t, "communicate", "big", map[string]any{"instruction": big})
	}
	n := len(b.stored(t, "big"))
	c := b.compactor(t, retention.LiveConfig{KeepEvents: 1})
	tr := pass(t, c, "big")
	if tr.Skipped == "" || !strings.Contains(tr.Skipped, "max payload") {
		t.Fatalf("pass over a branch too large to compact reported %+v, want it skipped for its size", tr)
	}
	if tr.Compaction != 0 || tr.DroppedEvents != 0 || len(b.stored(t, "big")) != n {
		t.Fatalf("pass %+v changed a branch it could not compact (%d events, had %d)", tr, len(b.stored(t, "big")), n)
	}
}
