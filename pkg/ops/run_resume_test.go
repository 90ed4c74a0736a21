package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
)

// storingOutlet keeps every chunk of every attempt of a request, numbered
// on after the earlier attempts' as the bus numbers them, and reads them
// back ([ops.ChunkHistory]). failClose makes the Close of the first
// attempt fail: chunks that could not be confirmed, nothing recorded.
type storingOutlet struct {
	mu        sync.Mutex
	byReq     map[string][]ops.Chunk
	failClose bool
	reads     int
}

func (o *storingOutlet) OpenChunks(_ context.Context, req ops.Request) (ops.ChunkStream, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byReq == nil {
		o.byReq = map[string][]ops.Chunk{}
	}
	var base uint64
	if req.Attempt > 1 {
		base = uint64(len(o.byReq[req.ID]))
	}
	return &storingStream{o: o, id: req.ID, base: base, fail: o.failClose && req.Attempt < 2}, nil
}

func (o *storingOutlet) StoredChunks(_ context.Context, req ops.Request, max int) ([]ops.Chunk, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.reads++
	if n := len(o.byReq[req.ID]); n > max {
		return nil, fmt.Errorf("%d chunks: %w", n, ops.ErrTooManyChunks)
	}
	return slices.Clone(o.byReq[req.ID]), nil
}

func (o *storingOutlet) chunks(id string) []ops.Chunk {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.byReq[id])
}

type storingStream struct {
	o    *storingOutlet
	id   string
	base uint64
	fail bool
}

func (s *storingStream) Emit(_ context.Context, c ops.Chunk) error {
	c.Seq += s.base
	s.o.mu.Lock()
	s.o.byReq[s.id] = append(s.o.byReq[s.id], c)
	s.o.mu.Unlock()
	return nil
}

func (s *storingStream) Close(context.Context) error {
	if s.fail {
		return errors.New("chunks not confirmed")
	}
	return nil
}

