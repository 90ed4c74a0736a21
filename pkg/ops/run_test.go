package ops_test

// The run and run_and_collect bullets of ADR-0021 D3 and D4 at the engine,
// against the fake Claude Code CLI as a real subprocess.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli/clitest"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
	"github.com/lionbus/lionbus/pkg/wire"
	"github.com/lionbus/lionbus/schemas"
)

// chunkOutlet is a Config.Chunks keeping every request's chunks.
type chunkOutlet struct {
	mu     sync.Mutex
	byReq  map[string]*opstest.ChunkBuffer
	closed map[string]int
}

func (o *chunkOutlet) OpenChunks(_ context.Context, req ops.Request) (ops.ChunkStream, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byReq == nil {
		o.byReq, o.closed = map[string]*opstest.ChunkBuffer{}, map[string]int{}
	}
	buf := &opstest.ChunkBuffer{}
	o.byReq[req.ID] = buf
	return chunkStream{buf, func() { o.mu.Lock(); o.closed[req.ID]++; o.mu.Unlock() }}, nil
}

func (o *chunkOutlet) chunks(id string) []ops.Chunk {
	o.mu.Lock()
	defer o.mu.Unlock()
	if b := o.byReq[id]; b != nil {
		return b.Chunks()
	}
	return nil
}

type chunkStream struct {
	*opstest.ChunkBuffer
	onClose func()
}

func (s chunkStream) Emit(_ context.Context, c ops.Chunk) error {
	// The buffer refuses chunks on an ended context; the stream keeps
	// what a cancelled run emitted before it stopped.
	return s.ChunkBuffer.Emit(context.Background(), c)
}

func (s chunkStream) Close(context.Context) error { s.onClose(); return nil }

// stubCLI is a CLI provider emitting fixed chunks, for the cases the fake
// CLI's recording does not cover.
type stubCLI struct{ chunks []ops.Chunk }

func (s stubCLI) IsCLI(history.ModelRef) bool { return true }
func (s stubCLI) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	return s.Stream(ctx, call, func(ops.Chunk) error { return nil })
}
func (s stubCLI) Stream(_ context.Context, _ ops.Call, emit func(ops.Chunk) error) (*ops.Completion, error) {
	var text strings.Builder
	for _, c := range s.chunks {
		if c.Kind == ops.ChunkText {
			text.WriteString(c.Content)
		}
		if err := emit(c); err != nil {
			return nil, err
		}
	}
	return &ops.Completion{Text: text.String()}, nil
}

type runBundle struct {
	eng     *ops.Engine
	store   *opstest.MemoryStore
	signals *signalRecorder
	outlet  *chunkOutlet
	dir     string
}

func runSetup(t *testing.T, stubs map[string][]ops.Chunk) *runBundle {
	t.Helper()
	bin := clitest.Build(t)
	rb := &runBundle{store: opstest.NewMemoryStore(), signals: &signalRecorder{}, outlet: &chunkOutlet{}, dir: t.TempDir()}
	prov, err := cli.New(cli.Command{Name: "fake", Argv: []string{bin}, Env: []string{"FAKECLI_DIR=" + rb.dir}})
	if err != nil {
		t.Fatal(err)
	}
	prov.KillGrace = 300 * time.Millisecond
	provs := map[string]ops.Provider{"cli": prov, "scripted": scripted.New()}
	for name, cs := range stubs {
		provs[name] = stubCLI{cs}
	}
	rb.eng, err = ops.NewEngine(ops.Config{Store: rb.store, Providers: ops.NewProviders(provs), Signals: rb.signals, Chunks: rb.outlet})
	if err != nil {
		t.Fatal(err)
	}
	rb.create(t, "b1", "cli:fake")
	return rb
}

func (rb *runBundle) create(t *testing.T, id, model string) {
	t.Helper()
	if _, err := rb.eng.Do(context.Background(), ops.Request{ID: "create-" + id, Verb: "branch.create", BranchID: id,
		Data: json.RawMessage(fmt.Sprintf(`{"system":"be brief","chat_model":%q}`, model))}); err != nil {
		t.Fatal(err)
	}
}

