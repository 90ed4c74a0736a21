package bus_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/histexport"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/wire"
)

// relocated is the JSON of branch src as it reads on another cluster
// under id, its sequences mapped by seqs: what an import must give.
func relocated(t *testing.T, src any, id string, seqs map[uint64]uint64) any {
	t.Helper()
	m := asJSON(t, src).(map[string]any)
	m["id"] = id
	seq := func(v any) uint64 {
		s, ok := seqs[uint64(v.(float64))]
		if !ok {
			t.Fatalf("seq %v is no event's", v)
		}
		return s
	}
	m["seq"] = float64(seq(m["seq"]))
	if commits, ok := m["commits"].(map[string]any); ok {
		for k, v := range commits {
			commits[k] = float64(seq(v))
		}
	}
	return m
}

// TestBranchExport_import_on_a_second_server_gives_the_same_branch: a
// branch of many exchanges, clears included, exported from one server
// and imported on another (whose sequences differ: other branches live
// there) in small pages, under its own id or another: branch.get of the
// import is the source's, its sequences mapped; so is branch.get at
// every event; the history holds the same events.
func TestBranchExport_import_on_a_second_server_gives_the_same_branch(t *testing.T) {
	t.Parallel()
	src := bustest.New(t, provision.Config{})
	src.StartWorker(t, nil, nil, nil, worker.Config{})
	const id = "exported"
	srcEvents := pastBranch(t, src, id, 30, 100)
	var file bytes.Buffer
	n, err := src.Client.ExportBranch(bustest.Ctx(t), id, &file, "test")
	if err != nil || n != len(srcEvents) {
		t.Fatalf("ExportBranch = %d, %v; want %d events", n, err, len(srcEvents))
	}
	sum, err := histexport.Verify(bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Events != len(srcEvents) || sum.LastSeq != srcEvents[len(srcEvents)-1].Seq {
		t.Fatalf("summary %+v, want %d events up to %d", sum, len(srcEvents), srcEvents[len(srcEvents)-1].Seq)
	}
	srcHead := bustest.MustResult(t, src.Do(t, "branch.get", id, nil), nil)

	dst := bustest.New(t, provision.Config{})
	dst.StartWorker(t, nil, nil, nil, worker.Config{})
	dst.CreateBranch(t, "resident") // so that the sequences differ
	for _, target := range []string{id, "imported-copy"} {
		t.Run(target, func(t *testing.T) {
			res, err := dst.Client.ImportBranch(bustest.Ctx(t), bytes.NewReader(file.Bytes()), target, client.ImportOptions{PageBytes: 2 << 10})
			if err != nil {
				t.Fatal(err)
			}
			dstEvents := readHistory(t, dst, target, 1000, nil)
			if len(dstEvents) != len(srcEvents) || res.Head != dstEvents[len(dstEvents)-1].Seq || res.BranchID != target {
				t.Fatalf("import answered %+v; the branch holds %d events, the source %d", res, len(dstEvents), len(srcEvents))
			}
			seqs := map[uint64]uint64{}
			for i := range srcEvents {
				seqs[srcEvents[i].Seq] = dstEvents[i].Seq
				a, b := srcEvents[i], dstEvents[i]
				a.Seq, a.BranchID, b.Seq, b.BranchID = 0, "", 0, ""
				if !reflect.DeepEqual(asJSON(t, a), asJSON(t, b)) {
					t.Fatalf("event %d differs:\n src %v\n dst %v", i, asJSON(t, a), asJSON(t, b))
				}
			}
			got := bustest.MustResult(t, dst.Do(t, "branch.get", target, nil), nil)
			if want := relocated(t, srcHead.Value, target, seqs); !reflect.DeepEqual(asJSON(t, got.Value), want) {
				t.Fatalf("imported branch:\n got %v\nwant %v", asJSON(t, got.Value), want)
			}
			for i := range srcEvents {
				at := bustest.MustResult(t, src.Do(t, "branch.get", id, map[string]any{"at_seq": srcEvents[i].Seq}), nil)
				got := bustest.MustResult(t, dst.Do(t, "branch.get", target, map[string]any{"at_seq": dstEvents[i].Seq}), nil)
				if want := relocated(t, at.Value, target, seqs); !reflect.DeepEqual(asJSON(t, got.Value), want) {
					t.Fatalf("at event %d:\n got %v\nwant %v", i, asJSON(t, got.Value), want)
				}
			}
			// Importing again into the same id is refused, and changes
			// nothing.
			_, err = dst.Client.ImportBranch(bustest.Ctx(t), bytes.NewReader(file.Bytes()), target, client.ImportOptions{PageBytes: 2 << 10})
			if !errors.Is(err, wire.ErrBranchExists) {
				t.Fatalf("second import = %v, want wire.ErrBranchExists", err)
			}
			if again := readHistory(t, dst, target, 1000, nil); len(again) != len(dstEvents) {
				t.Fatalf("the refused import changed the history: %d events, want %d", len(again), len(dstEvents))
			}
		})
	}
}

// TestBranchImport_a_page_sent_again_continues_where_it_stopped: a page
// whose events the branch holds in part (a worker stopped half way, the
// request was delivered again) appends only the rest; a page that does
// not continue the branch is refused and changes nothing.
func TestBranchImport_a_page_sent_again_continues_where_it_stopped(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	evs := pastBranch(t, b, "page-src", 6, 100)
	page := func(from, to int) []history.Event {
		out := append([]history.Event(nil), evs[from:to]...)
		return out
	}
	do := func(head uint64, events []history.Event) (*client.Reply, map[string]any) {
		r := b.Do(t, "branch.import", "page-dst", map[string]any{"head": head, "events": events})
		if r.Err() != nil {
			return r, nil
		}
		var v map[string]any
		bustest.MustResult(t, r, &v)
		return r, v
	}
	// The first three events, then all of the first five again (head 0).
	_, v := do(0, page(0, 3))
	if v["imported"] != float64(3) || v["present"] != float64(0) {
		t.Fatalf("first page: %v", v)
	}
	_, v = do(0, page(0, 5))
	if v["imported"] != float64(2) || v["present"] != float64(3) {
		t.Fatalf("the page sent again: %v, want 2 imported, 3 present", v)
	}
	head := uint64(v["head"].(float64))
	first := readHistory(t, b, "page-dst", 1000, nil)[0].Seq
	tests := []struct {
		name   string
		head   uint64
		events any
		want   ops.Code
	}{
		{"a head that is no event's", head + 1000, page(5, len(evs)), ops.CodeInvalidRequest},
		{"an earlier head followed by other events", first, page(2, 5), ops.CodeInvalidRequest},
		{"a page that starts over on an existing branch", 0, append(page(0, 1), page(3, 5)...), ops.CodeBranchExists},
		{"no events", head, []any{}, protocol.CodeInvalidData},
		{"a second branch.created", head, page(0, 1), ops.CodeInvalidRequest},
		{"events out of order", head, []history.Event{evs[6], evs[5]}, ops.CodeInvalidRequest},
		{"an unknown event type", head, []map[string]any{{"seq": 1, "type": "branch.renamed", "request_id": "x", "time": evs[0].Time}}, protocol.CodeInvalidData},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := b.Do(t, "branch.import", "page-dst", map[string]any{"head": tt.head, "events": tt.events})
			if code := bustest.RemoteCode(t, r); code != tt.want {
				t.Fatalf("code %s, want %s: %s", code, tt.want, r.Data)
			}
			if got := readHistory(t, b, "page-dst", 1000, nil); len(got) != 5 {
				t.Fatalf("the refused page changed the branch: %d events, want 5", len(got))
			}
		})
	}
	_, v = do(head, page(5, len(evs)))
	if v["imported"] != float64(len(evs)-5) {
		t.Fatalf("the rest: %v", v)
	}
}

