package bus_test

// 0021-D5-06 end to end: where a persisted run keeps its log is the
// worker's run log directory (bus.Config.RunLogDir, the worker's
// --runlog-dir), or the request's stream_persist_dir; the log and the
// snapshots are on <prefix>.runlog.<dir>.<id>.chunks and .snapshot in
// LION_RUNLOG, and the answer's run_log names them.

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/chunks"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli/clitest"
)

// runLogSubjects returns the message count of every subject in the run
// log stream.
func runLogSubjects(t *testing.T, rb *runBus) map[string]uint64 {
	t.Helper()
	st, err := rb.JS.Stream(bustest.Ctx(t), rb.Res.Subjects.RunLogStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(bustest.Ctx(t), jetstream.WithSubjectFilter(rb.Res.Subjects.RunLogWildcard()))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Subjects == nil {
		return map[string]uint64{}
	}
	return info.State.Subjects
}

// dirSnapshots reads the snapshots a consumer scoped to the directory dir
// (<prefix>.runlog.<dir>.>) sees.
func dirSnapshots(t *testing.T, rb *runBus, dir string) []chunks.Snapshot {
	t.Helper()
	cons, err := rb.JS.OrderedConsumer(bustest.Ctx(t), rb.Res.Subjects.RunLogStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{rb.Res.Subjects.RunLogDirWildcard(dir)},
	})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.FetchNoWait(100)
	if err != nil {
		t.Fatal(err)
	}
	var out []chunks.Snapshot
	for m := range batch.Messages() {
		if !strings.HasSuffix(m.Subject(), ".snapshot") {
			t.Errorf("%s is left in the directory after a clean run", m.Subject())
			continue
		}
		var s chunks.Snapshot
		if err := json.Unmarshal(m.Data(), &s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
		t.Fatal(err)
	}
	return out
}

// 0021-D5-06: the worker's directory is the default; stream_persist_dir
// overrides it for its request only, for run and for operate's
// run_and_collect; the snapshots land on the directory's subjects and
// nowhere else, and the answer says where.
func TestRunLogDir_bus(t *testing.T) {
	t.Parallel()
	rb := newRunBusWith(t, nil, func(c *bus.Config) { c.RunLogDir = "team-a" })
	subj := rb.Res.Subjects
	tests := []struct {
		name, verb, id string
		data           map[string]any
		wantDir        string
	}{
		{"run, the worker's directory", "run", "run-default", map[string]any{"instruction": "go", "stream_persist": true}, "team-a"},
		{"run, overridden", "run", "run-audit", map[string]any{"instruction": "go", "stream_persist": true, "stream_persist_dir": "audit"}, "audit"},
		{"operate, overridden", "operate", "op-audit", map[string]any{"instruction": "go", "skip_validation": true, "stream_persist": true, "stream_persist_dir": "audit"}, "audit"},
		{"operate, the worker's directory", "operate", "op-default", map[string]any{"instruction": "go", "skip_validation": true, "stream_persist": true}, "team-a"},
	}
	want := map[string]uint64{}
	for _, tt := range tests {
		reply := rb.Do(t, tt.verb, "b1", tt.data, client.WithID(tt.id))
		bustest.CheckSchema(t, reply)
		res := bustest.MustResult(t, reply, nil)
		wantLoc := ops.RunLogLocation{Dir: tt.wantDir, Chunks: subj.RunLog(tt.wantDir, tt.id), Snapshot: subj.RunSnapshot(tt.wantDir, tt.id)}
		if opstest.RunLog(t, res) == nil || *opstest.RunLog(t, res) != wantLoc {
			t.Errorf("%s: run_log %+v, want %+v", tt.name, opstest.RunLog(t, res), wantLoc)
		}
		want[subj.RunSnapshot(tt.wantDir, tt.id)] = 2 // the start and the end; the live log is purged
		if got := runLogSubjects(t, rb); !maps.Equal(got, want) {
			t.Errorf("%s: run log subjects %v, want %v", tt.name, got, want)
		}
	}
	// A consumer scoped to one directory sees that directory's runs only.
	for dir, ids := range map[string][]string{"audit": {"run-audit", "op-audit"}, "team-a": {"run-default", "op-default"}, "default": nil} {
		var got []string
		for _, s := range dirSnapshots(t, rb, dir) {
			if s.Dir != dir || s.Branch == nil || s.Branch.ID != "b1" {
				t.Errorf("snapshot of %s in %s: dir %q, branch %v", s.RequestID, dir, s.Dir, s.Branch)
			}
			if !slices.Contains(got, s.RequestID) {
				got = append(got, s.RequestID)
			}
		}
		if !slices.Equal(got, ids) {
			t.Errorf("directory %s holds the runs %q, want %q", dir, got, ids)
		}
	}
}

// 0021-D5-06: an invalid stream_persist_dir is refused before anything is
// stored: nothing in LION_RUNLOG, no instruction in the history, the CLI
// never started. On the bus the request schema refuses it first
// (invalid_data, the message pointing at the field); the engine's own
// check (invalid_request) is the one transport-free callers get.
func TestRunLogDir_bus_invalid_stores_nothing(t *testing.T) {
	t.Parallel()
	rb := newRunBus(t, nil)
	tests := []struct {
		verb string
		dir  any
	}{
		{"run", "a.b"},
		{"run", ">"},
		{"run", ""},
		{"run", strings.Repeat("x", ops.MaxRunLogDirLength+1)},
		{"operate", "lion.runlog"},
		{"operate", "*"},
	}
	for _, tt := range tests {
		reply := rb.Do(t, tt.verb, "b1", map[string]any{"instruction": "go", "stream_persist": true, "stream_persist_dir": tt.dir})
		bustest.CheckSchema(t, reply)
		var re *client.RemoteError
		if err := reply.Err(); !errors.As(err, &re) || re.Code != protocol.CodeInvalidData || !strings.Contains(re.Message, "/stream_persist_dir") {
			t.Errorf("%s with %q: answer %s, want invalid_data pointing at /stream_persist_dir", tt.verb, tt.dir, reply.Data)
		}
	}
	// Without stream_persist (or with it false) the directory is refused too.
	for _, persist := range []any{nil, false} {
		data := map[string]any{"instruction": "go", "stream_persist_dir": "audit"}
		if persist != nil {
			data["stream_persist"] = persist
		}
		reply := rb.Do(t, "run", "b1", data)
		var re *client.RemoteError
		if err := reply.Err(); !errors.As(err, &re) || re.Code != protocol.CodeInvalidData || !strings.Contains(re.Message, "stream_persist") {
			t.Errorf("stream_persist_dir with stream_persist %v: answer %s, want invalid_data", persist, reply.Data)
		}
	}
	if got := runLogSubjects(t, rb); len(got) != 0 {
		t.Errorf("the refused runs stored %v", got)
	}
	if msgs := rb.branchMessages(t); len(msgs) != 0 {
		t.Errorf("the refused runs recorded %d messages", len(msgs))
	}
	if n := len(clitest.Records(t, rb.dir)); n != 0 {
		t.Errorf("the CLI ran %d times", n)
	}
}

// 0021-D5-06: a run whose worker dies leaves its live log in its
// directory, where a reader of that directory finds it.
func TestRunLogDir_bus_crash_leaves_the_log_in_its_directory(t *testing.T) {
	t.Parallel()
	wctx, crash := context.WithCancel(context.Background())
	defer crash()
	rb := newRunBus(t, wctx)
	id, err := rb.Client.Submit(bustest.Ctx(t), "run", "b1", map[string]any{"instruction": "HANG", "stream_persist": true, "stream_persist_dir": "audit"})
	if err != nil {
		t.Fatal(err)
	}
	logSubj := rb.Res.Subjects.RunLog("audit", id)
	bustest.WaitFor(t, 10*time.Second, "the run log", func() bool { return runLogSubjects(t, rb)[logSubj] == 5 })
	crash()
	bustest.WaitFor(t, 10*time.Second, "the CLI to be stopped", func() bool {
		recs := clitest.Records(t, rb.dir)
		return len(recs) == 1 && clitest.Reaped(recs[0].PID)
	})
	want := map[string]uint64{logSubj: 5, rb.Res.Subjects.RunSnapshot("audit", id): 1}
	if got := runLogSubjects(t, rb); !maps.Equal(got, want) {
		t.Errorf("run log subjects %v, want %v", got, want)
	}
}