func (rb *runBundle) run(t *testing.T, ctx context.Context, id, branch, data string) (*ops.Result, ops.RunValue, error) {
	t.Helper()
	if err := schemas.Validate("lionbus.run.request", []byte(data)); err != nil {
		t.Fatalf("request data does not match its schema: %v", err)
	}
	res, err := rb.eng.Do(ctx, ops.Request{ID: id, Verb: "run", BranchID: branch, Data: json.RawMessage(data), LastAttempt: true})
	var rv ops.RunValue
	if err == nil {
		out, _ := json.Marshal(res)
		if verr := schemas.Validate("lionbus.run.result", out); verr != nil {
			t.Fatalf("run result %s does not match its schema: %v", out, verr)
		}
		if err := json.Unmarshal(res.Value, &rv); err != nil {
			t.Fatal(err)
		}
	}
	return res, rv, err
}

func (rb *runBundle) messages(t *testing.T, branch string) []history.Message {
	t.Helper()
	b, err := rb.store.Load(context.Background(), branch)
	if err != nil {
		t.Fatal(err)
	}
	return b.Messages
}

func msgKinds(ms []history.Message) []history.Kind {
	var out []history.Kind
	for _, m := range ms {
		if m.Kind != history.KindSystem {
			out = append(out, m.Kind)
		}
	}
	return out
}

func responses(ms []history.Message) []string {
	var out []string
	for _, m := range ms {
		if m.Kind == history.KindAssistantResponse {
			out = append(out, m.Text())
		}
	}
	return out
}

