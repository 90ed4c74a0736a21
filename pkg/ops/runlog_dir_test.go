package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli/clitest"
	"github.com/lionbus/lionbus/pkg/wire"
	"github.com/lionbus/lionbus/schemas"
)

// runLogBundle is an engine serving the fake CLI as cli:fake with a
// recording run log, its default run log directory set to dir, and the
// branch b on cli:fake.
type runLogBundle struct {
	eng     *ops.Engine
	store   history.Store
	runLog  *recordingRunLog
	signals *signalRecorder
	cliDir  string // where the fake CLI records its runs
}

func newRunLogBundle(t *testing.T, dir string) *runLogBundle {
	t.Helper()
	rb := &runLogBundle{store: opstest.NewMemoryStore(), runLog: newRecordingRunLog(), signals: &signalRecorder{}, cliDir: t.TempDir()}
	prov, err := cli.New(cli.Command{Name: "fake", Argv: []string{clitest.Build(t)}, Env: []string{"FAKECLI_DIR=" + rb.cliDir}})
	if err != nil {
		t.Fatal(err)
	}
	rb.eng, err = ops.NewEngine(ops.Config{Store: rb.store, RunLog: rb.runLog, RunLogDir: dir, Chunks: &chunkOutlet{},
		Signals: rb.signals, Providers: ops.NewProviders(map[string]ops.Provider{"cli": prov})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rb.eng.Do(context.Background(), ops.Request{ID: "create", Verb: "branch.create", BranchID: "b",
		Data: json.RawMessage(`{"chat_model":"cli:fake"}`)}); err != nil {
		t.Fatal(err)
	}
	return rb
}

// do sends verb with data (checked against the verb's request schema
// when valid is true) on branch b.
func (rb *runLogBundle) do(t *testing.T, id, verb, data string, valid bool) (*ops.Result, error) {
	t.Helper()
	if err := schemas.Validate("lionbus."+verb+".request", []byte(data)); (err == nil) != valid {
		t.Fatalf("%s request %s: schema says %v, want valid %v", verb, data, err, valid)
	}
	res, err := rb.eng.Do(context.Background(), ops.Request{ID: id, Verb: verb, BranchID: "b", Data: json.RawMessage(data), LastAttempt: true})
	if err == nil {
		out, _ := json.Marshal(res)
		if verr := schemas.Validate("lionbus."+verb+".result", out); verr != nil {
			t.Fatalf("%s result %s does not match its schema: %v", verb, out, verr)
		}
	}
	return res, err
}

// 0021-D5-06: a persisted run that names no directory keeps its log in
// the engine's (the worker's) run log directory, DefaultRunLogDir when
// none is configured, and its result says where.
func TestRunLogDir_default_from_the_engine_config(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, configured, want string
	}{
		{"none configured", "", ops.DefaultRunLogDir},
		{"configured", "team-a", "team-a"},
		{"longest", strings.Repeat("d", ops.MaxRunLogDirLength), strings.Repeat("d", ops.MaxRunLogDirLength)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rb := newRunLogBundle(t, tt.configured)
			for _, verb := range []string{"run", "operate"} {
				res, err := rb.do(t, verb+"-1", verb, `{"instruction":"list the files","stream_persist":true}`, true)
				if err != nil {
					t.Fatalf("%s: %v", verb, err)
				}
				// start snapshot, log opened, final snapshot, log removed
				if got, want := rb.runLog.dirsOf(verb+"-1"), []string{tt.want, tt.want, tt.want, tt.want}; !slices.Equal(got, want) {
					t.Errorf("%s: run log calls in %q, want %q", verb, got, want)
				}
				want := ops.RunLogLocation{Dir: tt.want, Chunks: "log/" + tt.want + "/" + verb + "-1", Snapshot: "snap/" + tt.want + "/" + verb + "-1"}
				if opstest.RunLog(t, res) == nil || *opstest.RunLog(t, res) != want {
					t.Errorf("%s: result's run_log %+v, want %+v", verb, opstest.RunLog(t, res), want)
				}
			}
			// Without stream_persist nothing is kept, and the result names no log.
			res, err := rb.do(t, "run-2", "run", `{"instruction":"list the files"}`, true)
			if err != nil {
				t.Fatal(err)
			}
			if opstest.RunLog(t, res) != nil || len(rb.runLog.dirsOf("run-2")) != 0 {
				t.Errorf("a run without stream_persist: run_log %+v, calls %q", opstest.RunLog(t, res), rb.runLog.dirsOf("run-2"))
			}
		})
	}
}

