package cli_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli"
)

// 0021-D3-14: each stream-json line maps to the chunk kinds of run.
func TestDecoder_Decode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		lines   []string
		want    []ops.Chunk
		wantErr error
	}{
		{name: "init", lines: []string{`{"type":"system","subtype":"init","session_id":"s1","model":"m","tools":["Bash"]}`},
			want: []ops.Chunk{{Kind: ops.ChunkSystem, Metadata: map[string]any{"subtype": "init", "session_id": "s1", "model": "m", "tools": []any{"Bash"}}}}},
		{name: "assistant blocks", lines: []string{`{"type":"assistant","message":{"id":"m1","content":[{"type":"thinking","thinking":" hmm "},{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}]}}`},
			want: []ops.Chunk{{Kind: ops.ChunkThinking, Content: "hmm"}, {Kind: ops.ChunkText, Content: "hi"},
				{Kind: ops.ChunkToolUse, ToolID: "t1", ToolName: "Read", ToolInput: map[string]any{"path": "a"}}}},
		{name: "tool result", lines: []string{`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"x"}],"is_error":true}]}}`},
			want: []ops.Chunk{{Kind: ops.ChunkToolResult, ToolID: "t1", ToolOutput: []any{map[string]any{"type": "text", "text": "x"}}, IsError: true}}},
		{name: "partial deltas then the full block", lines: []string{
			`{"type":"stream_event","event":{"type":"message_start","message":{"id":"m2"}}}`,
			`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"He"}}}`,
			`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"t"}}}`,
			`{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"Hello"},{"type":"tool_use","id":"t2","name":"Bash","input":{}}]}}`},
			want: []ops.Chunk{{Kind: ops.ChunkText, Content: "He", IsDelta: true}, {Kind: ops.ChunkThinking, Content: "t", IsDelta: true},
				{Kind: ops.ChunkToolUse, ToolID: "t2", ToolName: "Bash", ToolInput: map[string]any{}}}},
		{name: "error result", lines: []string{`{"type":"result","subtype":"error_max_turns","is_error":true,"session_id":"s","errors":["too many turns"]}`},
			want: []ops.Chunk{{Kind: ops.ChunkResult, Metadata: map[string]any{"session_id": "s", "subtype": "error_max_turns"}},
				{Kind: ops.ChunkError, Content: "too many turns", IsError: true}}},
		{name: "benign end of stream", lines: []string{`{"type":"error","error":{}}`},
			want: []ops.Chunk{{Kind: ops.ChunkError, Metadata: map[string]any{"benign_eos": true}}}},
		{name: "reconnect notice", lines: []string{`{"type":"error","message":"Reconnecting... 1/5 (stream closed)"}`},
			want: []ops.Chunk{{Kind: ops.ChunkError, Content: "Reconnecting... 1/5 (stream closed)", Metadata: map[string]any{"reconnect_notice": true}}}},
		{name: "unknown type", lines: []string{`{"type":"rate_limit_event"}`}},
		{name: "not JSON", lines: []string{`Warning: something`}, wantErr: cli.ErrNotJSON},
		{name: "done", lines: []string{`{"type":"done"}`}, wantErr: cli.ErrDone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d cli.Decoder
			var got []ops.Chunk
			var err error
			for _, l := range tt.lines {
				var cs []ops.Chunk
				cs, err = d.Decode([]byte(l))
				got = append(got, cs...)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tt.want)
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if string(gj) != string(wj) {
				t.Errorf("chunks\n got %s\nwant %s", gj, wj)
			}
		})
	}
}

// FuzzDecoder_Decode feeds arbitrary lines: Decode never panics, and what
// it returns are valid chunk kinds.
func FuzzDecoder_Decode(f *testing.F) {
	fh, err := os.Open("clitest/fakecli/session.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f.Add(strings.ReplaceAll(sc.Text(), "SESSION", "s"))
	}
	f.Fuzz(func(t *testing.T, line string) {
		var d cli.Decoder
		cs, _ := d.Decode([]byte(line))
		for _, c := range cs {
			if !c.Kind.Valid() {
				t.Fatalf("invalid kind %q from %q", c.Kind, line)
			}
		}
	})
}

// The keys the provider names as totals are the ones its decoder writes
// a result line's cost and turns under, as numbers.
func TestProvider_TotalKeys(t *testing.T) {
	t.Parallel()
	p, err := cli.New()
	if err != nil {
		t.Fatal(err)
	}
	var d cli.Decoder
	chunks, err := d.Decode([]byte(`{"type":"result","subtype":"success","total_cost_usd":0.01,"num_turns":2,"duration_ms":5,"result":"ok"}`))
	if err != nil || len(chunks) == 0 || chunks[0].Kind != ops.ChunkResult {
		t.Fatalf("Decode = %+v, %v", chunks, err)
	}
	keys := p.TotalKeys()
	if len(keys) != 2 {
		t.Fatalf("TotalKeys() = %q, want the cost and the turns", keys)
	}
	for _, k := range keys {
		if _, ok := ops.Number(chunks[0].Metadata[k]); !ok {
			t.Errorf("total key %q: metadata %v has no number under it", k, chunks[0].Metadata)
		}
	}
	if chunks[0].Metadata[cli.MetaTotalCostUSD] != 0.01 || chunks[0].Metadata[cli.MetaNumTurns] != 2.0 {
		t.Errorf("metadata %v", chunks[0].Metadata)
	}
}