// 0021-D3-13, 0021-D3-14, 0021-D3-15, 0021-D4-03, 0021-D4-05: the
// instruction first, two responses split by the tool call, the call and
// its result recorded, the orphan result ignored; one start, one end.
func TestRun_records_the_stream(t *testing.T) {
	t.Parallel()
	rb := runSetup(t, nil)
	_, rv, err := rb.run(t, context.Background(), "r1", "b1", `{"instruction":"list the files"}`)
	if err != nil {
		t.Fatal(err)
	}
	ms := rb.messages(t, "b1")
	wantKinds := []history.Kind{history.KindInstruction, history.KindAssistantResponse, history.KindActionRequest, history.KindActionResponse, history.KindAssistantResponse}
	if !slices.Equal(msgKinds(ms), wantKinds) {
		t.Fatalf("recorded %v, want %v", msgKinds(ms), wantKinds)
	}
	wantTexts := []string{"I'll list the files in the repository.", "There are two files: a.txt and b.txt."}
	if got := responses(ms); !slices.Equal(got, wantTexts) {
		t.Errorf("responses %q", got)
	}
	first, last := ms[2], ms[len(ms)-1]
	if first.Metadata[ops.MetaThinking] != "The user wants the files listed." {
		t.Errorf("thinking metadata %v", first.Metadata)
	}
	if mr, _ := last.Metadata[history.MetaModelResponse].(map[string]any); mr["total_cost_usd"] != 0.0123 || mr["usage"] == nil {
		t.Errorf("result metadata on the last response: %v", last.Metadata)
	}
	req, resp := ms[3], ms[4]
	if req.Content["function"] != "Bash" || resp.Content["output"] != "a.txt\nb.txt" || resp.Content["action_request_id"] != req.ID {
		t.Errorf("action messages %v / %v", req.Content, resp.Content)
	}
	// The instruction is its own event, stored before the stream; the
	// final event, under the request id, holds the rest (0021-D3-13).
	evs, err := rb.store.History(context.Background(), "b1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	evs = evs[1:]
	if len(evs) != 2 || evs[0].RequestID != "r1/instruction" || evs[1].RequestID != "r1" ||
		len(evs[0].Messages) != 1 || evs[0].Messages[0].ID != ms[1].ID || !slices.Equal(msgKinds(evs[1].Messages), wantKinds[1:]) {
		t.Errorf("history events %+v", evs)
	}
	if rv.Text == nil || *rv.Text != strings.Join(wantTexts, "\n\n") || !strings.HasPrefix(rv.SessionID, "sess-") {
		t.Errorf("value %+v", rv)
	}
	chunks := rb.outlet.chunks("r1")
	if len(chunks) == 0 || chunks[0].Kind != ops.ChunkSystem || chunks[0].Metadata["instruction"] == nil {
		t.Fatalf("first chunk %+v, want the instruction", chunks[0])
	}
	for i, c := range chunks {
		if c.Seq != uint64(i+1) {
			t.Fatalf("chunk %d has seq %d", i, c.Seq)
		}
	}
	if uint64(len(chunks)) != rv.Chunks || len(chunks) != 10 {
		t.Errorf("%d chunks, value says %d, want 10", len(chunks), rv.Chunks)
	}
	sig := rb.signals.types("r1")
	want := []string{"run.start", "message.added", "message.added", "message.added", "message.added", "message.added", "run.end"}
	if !slices.Equal(sig, want) {
		t.Errorf("signals %v, want %v", sig, want)
	}
	if rb.outlet.closed["r1"] != 1 {
		t.Errorf("chunk stream closed %d times", rb.outlet.closed["r1"])
	}
	// A redelivery answers from history without running the CLI again.
	_, rv2, err := rb.run(t, context.Background(), "r1", "b1", `{"instruction":"list the files"}`)
	if err != nil || len(clitest.Records(t, rb.dir)) != 1 || *rv2.Text != *rv.Text {
		t.Errorf("redelivery: %v, %d processes", err, len(clitest.Records(t, rb.dir)))
	}
}

// 0021-D3-13: the second run resumes the session the first received.
func TestRun_resumes_the_session(t *testing.T) {
	t.Parallel()
	rb := runSetup(t, nil)
	_, rv1, err := rb.run(t, context.Background(), "r1", "b1", `{"instruction":"first task"}`)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := rb.store.Load(context.Background(), "b1")
	if b.Settings.ProviderSession != rv1.SessionID {
		t.Fatalf("branch keeps session %q, run got %q", b.Settings.ProviderSession, rv1.SessionID)
	}
	if _, _, err := rb.run(t, context.Background(), "r2", "b1", `{"instruction":"second task"}`); err != nil {
		t.Fatal(err)
	}
	var resumed []string
	for _, r := range clitest.Records(t, rb.dir) {
		if v, ok := r.Arg("--resume"); ok {
			resumed = append(resumed, v)
			if p, _ := r.Arg("-p"); !strings.Contains(p, "second task") || strings.Contains(p, "first task") {
				t.Errorf("resumed prompt %q, want only the new instruction", p)
			}
		}
	}
	if !slices.Equal(resumed, []string{rv1.SessionID}) {
		t.Errorf("--resume values %v, want [%s]", resumed, rv1.SessionID)
	}
}

// 0021-D3-12: run refuses a model that is not a CLI, without calling it.
func TestRun_refuses_API_models(t *testing.T) {
	t.Parallel()
	rb := runSetup(t, nil)
	_, _, err := rb.run(t, context.Background(), "r1", "b1", `{"instruction":"x","chat_model":"scripted:echo"}`)
	var oe *ops.Error
	if !errors.As(err, &oe) || oe.Code != ops.CodeInvalidRequest || !strings.Contains(oe.Message, "cli:NAME") {
		t.Fatalf("error %v, want invalid_request naming cli:NAME", err)
	}
	if n := len(rb.messages(t, "b1")); n != 1 {
		t.Errorf("%d messages recorded", n)
	}
	if sig := rb.signals.types("r1"); len(sig) != 0 {
		t.Errorf("signals %v for a refused run", sig)
	}
}

// 0021-D3-15, 0021-D3-16, 0021-D3-17, 0021-D3-18, 0021-D4-03: how a run
// ends when the stream does not end well.
func TestRun_endings(t *testing.T) {
	t.Parallel()
	partial := []string{"I'll list the files in the repository."}
	tests := []struct {
		name      string
		data      string
		cancelAt  time.Duration
		wantCode  ops.Code
		wantMsg   string
		wantTexts []string
		wantCanc  bool
	}{
		{name: "error result (D3-16)", data: `{"instruction":"FAIL"}`, wantCode: ops.CodeProvider, wantMsg: "(capacity): API Error: 529", wantTexts: partial},
		{name: "empty error (D3-16)", data: `{"instruction":"ERREMPTY"}`, wantCode: ops.CodeProvider, wantMsg: "(empty error)", wantTexts: partial},
		{name: "benign end of stream (D3-16)", data: `{"instruction":"BENIGN"}`, wantTexts: partial},
		{name: "exit without an error chunk", data: `{"instruction":"CRASH"}`, wantCode: ops.CodeProvider, wantMsg: "crashed on purpose", wantTexts: partial},
		{name: "timeout option (D3-17)", data: `{"instruction":"HANG","chat_model":{"provider":"cli","model":"fake","timeout":2}}`, wantCode: ops.CodeTimeout, wantMsg: "timeout exceeded", wantTexts: partial},
		{name: "client cancel (D4-03)", data: `{"instruction":"HANG"}`, cancelAt: 50 * time.Millisecond, wantTexts: partial, wantCanc: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rb := runSetup(t, nil)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			id := fmt.Sprintf("r%d", i)
			if tt.cancelAt > 0 {
				// Cancel once the lines before the hang have arrived.
				go func() {
					for len(rb.outlet.chunks(id)) < 5 {
						time.Sleep(5 * time.Millisecond)
					}
					time.Sleep(tt.cancelAt)
					cancel(ops.ErrCanceledByClient)
				}()
			}
			_, rv, err := rb.run(t, ctx, id, "b1", tt.data)
			var oe *ops.Error
			switch {
			case tt.wantCode == "" && err != nil:
				t.Fatalf("error %v, want a clean end", err)
			case tt.wantCode != "" && (!errors.As(err, &oe) || oe.Code != tt.wantCode || !strings.Contains(oe.Message, tt.wantMsg)):
				t.Fatalf("error %v, want %s with %q", err, tt.wantCode, tt.wantMsg)
			case tt.wantCode != "" && oe.Temporary:
				t.Errorf("a recorded run failure is temporary: %v", oe)
			}
			if got := responses(rb.messages(t, "b1")); !slices.Equal(got, tt.wantTexts) {
				t.Errorf("recorded responses %q, want %q", got, tt.wantTexts)
			}
			if rv.Canceled != tt.wantCanc {
				t.Errorf("canceled %v", rv.Canceled)
			}
			sig := rb.signals.types(id)
			terminal := "run.end"
			if tt.wantCode != "" {
				terminal = "run.failed"
			}
			if sig[0] != "run.start" || sig[len(sig)-1] != terminal ||
				slices.Contains(sig[:len(sig)-1], "run.end") || slices.Contains(sig[:len(sig)-1], "run.failed") {
				t.Errorf("signals %v, want one start and one %s last", sig, terminal)
			}
			for _, r := range clitest.Records(t, rb.dir) {
				if !clitest.Reaped(r.PID) {
					t.Errorf("CLI process %d still exists", r.PID)
				}
			}
		})
	}
}

