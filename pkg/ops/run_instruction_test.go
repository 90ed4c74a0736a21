package ops_test

// 0021-D3-13 at the engine: run stores its instruction, in its own stage
// event, before the CLI's stream starts; the rest of the run is the final
// event under the request id.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
	"github.com/lionbus/lionbus/pkg/wire"
)

// probeCLI is a CLI provider whose Stream is a test's function, told which
// call (from 1) it serves; it keeps the calls it received.
type probeCLI struct {
	mu     sync.Mutex
	calls  []ops.Call
	stream func(ctx context.Context, n int, call ops.Call, emit func(ops.Chunk) error) (*ops.Completion, error)
}

func (p *probeCLI) IsCLI(history.ModelRef) bool { return true }

func (p *probeCLI) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	return p.Stream(ctx, call, func(ops.Chunk) error { return nil })
}

func (p *probeCLI) Stream(ctx context.Context, call ops.Call, emit func(ops.Chunk) error) (*ops.Completion, error) {
	p.mu.Lock()
	p.calls = append(p.calls, call)
	n := len(p.calls)
	p.mu.Unlock()
	return p.stream(ctx, n, call, emit)
}

func (p *probeCLI) call(n int) ops.Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[n-1]
}

// answer streams text as one text chunk and ends.
func answer(text string, emit func(ops.Chunk) error) (*ops.Completion, error) {
	if err := emit(ops.Chunk{Kind: ops.ChunkText, Content: text}); err != nil {
		return nil, err
	}
	return &ops.Completion{Text: text}, nil
}

// refusingOutlet is a chunkOutlet whose streams refuse every chunk after
// the first (the instruction) while refuse is set: a bus that cannot
// deliver them.
type refusingOutlet struct {
	chunkOutlet
	refuse atomic.Bool
}

func (o *refusingOutlet) OpenChunks(ctx context.Context, req ops.Request) (ops.ChunkStream, error) {
	cs, err := o.chunkOutlet.OpenChunks(ctx, req)
	if err != nil {
		return nil, err
	}
	return refusingStream{cs, o}, nil
}

type refusingStream struct {
	ops.ChunkStream
	o *refusingOutlet
}

func (s refusingStream) Emit(ctx context.Context, c ops.Chunk) error {
	if c.Seq > 1 && s.o.refuse.Load() {
		return errors.New("chunk stream unavailable")
	}
	return s.ChunkStream.Emit(ctx, c)
}

type probeBundle struct {
	eng     *ops.Engine
	store   *opstest.MemoryStore
	signals *signalRecorder
	outlet  *refusingOutlet
	prov    *probeCLI
}

