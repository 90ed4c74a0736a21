package bus_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// pastBranch builds, on b, a branch id of n exchanges that includes
// communicates with clear_messages and a branch.clear, with the events of
// a second branch interleaved (so the branch's sequences have gaps), and
// returns the whole history of id read through branch.history in pages
// of pageSize events.
func pastBranch(t testing.TB, b *bustest.Bus, id string, n, pageSize int) []history.Event {
	t.Helper()
	b.CreateBranch(t, id+"-other")
	b.CreateBranch(t, id)
	for i := range n {
		data := map[string]any{"instruction": fmt.Sprintf("exchange %d", i)}
		if i%9 == 4 {
			data["clear_messages"] = true
		}
		bustest.MustResult(t, b.Do(t, "communicate", id, data), nil)
		if i%5 == 2 {
			bustest.MustResult(t, b.Do(t, "communicate", id+"-other", map[string]any{"instruction": "elsewhere"}), nil)
		}
		if i == n/2 {
			bustest.MustResult(t, b.Do(t, "branch.clear", id, nil), nil)
		}
	}
	return readHistory(t, b, id, pageSize, nil)
}

// readHistory reads the history of id through branch.history pages of
// pageSize events, with extra in every request.
func readHistory(t testing.TB, b *bustest.Bus, id string, pageSize int, extra map[string]any) []history.Event {
	t.Helper()
	var all []history.Event
	var after uint64
	for {
		data := map[string]any{"after": after, "limit": pageSize}
		for k, v := range extra {
			data[k] = v
		}
		var page ops.HistoryPage
		bustest.MustResult(t, b.Do(t, "branch.history", id, data), &page)
		all = append(all, page.Events...)
		if !page.More {
			return all
		}
		if len(page.Events) == 0 {
			t.Fatalf("history page after %d is empty but says more", after)
		}
		after = page.Next
	}
}