// 0021-D3-20: run_and_collect joins the non-empty responses with a blank
// line, answers null for none, and parses once with a response format.
func TestRunAndCollect_middle(t *testing.T) {
	t.Parallel()
	stubs := map[string][]ops.Chunk{
		"two":     {{Kind: ops.ChunkText, Content: "one"}, {Kind: ops.ChunkToolUse, ToolID: "t", ToolName: "Read"}, {Kind: ops.ChunkText, Content: " "}, {Kind: ops.ChunkToolUse, ToolID: "u", ToolName: "Read"}, {Kind: ops.ChunkText, Content: "two"}},
		"nothing": {{Kind: ops.ChunkResult, Metadata: map[string]any{"num_turns": 1.0}}},
		"json":    {{Kind: ops.ChunkText, Content: `{"answer": `}, {Kind: ops.ChunkText, Content: `"42"}`}},
	}
	tests := []struct {
		name   string
		model  string
		format string
		want   string
	}{
		{name: "joined", model: "two", want: `"one\n\ntwo"`},
		{name: "nothing is null", model: "nothing", want: `null`},
		{name: "parsed once", model: "json", format: `{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`, want: `{"answer":"42"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rb := runSetup(t, stubs)
			rb.create(t, "b2", tt.model+":x")
			mid, err := rb.eng.Middle(ops.MiddleRunAndCollect)
			if err != nil {
				t.Fatal(err)
			}
			res, err := mid.Exchange(context.Background(), middleIn(ops.MiddleInput{RequestID: "m1", BranchID: "b2"}, func(c *wire.CommunicateRequest) { c.Instruction, c.ResponseFormat = "go", json.RawMessage(tt.format) }))
			if err != nil {
				t.Fatal(err)
			}
			if valueJSON(res) != tt.want {
				t.Errorf("value %s, want %s", valueJSON(res), tt.want)
			}
			if sig := rb.signals.types("m1"); slices.Contains(sig, "run.start") {
				t.Errorf("the middle emitted a lifecycle: %v (0021-D4-01)", sig)
			}
		})
	}
}

// ADR-0022 D1/D3: operate with a CLI chat model runs run_and_collect.
// 0022-D3-02: a CLI chat model selects run_and_collect for operate.
func TestOperate_selects_run_and_collect_for_CLI_models(t *testing.T) {
	t.Parallel()
	rb := runSetup(t, nil)
	res, err := rb.eng.Do(context.Background(), ops.Request{ID: "o1", Verb: "operate", BranchID: "b1",
		Data: json.RawMessage(`{"instruction":"list the files","skip_validation":true}`), LastAttempt: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Value), "a.txt and b.txt") {
		t.Errorf("value %s", res.Value)
	}
	if len(clitest.Records(t, rb.dir)) != 1 {
		t.Error("the CLI did not run")
	}
	if got := rb.signals.types("o1"); got[0] != "run.start" || got[len(got)-1] != "run.end" || slices.Index(got[1:], "run.start") >= 0 {
		t.Errorf("signals %v", got)
	}
}

// recordingRunLog is a RunLog counting what runs ask of it, and in which
// directories.
type recordingRunLog struct {
	mu                         sync.Mutex
	snapshots, opened, removed map[string]int
	dirs                       map[string][]string // request id → the dir of every call, in order
}

func newRecordingRunLog() *recordingRunLog {
	return &recordingRunLog{snapshots: map[string]int{}, opened: map[string]int{}, removed: map[string]int{}, dirs: map[string][]string{}}
}

func (l *recordingRunLog) Snapshot(_ context.Context, dir string, req ops.Request, _ *history.Branch, _ bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.snapshots[req.ID]++
	l.dirs[req.ID] = append(l.dirs[req.ID], dir)
	return nil
}

func (l *recordingRunLog) Open(_ context.Context, dir string, req ops.Request) (ops.ChunkStream, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opened[req.ID]++
	l.dirs[req.ID] = append(l.dirs[req.ID], dir)
	return chunkStream{&opstest.ChunkBuffer{}, func() {}}, nil
}

func (l *recordingRunLog) Remove(_ context.Context, dir string, req ops.Request) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.removed[req.ID]++
	l.dirs[req.ID] = append(l.dirs[req.ID], dir)
	return nil
}

func (l *recordingRunLog) Location(dir string, req ops.Request) ops.RunLogLocation {
	return ops.RunLogLocation{Dir: dir, Chunks: "log/" + dir + "/" + req.ID, Snapshot: "snap/" + dir + "/" + req.ID}
}

// dirsOf returns the directories of every call about request id.
func (l *recordingRunLog) dirsOf(id string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.dirs[id])
}

func (l *recordingRunLog) counts(id string) [3]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return [3]int{l.snapshots[id], l.opened[id], l.removed[id]}
}

// 0022-D1-04, 0022-D1-05: stream_persist in an operate request asks for
// run parameters, so the exchange is run_and_collect (which needs a CLI
// model, and refuses an API one with guidance rather than falling back),
// and its value is handed to the run as given: true keeps the run log and
// snapshots, false (given) keeps none.
func TestOperate_stream_persist_selects_run_parameters(t *testing.T) {
	t.Parallel()
	bin := clitest.Build(t)
	dir := t.TempDir()
	prov, err := cli.New(cli.Command{Name: "fake", Argv: []string{bin}, Env: []string{"FAKECLI_DIR=" + dir}})
	if err != nil {
		t.Fatal(err)
	}
	runLog := newRecordingRunLog()
	eng, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore(), RunLog: runLog, Chunks: &chunkOutlet{},
		Providers: ops.NewProviders(map[string]ops.Provider{"cli": prov, "scripted": scripted.New()})})
	if err != nil {
		t.Fatal(err)
	}
	for id, model := range map[string]string{"cli-b": "cli:fake", "api-b": "scripted:echo"} {
		if _, err := eng.Do(context.Background(), ops.Request{ID: "create-" + id, Verb: "branch.create", BranchID: id,
			Data: json.RawMessage(fmt.Sprintf(`{"chat_model":%q}`, model))}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, id, branch, extra string
		wantCode                ops.Code
		wantCLIRuns             int
		wantLog                 [3]int // snapshots, logs opened, logs removed
	}{
		{"persist true on a CLI model", "p1", "cli-b", `,"stream_persist":true`, "", 1, [3]int{2, 1, 1}},
		{"persist false given, CLI model", "p2", "cli-b", `,"stream_persist":false`, "", 1, [3]int{}},
		{"persist on an API model: run parameters, refused", "p3", "api-b", `,"stream_persist":false`, ops.CodeInvalidRequest, 0, [3]int{}},
		{"no persist, API model: communicate", "p4", "api-b", ``, "", 0, [3]int{}},
	}
	for _, tt := range tests {
		before := len(clitest.Records(t, dir))
		data := `{"instruction":"list the files","skip_validation":true` + tt.extra + `}`
		if err := schemas.Validate("lionbus.operate.request", []byte(data)); err != nil {
			t.Fatalf("%s: request data does not match its schema: %v", tt.name, err)
		}
		_, err := eng.Do(context.Background(), ops.Request{ID: tt.id, Verb: "operate", BranchID: tt.branch,
			Data: json.RawMessage(data), LastAttempt: true})
		var oe *ops.Error
		switch {
		case tt.wantCode == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.wantCode != "" && (!errors.As(err, &oe) || oe.Code != tt.wantCode || !strings.Contains(oe.Message, "cli:")):
			t.Errorf("%s: err %v, want %s with guidance naming cli:NAME", tt.name, err, tt.wantCode)
		}
		if n := len(clitest.Records(t, dir)) - before; n != tt.wantCLIRuns {
			t.Errorf("%s: the CLI ran %d times, want %d", tt.name, n, tt.wantCLIRuns)
		}
		if got := runLog.counts(tt.id); got != tt.wantLog {
			t.Errorf("%s: run log (snapshots, opened, removed) %v, want %v", tt.name, got, tt.wantLog)
		}
	}
}

// 0021-D4-06: the run under operate (run_and_collect, its middle) emits no
// lifecycle of its own, yet cleans up as a run does on every way out: its
// chunk streams are closed, the CLI process is reaped, the final snapshot
// is written and the live log removed; operate alone starts and ends.
func TestOperate_0021_D4_06_nested_run_cleans_up(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		instruction  string
		wantCode     ops.Code
		wantTerminal string
	}{
		{name: "a clean end", instruction: "list the files", wantTerminal: "run.end"},
		{name: "an error chunk", instruction: "FAIL", wantCode: ops.CodeProvider, wantTerminal: "run.failed"},
		{name: "the CLI exits without an error chunk", instruction: "CRASH", wantCode: ops.CodeProvider, wantTerminal: "run.failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bin := clitest.Build(t)
			dir := t.TempDir()
			prov, err := cli.New(cli.Command{Name: "fake", Argv: []string{bin}, Env: []string{"FAKECLI_DIR=" + dir}})
			if err != nil {
				t.Fatal(err)
			}
			prov.KillGrace = 300 * time.Millisecond
			runLog := newRecordingRunLog()
			outlet := &chunkOutlet{}
			signals := &signalRecorder{}
			eng, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore(), RunLog: runLog, Chunks: outlet, Signals: signals,
				Providers: ops.NewProviders(map[string]ops.Provider{"cli": prov})})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := eng.Do(ctx, ops.Request{ID: "create", Verb: "branch.create", BranchID: "b", Data: json.RawMessage(`{"chat_model":"cli:fake"}`)}); err != nil {
				t.Fatal(err)
			}
			data := fmt.Sprintf(`{"instruction":%q,"skip_validation":true,"stream_persist":true}`, tt.instruction)
			if err := schemas.Validate("lionbus.operate.request", []byte(data)); err != nil {
				t.Fatal(err)
			}
			_, err = eng.Do(ctx, ops.Request{ID: "op", Verb: "operate", BranchID: "b", Data: json.RawMessage(data), LastAttempt: true})
			if code(err) != tt.wantCode {
				t.Fatalf("operate: %v, want code %q", err, tt.wantCode)
			}
			// The lifecycle is operate's alone.
			if got := signals.types("op"); len(got) < 2 || got[0] != "run.start" || got[len(got)-1] != tt.wantTerminal ||
				slices.Contains(got[1:], "run.start") || slices.Contains(got[:len(got)-1], "run.end") || slices.Contains(got[:len(got)-1], "run.failed") {
				t.Errorf("operate's signals %v, want one start and one %s", got, tt.wantTerminal)
			}
			signals.mu.Lock()
			for _, s := range signals.signals {
				if s.RequestID != "op" && strings.HasPrefix(string(s.Type), "run.") {
					t.Errorf("the nested run emitted %s as %q", s.Type, s.RequestID)
				}
			}
			signals.mu.Unlock()
			// The cleanup is the run's all the same.
			if got := runLog.counts("op"); got != [3]int{2, 1, 1} {
				t.Errorf("run log (snapshots, opened, removed) %v, want [2 1 1]", got)
			}
			outlet.mu.Lock()
			if len(outlet.byReq) == 0 {
				t.Error("the run opened no chunk stream")
			}
			for id := range outlet.byReq {
				if outlet.closed[id] != 1 {
					t.Errorf("the chunk stream of %q was closed %d times, want once", id, outlet.closed[id])
				}
			}
			outlet.mu.Unlock()
			recs := clitest.Records(t, dir)
			if len(recs) != 1 {
				t.Fatalf("the CLI ran %d times, want once", len(recs))
			}
			if !clitest.Reaped(recs[0].PID) {
				t.Errorf("CLI process %d still exists", recs[0].PID)
			}
		})
	}
}

// A run whose prompt is over the engine's bound is refused before anything
// is recorded: no instruction stored, no CLI started.
func TestRun_prompt_over_the_bound_records_nothing(t *testing.T) {
	t.Parallel()
	bin := clitest.Build(t)
	dir := t.TempDir()
	prov, err := cli.New(cli.Command{Name: "fake", Argv: []string{bin}, Env: []string{"FAKECLI_DIR=" + dir}})
	if err != nil {
		t.Fatal(err)
	}
	store := opstest.NewMemoryStore()
	eng, err := ops.NewEngine(ops.Config{Store: store, MaxPromptBytes: 300, Chunks: &chunkOutlet{},
		Providers: ops.NewProviders(map[string]ops.Provider{"cli": prov})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Do(context.Background(), ops.Request{ID: "c", Verb: "branch.create", BranchID: "b",
		Data: json.RawMessage(`{"chat_model":"cli:fake"}`)}); err != nil {
		t.Fatal(err)
	}
	data := fmt.Sprintf(`{"instruction":%q}`, strings.Repeat("x", 400))
	_, err = eng.Do(context.Background(), ops.Request{ID: "r", Verb: "run", BranchID: "b", Data: json.RawMessage(data), LastAttempt: true})
	var oe *ops.Error
	if !errors.As(err, &oe) || oe.Code != ops.CodeInvalidRequest || !strings.Contains(oe.Message, "too long for one model call") {
		t.Fatalf("err = %v, want the prompt bound", err)
	}
	b, err := store.Load(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	if kinds := msgKinds(b.Messages); len(kinds) != 0 {
		t.Fatalf("the refused run recorded %v", kinds)
	}
	if n := len(clitest.Records(t, dir)); n != 0 {
		t.Fatalf("the CLI ran %d times", n)
	}
}
