package bus_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// overlapModel counts how many of its calls run at once, and holds each
// call until hold has passed or want calls overlap, whichever is first.
type overlapModel struct {
	hold time.Duration
	want int

	mu      sync.Mutex
	now     int
	most    int
	calls   map[string]int
	arrived chan struct{}
}

func (m *overlapModel) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	m.mu.Lock()
	m.now++
	m.most = max(m.most, m.now)
	m.calls[call.Instruction]++
	if m.now >= m.want {
		select {
		case <-m.arrived:
		default:
			close(m.arrived)
		}
	}
	m.mu.Unlock()
	select {
	case <-m.arrived:
	case <-time.After(m.hold):
	case <-ctx.Done():
	}
	m.mu.Lock()
	m.now--
	m.mu.Unlock()
	return &ops.Completion{Text: "done " + call.Instruction}, nil
}

// TestBranchOrder_parallel_requests_overlap: requests on one branch marked
// branchorder parallel run their model calls at the same time, across two
// workers, each is answered once, and every exchange is recorded once;
// the same requests without the mark run one at a time.
func TestBranchOrder_parallel_requests_overlap(t *testing.T) {
	t.Parallel()
	const n = 6
	tests := []struct {
		name     string
		opts     []client.SubmitOption
		hold     time.Duration
		wantMost func(int) bool
	}{
		// Parallel, every call waits until all n have arrived (or 10 s):
		// on a loaded machine the n requests may take a while to reach
		// the model, and they must all overlap.
		{"parallel", []client.SubmitOption{client.WithParallel()}, 10 * time.Second, func(most int) bool { return most == n }},
		// Ordered, the calls never overlap: each holds 150 ms, then lets
		// the next one in.
		{"ordered (default)", nil, 150 * time.Millisecond, func(most int) bool { return most == 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := bustest.New(t, provision.Config{LeaseTTL: 3 * time.Second})
			model := &overlapModel{hold: tt.hold, want: n, calls: map[string]int{}, arrived: make(chan struct{})}
			for range 2 {
				b.StartWorker(t, nil, nil, map[string]ops.Provider{"overlap": model}, worker.Config{MaxInFlight: n})
			}
			b.CreateBranch(t, "fan")
			ids := make([]string, n)
			for i := range n {
				id, err := b.Client.Submit(bustest.Ctx(t), "communicate", "fan",
					map[string]any{"instruction": fmt.Sprintf("part %d", i), "chat_model": "overlap:x"}, tt.opts...)
				if err != nil {
					t.Fatal(err)
				}
				ids[i] = id
			}
			for _, id := range ids {
				if _, err := b.Await(t, id).Result(); err != nil {
					t.Fatalf("%s: %v", id, err)
				}
			}
			model.mu.Lock()
			most, calls := model.most, model.calls
			model.mu.Unlock()
			if !tt.wantMost(most) {
				t.Errorf("at most %d model calls ran at once", most)
			}
			recorded := map[string]int{}
			for _, ev := range b.History(t, "fan") {
				if ev.Type == history.EventMessages {
					recorded[fmt.Sprint(ev.Messages[0].Content["instruction"])]++
				}
			}
			for i := range n {
				text := fmt.Sprintf("part %d", i)
				if calls[text] != 1 || recorded[text] != 1 {
					t.Errorf("%s: %d model calls, recorded %d times; want 1 and 1", text, calls[text], recorded[text])
				}
			}
		})
	}
}

// TestBranchOrder_unknown_value_is_refused: a branchorder other than
// ordered or parallel is answered invalid_attribute, naming the
// attribute, and nothing is recorded.
func TestBranchOrder_unknown_value_is_refused(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	b.CreateBranch(t, "b")
	for _, v := range []any{"sideways", "PARALLEL", true} {
		ev, err := protocol.EventBuilder{Source: "/test"}.Request("communicate", "b", "", "", map[string]any{"instruction": "hi"})
		if err != nil {
			t.Fatal(err)
		}
		ev.SetExtension(protocol.ExtBranchOrder, v)
		m, err := protocol.Encode(b.Res.Subjects.Op("communicate"), ev, protocol.Structured)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.JS.PublishMsg(bustest.Ctx(t), m); err != nil {
			t.Fatal(err)
		}
		r := b.Await(t, ev.ID())
		if code := bustest.RemoteCode(t, r); code != protocol.CodeInvalidAttribute {
			t.Fatalf("branchorder %v: answered %s, want %s", v, code, protocol.CodeInvalidAttribute)
		}
		if _, err := r.Result(); err == nil || !strings.Contains(err.Error(), "branchorder") {
			t.Fatalf("branchorder %v: error %v does not name the attribute", v, err)
		}
	}
	for _, ev := range b.History(t, "b") {
		if ev.Type == history.EventMessages {
			t.Fatalf("a refused request recorded %v", ev.Messages)
		}
	}
}
