package bus_test

// run end to end (issue 11): a worker started through bus.Start runs the
// fake Claude Code CLI as a real subprocess through the cli provider; the
// client follows the chunks on <prefix>.chunk.<id> through the chunk
// stream and reads the answer on the reply subject.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli/clitest"
	"github.com/lionbus/lionbus/schemas"
)

// runBus is a bus with a worker serving cli:fake, and branch b1 on it.
type runBus struct {
	*bustest.Bus
	dir string // where the fake CLI writes its records (and finds the gate)
}

func newRunBus(t *testing.T, wctx context.Context) *runBus {
	t.Helper()
	return newRunBusWith(t, wctx, nil)
}

// newRunBusWith is newRunBus with configure applied to the service's
// configuration (see bustest.StartServiceWith).
func newRunBusWith(t *testing.T, wctx context.Context, configure func(*bus.Config)) *runBus {
	t.Helper()
	rb := &runBus{Bus: bustest.New(t, provision.Config{}), dir: t.TempDir()}
	prov, err := cli.New(cli.Command{Name: "fake", Argv: []string{clitest.Build(t)}, Env: []string{"FAKECLI_DIR=" + rb.dir}})
	if err != nil {
		t.Fatal(err)
	}
	prov.KillGrace = 300 * time.Millisecond
	rb.StartServiceWith(t, wctx, nil, map[string]ops.Provider{cli.Name: prov}, worker.Config{}, configure)
	bustest.MustResult(t, rb.Do(t, "branch.create", "", map[string]any{"branch_id": "b1", "system": "be brief", "chat_model": "cli:fake"}), nil)
	return rb
}

// branchMessages returns b1's messages (system message left out).
func (rb *runBus) branchMessages(t *testing.T) []history.Message {
	t.Helper()
	var b history.Branch
	bustest.MustResult(t, rb.Do(t, "branch.get", "b1", nil), &b)
	var out []history.Message
	for _, m := range b.Messages {
		if m.Kind != history.KindSystem {
			out = append(out, m)
		}
	}
	return out
}

// signalStored reports whether the signal typ of request id is in the
// events stream.
func (rb *runBus) signalStored(t *testing.T, id string, typ ops.SignalType) bool {
	t.Helper()
	cons, err := rb.JS.OrderedConsumer(bustest.Ctx(t), rb.Res.Subjects.EventsStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{rb.Res.Subjects.Events("b1", protocol.EventToken(typ))},
	})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.FetchNoWait(1000)
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if strings.Contains(string(m.Data()), id) {
			return true
		}
	}
	return false
}

func kindsOf(cs []ops.Chunk) []ops.ChunkKind {
	out := make([]ops.ChunkKind, len(cs))
	for i, c := range cs {
		out[i] = c.Kind
	}
	return out
}

// recordedRun is the chunks of the recorded session, after the instruction.
var recordedRun = []ops.ChunkKind{ops.ChunkSystem, ops.ChunkSystem, ops.ChunkThinking, ops.ChunkText, ops.ChunkText,
	ops.ChunkToolUse, ops.ChunkToolResult, ops.ChunkToolResult, ops.ChunkText, ops.ChunkResult}