// 0021-D5-06: stream_persist_dir overrides the worker's directory for that
// request only: every snapshot and the log go there and nowhere else, and
// the next request without it is back in the default.
func TestRunLogDir_request_override(t *testing.T) {
	t.Parallel()
	rb := newRunLogBundle(t, "team-a")
	tests := []struct {
		id, verb, data, want string
	}{
		{"r-audit", "run", `{"instruction":"go","stream_persist":true,"stream_persist_dir":"audit"}`, "audit"},
		{"o-audit", "operate", `{"instruction":"go","skip_validation":true,"stream_persist":true,"stream_persist_dir":"audit_2-x"}`, "audit_2-x"},
		{"r-default", "run", `{"instruction":"go","stream_persist":true}`, "team-a"},
		{"r-same", "run", `{"instruction":"go","stream_persist":true,"stream_persist_dir":"team-a"}`, "team-a"},
	}
	for _, tt := range tests {
		res, err := rb.do(t, tt.id, tt.verb, tt.data, true)
		if err != nil {
			t.Fatalf("%s: %v", tt.id, err)
		}
		if got := rb.runLog.dirsOf(tt.id); len(got) != 4 || slices.ContainsFunc(got, func(d string) bool { return d != tt.want }) {
			t.Errorf("%s: run log calls in %q, want four, all in %q", tt.id, got, tt.want)
		}
		if opstest.RunLog(t, res) == nil || opstest.RunLog(t, res).Dir != tt.want || opstest.RunLog(t, res).Snapshot != "snap/"+tt.want+"/"+tt.id {
			t.Errorf("%s: result's run_log %+v, want dir %q", tt.id, opstest.RunLog(t, res), tt.want)
		}
	}
	// A replay answers from history: the same location.
	res, err := rb.do(t, "r-audit", "run", tests[0].data, true)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Replayed || opstest.RunLog(t, res) == nil || opstest.RunLog(t, res).Dir != "audit" {
		t.Errorf("replayed run: replayed %v, run_log %+v, want dir audit", res.Replayed, opstest.RunLog(t, res))
	}
}

// 0021-D5-06: a stream_persist_dir that is not one subject token, or one
// without stream_persist, is refused as invalid_request (wrapping
// ErrInvalidRunLogDir) before anything happens: no instruction recorded,
// no model call, no run log touched, no lifecycle signal.
func TestRunLogDir_invalid_is_refused_before_anything_is_stored(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, extra, wantMsg string
		schemaValid          bool // the schema cannot tell (persist false)
	}{
		{"empty", `"stream_persist":true,"stream_persist_dir":""`, "is empty", false},
		{"a dot", `"stream_persist":true,"stream_persist_dir":"a.b"`, "not a run log directory", false},
		{"a wildcard", `"stream_persist":true,"stream_persist_dir":">"`, "not a run log directory", false},
		{"a star", `"stream_persist":true,"stream_persist_dir":"*"`, "not a run log directory", false},
		{"a space", `"stream_persist":true,"stream_persist_dir":"a b"`, "not a run log directory", false},
		{"a slash", `"stream_persist":true,"stream_persist_dir":"../logs"`, "not a run log directory", false},
		{"not ASCII", `"stream_persist":true,"stream_persist_dir":"journal-é"`, "not a run log directory", false},
		{"too long", `"stream_persist":true,"stream_persist_dir":"` + strings.Repeat("d", ops.MaxRunLogDirLength+1) + `"`, "65 characters long", false},
		{"without stream_persist", `"stream_persist_dir":"audit"`, `needs "stream_persist": true`, false},
		{"stream_persist false", `"stream_persist":false,"stream_persist_dir":"audit"`, `needs "stream_persist": true`, false},
		{"not a string", `"stream_persist":true,"stream_persist_dir":7`, "stream_persist_dir", false},
	}
	for _, verb := range []string{"run", "operate"} {
		for i, tt := range tests {
			t.Run(verb+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				rb := newRunLogBundle(t, "")
				id := fmt.Sprintf("bad-%d", i)
				before, err := rb.store.Load(context.Background(), "b")
				if err != nil {
					t.Fatal(err)
				}
				_, err = rb.do(t, id, verb, `{"instruction":"list the files",`+tt.extra+`}`, tt.schemaValid)
				var oe *ops.Error
				if !errors.As(err, &oe) || oe.Code != ops.CodeInvalidRequest || !strings.Contains(oe.Message, tt.wantMsg) {
					t.Fatalf("err %v, want invalid_request with %q", err, tt.wantMsg)
				}
				if tt.name != "not a string" && !errors.Is(err, ops.ErrInvalidRunLogDir) {
					t.Errorf("err %v does not wrap ErrInvalidRunLogDir", err)
				}
				if !strings.Contains(oe.Message, "stream_persist_dir") {
					t.Errorf("message %q does not name the field", oe.Message)
				}
				b, err := rb.store.Load(context.Background(), "b")
				if err != nil {
					t.Fatal(err)
				}
				if len(b.Messages) != 0 || b.Commits.Len() != before.Commits.Len() {
					t.Errorf("the refused request recorded %v (commits %v)", msgKinds(b.Messages), b.Commits)
				}
				if n := len(clitest.Records(t, rb.cliDir)); n != 0 {
					t.Errorf("the CLI ran %d times", n)
				}
				if got := rb.runLog.dirsOf(id); len(got) != 0 {
					t.Errorf("the run log was used: %q", got)
				}
				if got := rb.signals.types(id); len(got) != 0 {
					t.Errorf("signals %v for a refused request", got)
				}
			})
		}
	}
}

