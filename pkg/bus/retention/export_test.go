package retention_test

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"sort"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/histexport"
	"github.com/lionbus/lionbus/pkg/bus/retention"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/wire"
)

// trimmed is a branch whose history retention cut: it starts with a
// compaction point, and holds later ones.
func trimmed(t *testing.T, b *liveBus, id string) []history.Event {
	t.Helper()
	b.do(t, "branch.create", "", map[string]any{"branch_id": id, "system": "be brief", "chat_model": "scripted:echo",
		"metadata": map[string]any{"n": 12345678901234567}})
	c := b.compactor(t, retention.LiveConfig{KeepEvents: 3})
	for range 4 {
		b.exchanges(t, id, 4)
		pass(t, c, id)
	}
	b.exchanges(t, id, 2)
	evs := b.stored(t, id)
	if evs[0].Type != history.EventCompacted {
		t.Fatalf("the history of %s starts with a %s: retention cut nothing", id, evs[0].Type)
	}
	return evs
}

// sameConversation compares what branch.get answers of two branches but
// for their ids and sequences: settings, messages, counts, times and the
// request ids they remember.
func sameConversation(t *testing.T, what string, got, want history.Branch) {
	t.Helper()
	g, w := stateOf(t, got), stateOf(t, want)
	keys := func(m map[string]uint64) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	if gk, wk := keys(g.Commits), keys(w.Commits); !reflect.DeepEqual(gk, wk) {
		t.Fatalf("%s: remembered requests %v, want %v", what, gk, wk)
	}
	g.ID, w.ID, g.Commits, w.Commits = "", "", nil, nil
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s: branch.get differs\n got %+v\nwant %+v", what, g, w)
	}
}

// TestCompactor_a_trimmed_branch_exports_verifies_and_imports: the
// export of a branch whose history retention cut starts with its first
// kept compaction point, chained like every line; it verifies, a one
// byte edit of that line does not, and it imports on a second server to
// a branch whose branch.get equals the source's, at the head and at
// every event kept; a first page sent again is continued, not doubled.
func TestCompactor_a_trimmed_branch_exports_verifies_and_imports(t *testing.T) {
	src := newLiveBus(t)
	const id = "trimmed"
	srcEvents := trimmed(t, src, id)
	var file bytes.Buffer
	n, err := src.Client.ExportBranch(bustest.Ctx(t), id, &file, "test")
	if err != nil || n != len(srcEvents) {
		t.Fatalf("ExportBranch = %d, %v; want %d events", n, err, len(srcEvents))
	}
	sum, err := histexport.Verify(bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatalf("verify the export of a trimmed branch: %v", err)
	}
	if sum.Header.Format != histexport.Format || sum.FirstSeq != srcEvents[0].Seq || sum.Events != len(srcEvents) {
		t.Fatalf("summary %+v, want %s from seq %d, %d events", sum, histexport.Format, srcEvents[0].Seq, len(srcEvents))
	}
	lines := bytes.SplitAfter(file.Bytes(), []byte("\n"))
	if !bytes.Contains(lines[1], []byte(`"type":"lionbus.branch.compacted"`)) {
		t.Fatalf("the first event line is not the compaction point: %.200s", lines[1])
	}
	edited := bytes.Clone(file.Bytes())
	at := len(lines[0]) + bytes.Index(lines[1], []byte(`"messages":[`)) + len(`"messages":[`) + 10
	edited[at] ^= 1
	var le *histexport.LineError
	if _, err := histexport.Verify(bytes.NewReader(edited)); !errors.As(err, &le) || le.Line != 2 {
		t.Fatalf("verify of the export with its compaction point edited = %v, want an error at line 2", err)
	}

	dst := newLiveBus(t)
	dst.CreateBranch(t, "resident") // so that the sequences differ
	const copyID = "trimmed-copy"
	res, err := dst.Client.ImportBranch(bustest.Ctx(t), bytes.NewReader(file.Bytes()), copyID, client.ImportOptions{PageBytes: 16 << 10})
	if err != nil {
		t.Fatalf("import the export of a trimmed branch: %v", err)
	}
	dstEvents := dst.stored(t, copyID)
	// The import starts the branch with a branch.created of its own, then
	// the source's events.
	if len(dstEvents) != len(srcEvents)+1 || dstEvents[0].Type != history.EventCreated || res.Head != dstEvents[len(dstEvents)-1].Seq {
		t.Fatalf("import answered %+v; the branch holds %d events (first %s), the source %d", res, len(dstEvents), dstEvents[0].Type, len(srcEvents))
	}
	sameConversation(t, "the imported branch", dst.get(t, copyID, 0), src.get(t, id, 0))
	for i, ev := range srcEvents {
		d := dstEvents[i+1]
		if d.Type != ev.Type || d.RequestID != ev.RequestID {
			t.Fatalf("event %d: imported %s of %q, the source's is %s of %q", i, d.Type, d.RequestID, ev.Type, ev.RequestID)
		}
		sameConversation(t, "at the event "+string(ev.Type)+" "+ev.RequestID, dst.get(t, copyID, d.Seq), src.get(t, id, ev.Seq))
	}
	// The imported branch lives on.
	dst.exchanges(t, copyID, 1)

	// The first page delivered twice: the second finds it there.
	evs := fileEvents(t, file.Bytes())
	for round, want := range []map[string]any{{"imported": float64(2), "present": float64(0)}, {"imported": float64(0), "present": float64(2)}} {
		var v map[string]any
		bustest.MustResult(t, dst.Do(t, "branch.import", "redelivered", map[string]any{"head": 0, "events": evs[:2]}), &v)
		if v["imported"] != want["imported"] || v["present"] != want["present"] {
			t.Fatalf("round %d: branch.import of the first page answered %v, want %v", round, v, want)
		}
	}
	if got := len(dst.stored(t, "redelivered")); got != 3 {
		t.Fatalf("the page sent twice left %d events, want 3 (the start and the page's two)", got)
	}
}

// fileEvents reads the events of an export.
func fileEvents(t *testing.T, file []byte) []wire.Event {
	t.Helper()
	r, err := histexport.NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	var out []wire.Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
}