// 0021-D3-13, 0021-D3-14, 0021-D3-15: every chunk in order, then the
// answer; the branch records the instruction, two responses split by the
// tool call, the call and its result. A plain core subscription (what
// `nats sub 'lion.chunk.>'` does) sees the same CloudEvents.
func TestRun_bus_chunks_then_answer(t *testing.T) {
	t.Parallel()
	rb := newRunBus(t, nil)
	raw := make(chan *nats.Msg, 64)
	sub, err := rb.NC.ChanSubscribe(rb.Res.Subjects.ChunksWildcard(), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := rb.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	var got []ops.Chunk
	id, reply, err := rb.Client.Stream(bustest.Ctx(t), "run", "b1", map[string]any{"instruction": "list the files"}, func(c ops.Chunk) error {
		got = append(got, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	bustest.CheckSchema(t, reply)
	var rv ops.RunValue
	bustest.MustResult(t, reply, &rv)
	if !slices.Equal(kindsOf(got), recordedRun) {
		t.Fatalf("chunks %v, want %v", kindsOf(got), recordedRun)
	}
	for i, c := range got {
		if c.Seq != uint64(i+1) {
			t.Fatalf("chunk %d has seq %d", i, c.Seq)
		}
	}
	if got[0].Metadata["instruction"] == nil || rv.Chunks != uint64(len(got)) {
		t.Errorf("first chunk %v; value %+v", got[0], rv)
	}
	ms := rb.branchMessages(t)
	wantKinds := []history.Kind{history.KindInstruction, history.KindAssistantResponse, history.KindActionRequest, history.KindActionResponse, history.KindAssistantResponse}
	var kinds []history.Kind
	var texts []string
	for _, m := range ms {
		kinds = append(kinds, m.Kind)
		if m.Kind == history.KindAssistantResponse {
			texts = append(texts, m.Text())
		}
	}
	if !slices.Equal(kinds, wantKinds) || !slices.Equal(texts, []string{"I'll list the files in the repository.", "There are two files: a.txt and b.txt."}) {
		t.Errorf("recorded %v %q", kinds, texts)
	}
	if ms[2].Content["function"] != "Bash" || ms[3].Content["output"] != "a.txt\nb.txt" {
		t.Errorf("action messages %v / %v", ms[2].Content, ms[3].Content)
	}
	// The instruction is its own event, stored before the stream; the
	// final event, under the request id, holds the rest (0021-D3-13).
	hist := rb.History(t, "b1")[1:]
	if len(hist) != 2 || hist[0].RequestID != id+"/instruction" || hist[1].RequestID != id ||
		len(hist[0].Messages) != 1 || hist[0].Messages[0].ID != ms[0].ID || len(hist[1].Messages) != len(ms)-1 {
		t.Errorf("history events %+v", hist)
	}
	// The raw messages: CloudEvents of type lionbus.run.chunk, valid
	// against their schema, on lion.chunk.<id>, in seq order.
	for i := range got {
		select {
		case m := <-raw:
			if m.Subject != rb.Res.Subjects.Chunk(id) {
				t.Fatalf("chunk on %s", m.Subject)
			}
			ev, err := rb.Codec.DecodeEvent(m.Header, m.Data)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type() != "lionbus.run.chunk" {
				t.Fatalf("event type %s", ev.Type())
			}
			if err := schemas.Validate("lionbus.run.chunk", ev.Data()); err != nil {
				t.Fatalf("chunk %s: %v", ev.Data(), err)
			}
			var c ops.Chunk
			if err := json.Unmarshal(ev.Data(), &c); err != nil || c.Seq != uint64(i+1) {
				t.Fatalf("raw chunk %d: seq %d, %v", i, c.Seq, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("the core subscription got %d chunks, want %d", i, len(got))
		}
	}
	if !rb.signalStored(t, id, ops.SignalRunEnd) || rb.signalStored(t, id, ops.SignalRunFailed) {
		t.Error("want run.end and no run.failed")
	}
}

// 0021-D3-13: the second run passes the session id the first received.
func TestRun_bus_resume(t *testing.T) {
	t.Parallel()
	rb := newRunBus(t, nil)
	none := func(ops.Chunk) error { return nil }
	_, r1, err := rb.Client.Stream(bustest.Ctx(t), "run", "b1", map[string]any{"instruction": "first"}, none)
	if err != nil {
		t.Fatal(err)
	}
	var rv ops.RunValue
	bustest.MustResult(t, r1, &rv)
	if _, r2, err := rb.Client.Stream(bustest.Ctx(t), "run", "b1", map[string]any{"instruction": "second"}, none); err != nil {
		t.Fatal(err)
	} else {
		bustest.MustResult(t, r2, nil)
	}
	var resumed []string
	for _, r := range clitest.Records(t, rb.dir) {
		if v, ok := r.Arg("--resume"); ok {
			resumed = append(resumed, v)
		}
	}
	if rv.SessionID == "" || !slices.Equal(resumed, []string{rv.SessionID}) {
		t.Errorf("--resume %v, first session %q", resumed, rv.SessionID)
	}
}

// 0021-D4-03, 0021-D3-18: a message on lion.cancel.<id> mid-stream ends
// the run cleanly: the subprocess is gone, the partial text recorded, one
// run.end and no run.failed.
func TestRun_bus_cancel_mid_stream(t *testing.T) {
	t.Parallel()
	rb := newRunBus(t, nil)
	ctx := bustest.Ctx(t)
	id, err := rb.Client.Submit(ctx, "run", "b1", map[string]any{"instruction": "HANG"})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	reply, err := rb.Client.Follow(ctx, id, 0, func(c ops.Chunk) error {
		n++
		if n == 5 { // the instruction and the four lines before the hang
			// Any message will do; `nats pub lion.cancel.<id> ""` sends one.
			if err := rb.NC.Publish(rb.Res.Subjects.Cancel(id), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var rv ops.RunValue
	bustest.MustResult(t, reply, &rv)
	if !rv.Canceled || n != 5 {
		t.Errorf("value %+v after %d chunks", rv, n)
	}
	recs := clitest.Records(t, rb.dir)
	if len(recs) != 1 || !clitest.Reaped(recs[0].PID) {
		t.Errorf("CLI processes %+v not all gone", recs)
	}
	var texts []string
	for _, m := range rb.branchMessages(t) {
		if m.Kind == history.KindAssistantResponse {
			texts = append(texts, m.Text())
		}
	}
	if !slices.Equal(texts, []string{"I'll list the files in the repository."}) {
		t.Errorf("recorded responses %q", texts)
	}
	if !rb.signalStored(t, id, ops.SignalRunEnd) || rb.signalStored(t, id, ops.SignalRunFailed) {
		t.Error("want run.end and no run.failed")
	}
}

// 0021-D3-15, 0021-D3-16, 0021-D3-17: a provider error mid-stream records
// the text so far and answers a classified error; benign_eos ends
// normally; a deadline stops a CLI that hangs.
func TestRun_bus_errors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		data     map[string]any
		wantCode ops.Code
		wantMsg  string
	}{
		{name: "provider error", data: map[string]any{"instruction": "FAIL"}, wantCode: ops.CodeProvider, wantMsg: "(capacity)"},
		{name: "benign end of stream", data: map[string]any{"instruction": "BENIGN"}},
		{name: "deadline", data: map[string]any{"instruction": "HANG", "chat_model": map[string]any{"provider": "cli", "model": "fake", "timeout": 2}},
			wantCode: ops.CodeTimeout, wantMsg: "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rb := newRunBus(t, nil)
			var got []ops.Chunk
			id, reply, err := rb.Client.Stream(bustest.Ctx(t), "run", "b1", tt.data, func(c ops.Chunk) error {
				got = append(got, c)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			bustest.CheckSchema(t, reply)
			if tt.wantCode == "" {
				bustest.MustResult(t, reply, nil)
			} else {
				var re *client.RemoteError
				if err := reply.Err(); !errors.As(err, &re) || re.Code != tt.wantCode || !strings.Contains(re.Message, tt.wantMsg) {
					t.Fatalf("answer %s, want %s with %q", reply.Data, tt.wantCode, tt.wantMsg)
				}
			}
			var texts []string
			for _, m := range rb.branchMessages(t) {
				if m.Kind == history.KindAssistantResponse {
					texts = append(texts, m.Text())
				}
			}
			if !slices.Equal(texts, []string{"I'll list the files in the repository."}) {
				t.Errorf("recorded responses %q", texts)
			}
			for _, r := range clitest.Records(t, rb.dir) {
				if !clitest.Reaped(r.PID) {
					t.Errorf("CLI process %d still exists", r.PID)
				}
			}
			failed := rb.signalStored(t, id, ops.SignalRunFailed)
			if failed != (tt.wantCode != "") || rb.signalStored(t, id, ops.SignalRunEnd) == failed {
				t.Errorf("run.failed stored %v, run.end %v", failed, !failed)
			}
		})
	}
}

// A client that subscribes after the run produced half its chunks gets
// every chunk, in order, once, then the rest live; one that starts at a
// seq gets the chunks from there.
func TestRun_bus_late_subscriber(t *testing.T) {
	t.Parallel()
	rb := newRunBus(t, nil)
	ctx := bustest.Ctx(t)
	id, err := rb.Client.Submit(ctx, "run", "b1", map[string]any{"instruction": "GATE"})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := rb.JS.Stream(ctx, rb.Res.Subjects.ChunksStream())
	if err != nil {
		t.Fatal(err)
	}
	const half = 6 // the instruction and the first five lines
	bustest.WaitFor(t, 10*time.Second, "half the chunks", func() bool {
		info, err := chunks.Info(ctx, jetstream.WithSubjectFilter(rb.Res.Subjects.Chunk(id)))
		return err == nil && info.State.Subjects[rb.Res.Subjects.Chunk(id)] == half
	})
	type follower struct {
		from uint64
		got  []uint64
	}
	followers := []*follower{{from: 0}, {from: 4}}
	var wg sync.WaitGroup
	errs := make(chan error, len(followers))
	started := make(chan struct{}, len(followers))
	for _, f := range followers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := rb.Client.Follow(ctx, id, f.from, func(c ops.Chunk) error {
				f.got = append(f.got, c.Seq)
				if len(f.got) == 1 {
					started <- struct{}{}
				}
				return nil
			})
			errs <- err
		}()
	}
	for range followers {
		<-started
	}
	if err := os.WriteFile(filepath.Join(rb.dir, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range followers {
		var want []uint64
		for s := max(f.from, 1); s <= uint64(len(recordedRun)); s++ {
			want = append(want, s)
		}
		if !slices.Equal(f.got, want) {
			t.Errorf("from %d: got seqs %v, want %v", f.from, f.got, want)
		}
	}
}

// 0021-D3-19: stream_persist keeps the chunk log while the run goes and
// removes it after the final snapshot; a worker that dies mid-run leaves
// it to inspect.
func TestRun_bus_stream_persist(t *testing.T) {
	t.Parallel()
	count := func(t *testing.T, rb *runBus, subject string) uint64 {
		st, err := rb.JS.Stream(bustest.Ctx(t), rb.Res.Subjects.RunLogStream())
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(bustest.Ctx(t), jetstream.WithSubjectFilter(subject))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Subjects[subject]
	}
	t.Run("clean run", func(t *testing.T) {
		t.Parallel()
		rb := newRunBus(t, nil)
		id, reply, err := rb.Client.Stream(bustest.Ctx(t), "run", "b1", map[string]any{"instruction": "go", "stream_persist": true}, func(ops.Chunk) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		bustest.MustResult(t, reply, nil)
		if n := count(t, rb, rb.Res.Subjects.RunLog(ops.DefaultRunLogDir, id)); n != 0 {
			t.Errorf("%d chunks left in the run log after a clean run", n)
		}
		if n := count(t, rb, rb.Res.Subjects.RunSnapshot(ops.DefaultRunLogDir, id)); n != 2 {
			t.Errorf("%d snapshots, want the start and the end", n)
		}
	})
	t.Run("crash", func(t *testing.T) {
		t.Parallel()
		wctx, crash := context.WithCancel(context.Background())
		defer crash()
		rb := newRunBus(t, wctx)
		id, err := rb.Client.Submit(bustest.Ctx(t), "run", "b1", map[string]any{"instruction": "HANG", "stream_persist": true})
		if err != nil {
			t.Fatal(err)
		}
		bustest.WaitFor(t, 10*time.Second, "the run log", func() bool { return count(t, rb, rb.Res.Subjects.RunLog(ops.DefaultRunLogDir, id)) == 5 })
		crash() // the worker stops hard, as if it died
		bustest.WaitFor(t, 10*time.Second, "the CLI to be stopped", func() bool {
			recs := clitest.Records(t, rb.dir)
			return len(recs) == 1 && clitest.Reaped(recs[0].PID)
		})
		if n := count(t, rb, rb.Res.Subjects.RunLog(ops.DefaultRunLogDir, id)); n != 5 {
			t.Errorf("%d chunks in the log of the unfinished run, want 5", n)
		}
		if n := count(t, rb, rb.Res.Subjects.RunSnapshot(ops.DefaultRunLogDir, id)); n != 1 {
			t.Errorf("%d snapshots, want the one at the start", n)
		}
	})
}