// TestBranchImport_keeps_numbers_exactly: numbers in imported content,
// metadata and notes read back as they were written, integers beyond
// float64's precision included.
func TestBranchImport_keeps_numbers_exactly(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	page := `{"head": 0, "events": [
		{"seq": 7, "type": "branch.created", "request_id": "c", "time": "2026-01-02T03:04:05Z", "settings": {"notes": {"big": 12345678901234567890, "neg": -9007199254740993}}},
		{"seq": 9, "type": "branch.messages", "request_id": "m", "time": "2026-01-02T03:04:06Z", "messages": [
			{"id": "m1", "kind": "instruction", "role": "user", "created_at": "2026-01-02T03:04:06Z", "content": {"instruction": "x", "n": [1, 2.5, 18446744073709551615]}, "metadata": {"k": {"v": 9007199254740993}}}
		], "result": {"value": "ok"}}
	]}`
	bustest.MustResult(t, b.Do(t, "branch.import", "numbers", json.RawMessage(page)), nil)
	// Exported and imported again, the numbers are still exact.
	var file bytes.Buffer
	if _, err := b.Client.ExportBranch(bustest.Ctx(t), "numbers", &file, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Client.ImportBranch(bustest.Ctx(t), &file, "numbers-again", client.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"numbers", "numbers-again"} {
		res := bustest.MustResult(t, b.Do(t, "branch.get", id, nil), nil)
		for _, want := range []string{`"big":12345678901234567890`, `"neg":-9007199254740993`, `"n":[1,2.5,18446744073709551615]`, `"v":9007199254740993`} {
			if !bytes.Contains(res.Value, []byte(want)) {
				t.Errorf("branch.get %s holds no %s:\n%s", id, want, res.Value)
			}
		}
	}
}