// probeSetup makes an engine whose "probe" provider is prov, with branch
// b1 using it.
func probeSetup(t *testing.T, prov *probeCLI) *probeBundle {
	t.Helper()
	pb := &probeBundle{store: opstest.NewMemoryStore(), signals: &signalRecorder{}, outlet: &refusingOutlet{}, prov: prov}
	var err error
	pb.eng, err = ops.NewEngine(ops.Config{Store: pb.store, Signals: pb.signals, Chunks: pb.outlet,
		Providers: ops.NewProviders(map[string]ops.Provider{"probe": prov, "scripted": scripted.New()})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pb.eng.Do(context.Background(), ops.Request{ID: "create-b1", Verb: "branch.create", BranchID: "b1",
		Data: json.RawMessage(`{"system":"be brief","chat_model":"probe:x"}`)}); err != nil {
		t.Fatal(err)
	}
	return pb
}

func (pb *probeBundle) run(ctx context.Context, id, data string, last bool) (*ops.Result, error) {
	return pb.eng.Do(ctx, ops.Request{ID: id, Verb: "run", BranchID: "b1", Data: json.RawMessage(data), LastAttempt: last})
}

// events returns the history of b1 after its creation, as
// "request id: kinds" lines, with the events themselves.
func (pb *probeBundle) events(t *testing.T) ([]string, []history.Event) {
	t.Helper()
	evs, err := pb.store.History(context.Background(), "b1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, ev := range evs[1:] {
		var k []string
		for _, m := range ev.Messages {
			k = append(k, string(m.Kind))
		}
		lines = append(lines, fmt.Sprintf("%s: %s", ev.RequestID, strings.Join(k, " ")))
	}
	return lines, evs[1:]
}

// added returns the ids of the messages of requestID's message.added
// signals, in order.
func (r *signalRecorder) added(requestID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.signals {
		if s.RequestID == requestID && s.Type == ops.SignalMessageAdded {
			out = append(out, s.Message.ID)
		}
	}
	return out
}

// 0021-D3-13: when the CLI's stream starts, the instruction is in the
// branch already, as its own event under the run's stage id, and its
// message.added is out; the final event holds the response only.
func TestRun_0021_D3_13_instruction_stored_before_the_first_chunk(t *testing.T) {
	t.Parallel()
	var pb *probeBundle
	var seen []string
	pb = probeSetup(t, &probeCLI{stream: func(ctx context.Context, _ int, call ops.Call, emit func(ops.Chunk) error) (*ops.Completion, error) {
		b, err := pb.store.Load(ctx, "b1")
		if err != nil {
			return nil, err
		}
		last := b.Messages[len(b.Messages)-1]
		if last.Kind != history.KindInstruction || last.Content[history.KeyInstruction] != "list the files" {
			seen = append(seen, fmt.Sprintf("the branch's last message is %s %v, want the instruction", last.Kind, last.Content))
		}
		if _, ok := b.Commits.Seq("r1/instruction"); !ok {
			seen = append(seen, fmt.Sprintf("commits %v lack r1/instruction", b.Commits))
		}
		if got := pb.signals.added("r1"); !slices.Equal(got, []string{last.ID}) {
			seen = append(seen, fmt.Sprintf("message.added before the stream %v, want the instruction %s", got, last.ID))
		}
		if got := pb.outlet.chunks("r1"); len(got) != 1 || got[0].Kind != ops.ChunkSystem {
			seen = append(seen, fmt.Sprintf("chunks before the stream %+v, want the instruction's", got))
		} else if ins, _ := got[0].Metadata["instruction"].(history.Message); ins.ID != last.ID {
			seen = append(seen, fmt.Sprintf("chunk 1 carries %+v, want the stored instruction %s", got[0].Metadata["instruction"], last.ID))
		}
		return answer("two files", emit)
	}})
	res, err := pb.run(context.Background(), "r1", `{"instruction":"list the files"}`, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range seen {
		t.Error(s)
	}
	lines, evs := pb.events(t)
	want := []string{"r1/instruction: instruction", "r1: assistant_response"}
	if !slices.Equal(lines, want) {
		t.Fatalf("history %q, want %q", lines, want)
	}
	if evs[0].Clear || evs[1].Clear || evs[1].Settings != nil {
		t.Errorf("events clear %v, %v; settings %+v", evs[0].Clear, evs[1].Clear, evs[1].Settings)
	}
	if string(res.Value) == "" || !strings.Contains(string(res.Value), `"two files"`) {
		t.Errorf("value %s", res.Value)
	}
	// The call sent the instruction once, last.
	if call := pb.prov.call(1); !instructionOnceLast(call, "list the files") {
		t.Errorf("call messages %+v", call.Messages)
	}
	sig := pb.signals.types("r1")
	if wantSig := []string{"run.start", "message.added", "message.added", "run.end"}; !slices.Equal(sig, wantSig) {
		t.Errorf("signals %v, want %v", sig, wantSig)
	}
	wantAdded := []string{evs[0].Messages[0].ID, evs[1].Messages[0].ID}
	if got := pb.signals.added("r1"); !slices.Equal(got, wantAdded) {
		t.Errorf("message.added %v, want %v", got, wantAdded)
	}

	// A redelivery is answered from history: the same value, the same
	// messages announced, instruction first; nothing recorded, no stream.
	res2, err := pb.run(context.Background(), "r1", `{"instruction":"list the files"}`, true)
	if err != nil || !res2.Replayed || string(res2.Value) != string(res.Value) {
		t.Fatalf("replay %+v, %v; first value %s", res2, err, res.Value)
	}
	if got := pb.signals.added("r1"); !slices.Equal(got, append(slices.Clone(wantAdded), wantAdded...)) {
		t.Errorf("message.added after the replay %v, want %v twice", got, wantAdded)
	}
	if again, _ := pb.events(t); !slices.Equal(again, want) || len(pb.prov.calls) != 1 {
		t.Errorf("after the replay: history %q, %d streams", again, len(pb.prov.calls))
	}
}

// instructionOnceLast reports whether text is in exactly one of call's
// messages, its last, a user turn.
func instructionOnceLast(call ops.Call, text string) bool {
	n := 0
	for _, m := range call.Messages.All() {
		if strings.Contains(m.Content, text) {
			n++
		}
	}
	last := len(call.Messages.Slice()) - 1
	return n == 1 && last >= 0 && call.Messages.Slice()[last].Role == history.RoleUser && strings.Contains(call.Messages.Slice()[last].Content, text)
}

// 0021-D3-13 with a redelivery: a run interrupted after its instruction
// was stored (the worker stopping mid-stream, or chunks that could not be
// delivered, a temporary failure before the last attempt) leaves the
// instruction recorded and no result; the redelivered run takes that
// instruction, streams again and records the rest: one instruction, then
// the responses, one final result.
func TestRun_0021_D3_13_interrupted_run_records_its_instruction_once(t *testing.T) {
	t.Parallel()
	for _, tc := range []string{"worker stops", "chunks undeliverable"} {
		t.Run(tc, func(t *testing.T) {
			t.Parallel()
			ctx, stop := context.WithCancelCause(context.Background())
			defer stop(nil)
			var pb *probeBundle
			pb = probeSetup(t, &probeCLI{stream: func(sctx context.Context, n int, _ ops.Call, emit func(ops.Chunk) error) (*ops.Completion, error) {
				if n > 1 {
					return answer("done", emit)
				}
				if tc == "worker stops" {
					if err := emit(ops.Chunk{Kind: ops.ChunkText, Content: "half"}); err != nil {
						return nil, err
					}
					stop(errors.New("the worker stops"))
					<-sctx.Done()
					return nil, sctx.Err()
				}
				pb.outlet.refuse.Store(true)
				return answer("half", emit)
			}})
			data := `{"instruction":"list the files"}`
			_, err := pb.run(ctx, "r1", data, false)
			var oe *ops.Error
			if !errors.As(err, &oe) {
				t.Fatalf("interrupted run: %v, want an error", err)
			}
			if tc == "chunks undeliverable" && (!oe.Temporary || oe.Code != ops.CodeUnavailable) {
				t.Fatalf("interrupted run: %+v, want a temporary unavailable", oe)
			}
			lines, evs := pb.events(t)
			if want := []string{"r1/instruction: instruction"}; !slices.Equal(lines, want) {
				t.Fatalf("history after the interruption %q, want %q", lines, want)
			}
			ins := evs[0].Messages[0]

			pb.outlet.refuse.Store(false)
			res, err := pb.run(context.Background(), "r1", data, true)
			if err != nil {
				t.Fatal(err)
			}
			if res.Replayed || !strings.Contains(string(res.Value), `"done"`) {
				t.Errorf("value %s (replayed %v)", res.Value, res.Replayed)
			}
			lines, evs = pb.events(t)
			if want := []string{"r1/instruction: instruction", "r1: assistant_response"}; !slices.Equal(lines, want) {
				t.Fatalf("history %q, want %q", lines, want)
			}
			b, err := pb.store.Load(context.Background(), "b1")
			if err != nil {
				t.Fatal(err)
			}
			if got := msgKinds(b.Messages); !slices.Equal(got, []history.Kind{history.KindInstruction, history.KindAssistantResponse}) ||
				b.Messages[1].ID != ins.ID || responses(b.Messages)[0] != "done" {
				t.Errorf("branch messages %v", got)
			}
			// The second stream got the stored instruction once, last, and
			// chunk 1 of the redelivery carried it.
			if call := pb.prov.call(2); !instructionOnceLast(call, "list the files") {
				t.Errorf("second call messages %+v", call.Messages)
			}
			if got := pb.outlet.chunks("r1"); len(got) == 0 || got[0].Metadata["instruction"].(history.Message).ID != ins.ID {
				t.Errorf("redelivery's chunks %+v", got)
			}
			// Its message.added came once per attempt, with the same id
			// (a repeat observers recognise), then the response's.
			if got, want := pb.signals.added("r1"), []string{ins.ID, ins.ID, evs[1].Messages[0].ID}; !slices.Equal(got, want) {
				t.Errorf("message.added %v, want %v", got, want)
			}
			if sig := pb.signals.types("r1"); countString(sig, "run.end") != 1 || sig[len(sig)-1] != "run.end" {
				t.Errorf("signals %v, want one run.end, last", sig)
			}
		})
	}
}

func countString(ss []string, s string) int {
	n := 0
	for _, x := range ss {
		if x == s {
			n++
		}
	}
	return n
}

// 0021-D3-13 with clear_messages: the instruction's event clears, the
// final one does not, so the branch is cleared once, instruction first,
// also when the run is interrupted and redelivered.
func TestRun_0021_D3_13_clear_messages_clears_once_with_the_instruction(t *testing.T) {
	t.Parallel()
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	pb := probeSetup(t, &probeCLI{stream: func(sctx context.Context, n int, _ ops.Call, emit func(ops.Chunk) error) (*ops.Completion, error) {
		if n == 2 {
			stop(errors.New("the worker stops"))
			<-sctx.Done()
			return nil, sctx.Err()
		}
		return answer(fmt.Sprintf("answer %d", n), emit)
	}})
	if _, err := pb.run(context.Background(), "r0", `{"instruction":"before"}`, true); err != nil {
		t.Fatal(err)
	}
	data := `{"instruction":"fresh start","clear_messages":true}`
	if _, err := pb.run(ctx, "r1", data, false); err == nil {
		t.Fatal("the interrupted run succeeded")
	}
	if _, err := pb.run(context.Background(), "r1", data, true); err != nil {
		t.Fatal(err)
	}
	lines, evs := pb.events(t)
	want := []string{"r0/instruction: instruction", "r0: assistant_response", "r1/instruction: instruction", "r1: assistant_response"}
	if !slices.Equal(lines, want) {
		t.Fatalf("history %q, want %q", lines, want)
	}
	if evs[0].Clear || evs[1].Clear || !evs[2].Clear || evs[3].Clear {
		t.Errorf("clear flags %v %v %v %v, want only r1's instruction event", evs[0].Clear, evs[1].Clear, evs[2].Clear, evs[3].Clear)
	}
	b, err := pb.store.Load(context.Background(), "b1")
	if err != nil {
		t.Fatal(err)
	}
	if b.Messages[0].Kind != history.KindSystem || !slices.Equal(msgKinds(b.Messages), []history.Kind{history.KindInstruction, history.KindAssistantResponse}) ||
		b.Messages[1].ID != evs[2].Messages[0].ID || responses(b.Messages)[0] != "answer 3" {
		t.Errorf("branch messages %v %q", msgKinds(b.Messages), responses(b.Messages))
	}
	// The redelivered stream saw no message from before the clearing.
	call := pb.prov.call(3)
	if !instructionOnceLast(call, "fresh start") {
		t.Errorf("the redelivered call was sent %+v", call.Messages)
	}
	for _, m := range call.Messages.All() {
		if strings.Contains(m.Content, "before") || strings.Contains(m.Content, "answer 1") {
			t.Errorf("the redelivered call was sent a cleared message: %+v", m)
		}
	}
}

// 0021-D3-13 for run_and_collect: the middle's instruction is stored under
// its own stage id first; a second exchange of the same request is
// answered from history with the same value, recording nothing.
func TestRunAndCollect_0021_D3_13_instruction_under_its_stage_id(t *testing.T) {
	t.Parallel()
	pb := probeSetup(t, &probeCLI{stream: func(_ context.Context, _ int, _ ops.Call, emit func(ops.Chunk) error) (*ops.Completion, error) {
		return answer("collected", emit)
	}})
	mid, err := pb.eng.Middle(ops.MiddleRunAndCollect)
	if err != nil {
		t.Fatal(err)
	}
	in := middleIn(ops.MiddleInput{RequestID: "m1", BranchID: "b1"}, func(c *wire.CommunicateRequest) { c.Instruction, c.ClearMessages = "go", true })
	res, err := mid.Exchange(context.Background(), in)
	if err != nil || valueJSON(res) != `"collected"` {
		t.Fatalf("exchange %+v, %v", res, err)
	}
	lines, evs := pb.events(t)
	if want := []string{"m1/instruction: instruction", "m1: assistant_response"}; !slices.Equal(lines, want) {
		t.Fatalf("history %q, want %q", lines, want)
	}
	if !evs[0].Clear || evs[1].Clear {
		t.Errorf("clear flags %v %v, want the instruction event's only", evs[0].Clear, evs[1].Clear)
	}
	res2, err := mid.Exchange(context.Background(), in)
	if err != nil || valueJSON(res2) != `"collected"` || len(pb.prov.calls) != 1 {
		t.Fatalf("second exchange %+v, %v; %d streams", res2, err, len(pb.prov.calls))
	}
	if again, _ := pb.events(t); len(again) != 2 {
		t.Errorf("history after the second exchange %q", again)
	}
	want := []string{evs[0].Messages[0].ID, evs[1].Messages[0].ID}
	if got := pb.signals.added("m1"); !slices.Equal(got, append(slices.Clone(want), want...)) {
		t.Errorf("message.added %v, want %v twice", got, want)
	}
}

// totalsCLI is a probe CLI that names the result keys whose numbers add
// up ([ops.ResultTotals]).
type totalsCLI struct {
	*probeCLI
	keys []string
}

func (p totalsCLI) TotalKeys() []string { return p.keys }

// A run adds up the numbers of the result keys its provider names as
// totals over a response, and keeps the last value of the others; a
// provider naming none gets the last values.
func TestRun_result_totals_are_the_providers(t *testing.T) {
	t.Parallel()
	stream := func(_ context.Context, _ int, _ ops.Call, emit func(ops.Chunk) error) (*ops.Completion, error) {
		for _, c := range []ops.Chunk{
			{Kind: ops.ChunkResult, Metadata: map[string]any{"total_cost_usd": 0.5, "num_turns": 1.0}},
			{Kind: ops.ChunkResult, Metadata: map[string]any{"total_cost_usd": 0.25, "num_turns": 2.0}},
		} {
			if err := emit(c); err != nil {
				return nil, err
			}
		}
		return answer("done", emit)
	}
	tests := []struct {
		name            string
		keys            []string // nil: the provider names no totals
		wantCost, turns float64
	}{
		{name: "cost and turns", keys: []string{"total_cost_usd", "num_turns"}, wantCost: 0.75, turns: 3},
		{name: "turns only", keys: []string{"num_turns"}, wantCost: 0.25, turns: 3},
		{name: "none", wantCost: 0.25, turns: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			probe := &probeCLI{stream: stream}
			var prov ops.Provider = probe
			if tt.keys != nil {
				prov = totalsCLI{probe, tt.keys}
			}
			store := opstest.NewMemoryStore()
			eng, err := ops.NewEngine(ops.Config{Store: store, Providers: ops.NewProviders(map[string]ops.Provider{"probe": prov})})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := eng.Do(ctx, ops.Request{ID: "c", Verb: "branch.create", BranchID: "b1", Data: json.RawMessage(`{"chat_model":"probe:x"}`)}); err != nil {
				t.Fatal(err)
			}
			if _, err := eng.Do(ctx, ops.Request{ID: "r", Verb: "run", BranchID: "b1", Data: json.RawMessage(`{"instruction":"go"}`)}); err != nil {
				t.Fatal(err)
			}
			b, err := store.Load(ctx, "b1")
			if err != nil {
				t.Fatal(err)
			}
			var mr map[string]any
			for _, m := range b.Messages {
				if m.Kind == history.KindAssistantResponse {
					mr, _ = m.Metadata[history.MetaModelResponse].(map[string]any)
				}
			}
			if mr["total_cost_usd"] != tt.wantCost || mr["num_turns"] != tt.turns {
				t.Errorf("model_response %v, want cost %v and turns %v", mr, tt.wantCost, tt.turns)
			}
		})
	}
}
