package scripted_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
)

func TestProvider_Stream_matches_Complete(t *testing.T) {
	t.Parallel()
	const script = `{"provider":"scripted","replies":[
		"Hello,  wide\tworld!\n",
		"  leading space",
		"",
		"héllo wörld ✓",
		{"text":"call it","usage":{"input_tokens":2,"output_tokens":3,"total_tokens":5},
		 "tool_calls":[{"id":"c1","name":"add","arguments":{"a":1}},{"id":"c2","name":"now"}]}]}`
	tests := []struct {
		name      string
		ref       string
		index     uint64
		wantWords []string
		wantTools []string
		wantUsage bool
	}{
		{name: "echo", ref: `"scripted:echo"`, wantWords: []string{"the ", "instruction"}},
		{name: "mixed whitespace", ref: script, index: 0, wantWords: []string{"Hello,  ", "wide\t", "world!\n"}},
		{name: "leading whitespace", ref: script, index: 1, wantWords: []string{"  leading ", "space"}},
		{name: "empty text", ref: script, index: 2},
		{name: "multi-byte text", ref: script, index: 3, wantWords: []string{"héllo ", "wörld ", "✓"}},
		{name: "tool calls and usage", ref: script, index: 4, wantWords: []string{"call ", "it"}, wantTools: []string{"add", "now"}, wantUsage: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			call := ops.Call{Model: model(t, tt.ref), Instruction: "the instruction", BranchID: "b", Index: tt.index, Attempt: 1}
			want, err := scripted.New().Complete(context.Background(), call)
			if err != nil {
				t.Fatal(err)
			}
			var chunks []ops.Chunk
			got, err := scripted.New().Stream(context.Background(), call, func(c ops.Chunk) error {
				chunks = append(chunks, c)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Stream completion %+v differs from Complete's %+v", got, want)
			}
			var text strings.Builder
			var words, tools []string
			for i, c := range chunks {
				if c.Seq != 0 {
					t.Errorf("chunk %d has Seq %d; the provider leaves numbering to its caller", i, c.Seq)
				}
				switch c.Kind {
				case ops.ChunkText:
					if c.IsDelta != (len(words) > 0) {
						t.Errorf("text chunk %d: IsDelta %v", i, c.IsDelta)
					}
					text.WriteString(c.Content)
					words = append(words, c.Content)
				case ops.ChunkToolUse:
					tools = append(tools, c.ToolName)
				}
			}
			if text.String() != want.Text {
				t.Fatalf("text chunks concatenate to %q, Complete's text is %q", text.String(), want.Text)
			}
			if !reflect.DeepEqual(words, tt.wantWords) || !reflect.DeepEqual(tools, tt.wantTools) {
				t.Fatalf("text chunks %q, tool calls %q; want %q, %q", words, tools, tt.wantWords, tt.wantTools)
			}
			last := chunks[len(chunks)-1]
			if last.Kind != ops.ChunkResult || (last.Metadata["usage"] != nil) != tt.wantUsage {
				t.Fatalf("last chunk %+v, want a result chunk (usage %v)", last, tt.wantUsage)
			}
		})
	}
}

func TestProvider_Stream_failures(t *testing.T) {
	t.Parallel()
	stop := errors.New("consumer gone")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name       string
		ctx        context.Context
		ref        string
		emitErr    error
		wantIs     error
		wantChunks int
	}{
		{name: "scripted error emits nothing", ref: `{"provider":"scripted","replies":[{"error":"boom"}]}`},
		{name: "emit error stops the stream", ref: `"scripted:echo"`, emitErr: stop, wantIs: stop, wantChunks: 1},
		{name: "ended context", ctx: canceled, ref: `"scripted:echo"`, wantIs: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			n := 0
			comp, err := scripted.New().Stream(ctx, ops.Call{Model: model(t, tt.ref), Instruction: "a b c", Attempt: 1}, func(ops.Chunk) error {
				n++
				return tt.emitErr
			})
			if err == nil || comp != nil {
				t.Fatalf("Stream = %+v, %v; want an error", comp, err)
			}
			var pe *ops.ProviderError
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) || tt.wantIs == nil && !errors.As(err, &pe) {
				t.Fatalf("err = %v, want %v", err, tt.wantIs)
			}
			if n != tt.wantChunks {
				t.Fatalf("%d chunks emitted, want %d", n, tt.wantChunks)
			}
		})
	}
}
