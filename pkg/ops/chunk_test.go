package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

// The closed vocabulary of chunk kinds that 0021-D3-14 maps; anything else
// is not a kind.
func TestChunkKind_Valid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind ops.ChunkKind
		want bool
	}{
		{ops.ChunkSystem, true}, {ops.ChunkThinking, true}, {ops.ChunkText, true}, {ops.ChunkToolUse, true},
		{ops.ChunkToolResult, true}, {ops.ChunkResult, true}, {ops.ChunkError, true}, {ops.ChunkRound, true},
		{"", false}, {"TEXT", false}, {"delta", false},
	}
	for _, tt := range tests {
		if got := tt.kind.Valid(); got != tt.want {
			t.Errorf("%q.Valid() = %v, want %v", tt.kind, got, tt.want)
		}
	}
}

func TestChunk_wire_form(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		chunk ops.Chunk
		want  string
	}{
		{"text", ops.Chunk{Seq: 1, Kind: ops.ChunkText, Content: "Hi", IsDelta: true}, `{"seq":1,"type":"text","content":"Hi","is_delta":true}`},
		{"tool use", ops.Chunk{Seq: 2, Kind: ops.ChunkToolUse, ToolName: "add", ToolID: "t1", ToolInput: map[string]any{"x": 1}},
			`{"seq":2,"type":"tool_use","tool_name":"add","tool_id":"t1","tool_input":{"x":1}}`},
		{"tool result", ops.Chunk{Seq: 3, Kind: ops.ChunkToolResult, ToolID: "t1", ToolOutput: "no", IsError: true},
			`{"seq":3,"type":"tool_result","tool_id":"t1","tool_output":"no","is_error":true}`},
		{"react round", ops.Chunk{Seq: 5, Kind: ops.ChunkRound, Content: "a", Metadata: map[string]any{"round": 0, "phase": "analysis"}},
			`{"seq":5,"type":"round","content":"a","metadata":{"phase":"analysis","round":0}}`},
		{"benign end", ops.Chunk{Seq: 4, Kind: ops.ChunkError, Metadata: map[string]any{"benign_eos": true}}, `{"seq":4,"type":"error","metadata":{"benign_eos":true}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.chunk)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Fatalf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
}

func TestChunkBuffer(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	text := func(s string) ops.Chunk { return ops.Chunk{Kind: ops.ChunkText, Content: s} }
	tests := []struct {
		name     string
		limit    int
		emits    []ops.Chunk
		ctx      context.Context
		wantErr  error // of the last Emit
		wantLen  int
		wantText string
	}{
		{name: "empty"},
		{name: "text of text chunks only", emits: []ops.Chunk{
			text("a "), {Kind: ops.ChunkThinking, Content: "hmm"}, text("b"), {Kind: ops.ChunkError, Content: "x"},
		}, wantLen: 4, wantText: "a b"},
		{name: "limit reached", limit: 2, emits: []ops.Chunk{text("1"), text("2"), text("3")}, wantErr: opstest.ErrChunkLimit, wantLen: 2, wantText: "12"},
		{name: "ended context", ctx: canceled, emits: []ops.Chunk{text("x")}, wantErr: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			buf := &opstest.ChunkBuffer{Limit: tt.limit}
			var err error
			for _, c := range tt.emits {
				err = buf.Emit(ctx, c)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("last Emit = %v, want %v", err, tt.wantErr)
			}
			if buf.Len() != tt.wantLen || len(buf.Chunks()) != tt.wantLen || buf.Text() != tt.wantText {
				t.Fatalf("Len %d, Text %q; want %d, %q", buf.Len(), buf.Text(), tt.wantLen, tt.wantText)
			}
		})
	}
	var buf opstest.ChunkBuffer
	if err := buf.Emit(context.Background(), text("kept")); err != nil {
		t.Fatal(err)
	}
	got := buf.Chunks()
	got[0].Content = "changed"
	if buf.Text() != "kept" {
		t.Fatal("Chunks() returned the buffer's own slice")
	}
}

// Sequence numbers chunks from 1 in the order the sink receives them, also
// when they are emitted from several goroutines.
func TestSequence(t *testing.T) {
	t.Parallel()
	var buf opstest.ChunkBuffer
	sink := ops.Sequence(&buf)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			if err := sink.Emit(context.Background(), ops.Chunk{Seq: 999, Kind: ops.ChunkText, Content: fmt.Sprint(i)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	chunks := buf.Chunks()
	if len(chunks) != 50 {
		t.Fatalf("%d chunks", len(chunks))
	}
	for i, c := range chunks {
		if c.Seq != uint64(i+1) {
			t.Fatalf("chunk %d has Seq %d, want %d", i, c.Seq, i+1)
		}
	}
	full := ops.Sequence(&opstest.ChunkBuffer{Limit: 1})
	if err := full.Emit(context.Background(), ops.Chunk{Kind: ops.ChunkText}); err != nil {
		t.Fatal(err)
	}
	if err := full.Emit(context.Background(), ops.Chunk{Kind: ops.ChunkText}); !errors.Is(err, opstest.ErrChunkLimit) {
		t.Fatalf("the sink's error was not returned: %v", err)
	}
}