// asJSON is v as generic JSON, for comparing what two paths produced
// whatever their Go types.
func asJSON(t testing.TB, v any) any {
	t.Helper()
	raw, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBranchGet_at_every_sequence_is_the_fold_up_to_it: on a branch of
// many exchanges with clears (clear_messages and branch.clear) and gaps
// in its sequences, branch.get at every sequence from the branch's
// creation to its head answers the fold, by history.Replay, of the
// history pages up to that sequence; branch.history at that sequence
// answers exactly those events.
func TestBranchGet_at_every_sequence_is_the_fold_up_to_it(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	const id = "past"
	evs := pastBranch(t, b, id, 24, 7)
	clears := 0
	for _, ev := range evs {
		if ev.Type == history.EventCleared || ev.Clear {
			clears++
		}
	}
	if clears < 3 {
		t.Fatalf("history holds %d clears, want at least 3 (the test must cover them)", clears)
	}
	head := evs[len(evs)-1].Seq
	gaps := 0
	k := 0 // evs[:k+1] are the events at or before seq
	for seq := evs[0].Seq; seq <= head; seq++ {
		for k+1 < len(evs) && evs[k+1].Seq <= seq {
			k++
		}
		if evs[k].Seq != seq {
			gaps++
		}
		want, err := history.Replay(evs[:k+1])
		if err != nil {
			t.Fatalf("replay up to seq %d: %v", seq, err)
		}
		res := bustest.MustResult(t, b.Do(t, "branch.get", id, map[string]any{"at_seq": seq}), nil)
		if got, w := asJSON(t, res.Value), asJSON(t, want); !reflect.DeepEqual(got, w) {
			t.Fatalf("branch.get at_seq %d:\n got %v\nwant %v", seq, got, w)
		}
		page := readHistory(t, b, id, 5, map[string]any{"at_seq": seq})
		if got, w := asJSON(t, page), asJSON(t, evs[:k+1]); !reflect.DeepEqual(got, w) {
			t.Fatalf("branch.history at_seq %d: %d events, want %d", seq, len(page), k+1)
		}
	}
	if gaps == 0 {
		t.Fatal("no sequence between two events of the branch was read (the test must cover gaps)")
	}
	// The head is the same, read either way.
	head0 := bustest.MustResult(t, b.Do(t, "branch.get", id, nil), nil)
	headAt := bustest.MustResult(t, b.Do(t, "branch.get", id, map[string]any{"at_seq": head}), nil)
	if !reflect.DeepEqual(asJSON(t, head0.Value), asJSON(t, headAt.Value)) {
		t.Fatalf("branch.get at the head differs from branch.get")
	}
}

// TestBranchGet_at_time_is_the_fold_up_to_the_first_later_event: at the
// time of each event, and between two events, branch.get answers the
// fold of the events stamped at or before that time.
func TestBranchGet_at_time_is_the_fold_up_to_the_first_later_event(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	const id = "past-time"
	evs := pastBranch(t, b, id, 8, 100)
	for i, ev := range evs {
		for _, at := range []time.Time{ev.Time, ev.Time.Add(time.Nanosecond)} {
			n := 0
			for n < len(evs) && !evs[n].Time.After(at) {
				n++
			}
			if n <= i {
				t.Fatalf("event %d is stamped after itself", i)
			}
			want, err := history.Replay(evs[:n])
			if err != nil {
				t.Fatal(err)
			}
			res := bustest.MustResult(t, b.Do(t, "branch.get", id, map[string]any{"at_time": at.Format(time.RFC3339Nano)}), nil)
			if got, w := asJSON(t, res.Value), asJSON(t, want); !reflect.DeepEqual(got, w) {
				t.Fatalf("branch.get at_time %s:\n got %v\nwant %v", at.Format(time.RFC3339Nano), got, w)
			}
			page := readHistory(t, b, id, 3, map[string]any{"at_time": at.Format(time.RFC3339Nano)})
			if len(page) != n {
				t.Fatalf("branch.history at_time %s: %d events, want %d", at.Format(time.RFC3339Nano), len(page), n)
			}
		}
	}
}

// TestBranchGet_at_a_point_the_branch_never_saw_is_a_clear_error: a
// point before the branch's creation, beyond its head, or named twice is
// refused with a specific code, by branch.get and branch.history alike.
func TestBranchGet_at_a_point_the_branch_never_saw_is_a_clear_error(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	const id = "past-errors"
	evs := pastBranch(t, b, id, 2, 100)
	first, head := evs[0], evs[len(evs)-1]
	tests := []struct {
		name  string
		verbs []string
		data  map[string]any
		want  ops.Code
	}{
		{"before the creation", []string{"branch.get"}, map[string]any{"at_seq": first.Seq - 1}, ops.CodeBranchNotFound},
		{"before the creation, by time", []string{"branch.get"}, map[string]any{"at_time": first.Time.Add(-time.Second).Format(time.RFC3339Nano)}, ops.CodeBranchNotFound},
		{"beyond the head", []string{"branch.get", "branch.history"}, map[string]any{"at_seq": head.Seq + 1}, ops.CodeInvalidRequest},
		{"both a sequence and a time", []string{"branch.get", "branch.history"}, map[string]any{"at_seq": first.Seq, "at_time": first.Time.Format(time.RFC3339Nano)}, ops.CodeInvalidRequest},
		{"a sequence that is not a number", []string{"branch.get", "branch.history"}, map[string]any{"at_seq": "ten"}, protocol.CodeInvalidData},
		{"a time that is not RFC 3339", []string{"branch.get", "branch.history"}, map[string]any{"at_time": "yesterday"}, ops.CodeInvalidRequest},
		{"a branch that does not exist", []string{"branch.get", "branch.history"}, map[string]any{"at_seq": 1}, ops.CodeBranchNotFound},
	}
	for _, tt := range tests {
		for _, verb := range tt.verbs {
			t.Run(tt.name+"/"+verb, func(t *testing.T) {
				branch := id
				if tt.name == "a branch that does not exist" {
					branch = "never-created"
				}
				r := b.Do(t, verb, branch, tt.data)
				if got := bustest.RemoteCode(t, r); got != tt.want {
					t.Fatalf("%s %v: code %s, want %s", verb, tt.data, got, tt.want)
				}
			})
		}
	}
}

// TestBranchGet_at_sequences_across_history_pages: a read of the past
// reads the history in pages (64 events, doubling); at the events around
// each page boundary, and at a sample of the others, branch.get is the
// fold up to it.
func TestBranchGet_at_sequences_across_history_pages(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	const id = "past-pages"
	evs := pastBranch(t, b, id, 220, 1000)
	if len(evs) < 64+128+10 {
		t.Fatalf("%d events: too few to cross two page boundaries", len(evs))
	}
	check := map[int]bool{}
	for _, edge := range []int{64, 64 + 128, 64 + 128 + 256} {
		for _, i := range []int{edge - 2, edge - 1, edge, edge + 1} {
			if i < len(evs) {
				check[i] = true
			}
		}
	}
	for i := 0; i < len(evs); i += 17 {
		check[i] = true
	}
	check[len(evs)-2] = true
	for i := range check {
		want, err := history.Replay(evs[:i+1])
		if err != nil {
			t.Fatal(err)
		}
		res := bustest.MustResult(t, b.Do(t, "branch.get", id, map[string]any{"at_seq": evs[i].Seq}), nil)
		if got, w := asJSON(t, res.Value), asJSON(t, want); !reflect.DeepEqual(got, w) {
			t.Fatalf("branch.get at event %d (seq %d) differs from the fold", i, evs[i].Seq)
		}
	}
}