// A run redelivered after its worker died mid-stream: with a stored chunk
// naming the CLI's session it resumes that session (the CLI is told
// --resume through Call.Resume, with ops.ResumePrompt instead of the
// instruction), its chunks go on after the stored ones without a repeat,
// and what the dead attempt streamed is recorded once, with the rest;
// without a session it starts again; with a stream that had ended, the
// CLI is not run again at all.
func TestRun_redelivered_run_resumes_its_CLI_session(t *testing.T) {
	t.Parallel()
	session := func(id string) ops.Chunk {
		return ops.Chunk{Kind: ops.ChunkSystem, Metadata: map[string]any{ops.MetaSessionID: id}}
	}
	text := func(s string) ops.Chunk { return ops.Chunk{Kind: ops.ChunkText, Content: s} }
	result := ops.Chunk{Kind: ops.ChunkResult, Metadata: map[string]any{ops.MetaSessionID: "S1"}}
	tests := []struct {
		name string
		// first is what the first attempt streams before its worker dies
		// (died: the context ends) or before its chunks fail to be
		// confirmed (died false).
		first      []ops.Chunk
		died       bool
		wantCalls  int
		wantResume string
		// wantKinds are the kinds of the stored chunks, in seq order.
		wantKinds []ops.ChunkKind
		wantResp  []string
	}{
		{
			name:  "session named, stream cut",
			first: []ops.Chunk{session("S1"), text("half")}, died: true,
			wantCalls: 2, wantResume: "S1",
			wantKinds: []ops.ChunkKind{ops.ChunkSystem, ops.ChunkSystem, ops.ChunkText, ops.ChunkSystem, ops.ChunkText, ops.ChunkResult},
			wantResp:  []string{"half", "rest"},
		},
		{
			name:  "no session yet",
			first: []ops.Chunk{text("half")}, died: true,
			wantCalls: 2, wantResume: "",
			wantKinds: []ops.ChunkKind{ops.ChunkSystem, ops.ChunkText, ops.ChunkSystem, ops.ChunkText, ops.ChunkResult},
			wantResp:  []string{"rest"},
		},
		{
			name:  "stream ended",
			first: []ops.Chunk{session("S1"), text("whole"), result}, died: false,
			wantCalls: 1,
			wantKinds: []ops.ChunkKind{ops.ChunkSystem, ops.ChunkSystem, ops.ChunkText, ops.ChunkResult},
			wantResp:  []string{"whole"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, stop := context.WithCancelCause(context.Background())
			defer stop(nil)
			prov := &probeCLI{stream: func(sctx context.Context, n int, call ops.Call, emit func(ops.Chunk) error) (*ops.Completion, error) {
				if n > 1 {
					for _, c := range []ops.Chunk{text("rest"), result} {
						if err := emit(c); err != nil {
							return nil, err
						}
					}
					return &ops.Completion{Text: "rest", SessionID: "S1"}, nil
				}
				for _, c := range tt.first {
					if err := emit(c); err != nil {
						return nil, err
					}
				}
				if tt.died {
					stop(errors.New("the worker dies"))
					<-sctx.Done()
					return nil, sctx.Err()
				}
				return &ops.Completion{Text: "whole", SessionID: "S1"}, nil
			}}
			outlet := &storingOutlet{failClose: !tt.died}
			store := opstest.NewMemoryStore()
			eng, err := ops.NewEngine(ops.Config{Store: store, Chunks: outlet,
				Providers: ops.NewProviders(map[string]ops.Provider{"probe": prov, "scripted": scripted.New()})})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := eng.Do(context.Background(), ops.Request{ID: "create-b1", Verb: "branch.create", BranchID: "b1",
				Data: json.RawMessage(`{"system":"be brief","chat_model":"probe:x"}`)}); err != nil {
				t.Fatal(err)
			}
			run := func(ctx context.Context, attempt int) (*ops.Result, error) {
				return eng.Do(ctx, ops.Request{ID: "r1", Verb: "run", BranchID: "b1", Attempt: attempt,
					Data: json.RawMessage(`{"instruction":"list the files"}`)})
			}
			if _, err := run(ctx, 1); err == nil {
				t.Fatal("the interrupted attempt succeeded")
			}
			res, err := run(context.Background(), 2)
			if err != nil {
				t.Fatal(err)
			}

			prov.mu.Lock()
			calls := slices.Clone(prov.calls)
			prov.mu.Unlock()
			if len(calls) != tt.wantCalls {
				t.Fatalf("%d CLI calls, want %d", len(calls), tt.wantCalls)
			}
			if tt.wantCalls == 2 {
				c := calls[1]
				last, _ := c.Messages.Last()
				if c.Resume != tt.wantResume {
					t.Errorf("redelivery resumes %q, want %q", c.Resume, tt.wantResume)
				}
				if resumed := last.Content == ops.ResumePrompt; resumed != (tt.wantResume != "") {
					t.Errorf("redelivery's prompt %q (resuming %v)", last.Content, tt.wantResume != "")
				}
				if tt.wantResume != "" && (c.Messages.At(0).Role != history.RoleSystem || c.Messages.Len() != 2) {
					t.Errorf("resumed call's messages %v, want the system message and the resume prompt", c.Messages)
				}
			}
			got := outlet.chunks("r1")
			var kinds []ops.ChunkKind
			instructions := 0
			for i, c := range got {
				if c.Seq != uint64(i+1) {
					t.Errorf("chunk %d has seq %d: a gap or a repeat", i+1, c.Seq)
				}
				kinds = append(kinds, c.Kind)
				if _, ok := c.Metadata["instruction"]; ok {
					instructions++
				}
			}
			if !slices.Equal(kinds, tt.wantKinds) {
				t.Errorf("stored chunks %v, want %v", kinds, tt.wantKinds)
			}
			wantIns := 1
			if tt.wantResume == "" && tt.wantCalls == 2 {
				wantIns = 2 // started again: its instruction chunk again
			}
			if instructions != wantIns {
				t.Errorf("%d instruction chunks, want %d", instructions, wantIns)
			}
			var val ops.RunValue
			if err := json.Unmarshal(res.Value, &val); err != nil {
				t.Fatal(err)
			}
			// A resumed run's value counts every chunk of its stream; one
			// started again, its own attempt's.
			wantChunks := uint64(len(got))
			if wantIns == 2 {
				wantChunks -= uint64(len(tt.first) + 1)
			}
			if !slices.Equal(val.Responses, tt.wantResp) || val.Chunks != wantChunks {
				t.Errorf("value responses %q over %d chunks, want %q over %d", val.Responses, val.Chunks, tt.wantResp, wantChunks)
			}
			b, err := store.Load(context.Background(), "b1")
			if err != nil {
				t.Fatal(err)
			}
			if got := responses(b.Messages); !slices.Equal(got, tt.wantResp) {
				t.Errorf("recorded responses %q, want %q", got, tt.wantResp)
			}
			if n := strings.Count(fmt.Sprint(msgKinds(b.Messages)), string(history.KindInstruction)); n != 1 {
				t.Errorf("%d instructions recorded, want 1", n)
			}
			if b.Settings.ProviderSession != "S1" && tt.name != "no session yet" {
				t.Errorf("branch session %q, want S1", b.Settings.ProviderSession)
			}
		})
	}
}