// 0021-D5-06: a middle called directly (a custom coordinator) gets the
// same check; "" is the engine's directory.
func TestRunLogDir_run_and_collect_middle(t *testing.T) {
	t.Parallel()
	rb := newRunLogBundle(t, "team-a")
	mid, err := rb.eng.Middle(ops.MiddleRunAndCollect)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id, dir   string
		persist   bool
		wantDir   string
		wantError bool
	}{
		{"m-default", "", true, "team-a", false},
		{"m-audit", "audit", true, "audit", false},
		{"m-bad", "a.b", true, "", true},
		{"m-no-persist", "audit", false, "", true},
	}
	for _, tt := range tests {
		res, err := mid.Exchange(context.Background(), middleIn(ops.MiddleInput{RequestID: tt.id, BranchID: "b", Run: &ops.RunInput{StreamPersist: tt.persist, StreamPersistDir: tt.dir}}, func(c *wire.CommunicateRequest) { c.Instruction = "go" }))
		if tt.wantError {
			if !errors.Is(err, ops.ErrInvalidRunLogDir) || code(err) != ops.CodeInvalidRequest {
				t.Errorf("%s: err %v, want invalid_request wrapping ErrInvalidRunLogDir", tt.id, err)
			}
			if got := rb.runLog.dirsOf(tt.id); len(got) != 0 {
				t.Errorf("%s: the run log was used: %q", tt.id, got)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.id, err)
		}
		if res.Run == nil || res.Run.Log == nil || res.Run.Log.Dir != tt.wantDir {
			t.Errorf("%s: run report %+v, want dir %q", tt.id, res.Run, tt.wantDir)
		}
	}
	if n := len(clitest.Records(t, rb.cliDir)); n != 2 {
		t.Errorf("the CLI ran %d times, want 2 (the refused calls never reach it)", n)
	}
}

// 0021-D5-06: the engine refuses a default directory that breaks the rule.
func TestRunLogDir_config_is_checked(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"a.b", "lion.>", "x y", strings.Repeat("d", ops.MaxRunLogDirLength+1)} {
		_, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore(), RunLogDir: dir})
		if !errors.Is(err, ops.ErrInvalidRunLogDir) {
			t.Errorf("RunLogDir %q: err %v, want ErrInvalidRunLogDir", dir, err)
		}
	}
	for _, dir := range []string{"", "default", "A-z_0", strings.Repeat("d", ops.MaxRunLogDirLength)} {
		if _, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore(), RunLogDir: dir}); err != nil {
			t.Errorf("RunLogDir %q: %v", dir, err)
		}
	}
}
