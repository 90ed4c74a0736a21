package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/lionbus/lionbus/pkg/wire"
)

// An error chunk's marks say what it means for its stream; the chunks the
// constructors make carry the marks on the wire as docs/protocol.md says.
func TestChunk_End(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		chunk    wire.Chunk
		want     wire.StreamEnd
		wantJSON string // "" skips the encoding check
	}{
		{name: "text", chunk: wire.Chunk{Kind: wire.ChunkText, Content: "hi"}, want: wire.EndNone},
		{name: "a text chunk with the mark", chunk: wire.Chunk{Kind: wire.ChunkText, Metadata: map[string]any{wire.MetaBenignEOS: true}}, want: wire.EndNone},
		{name: "failure", chunk: wire.Chunk{Kind: wire.ChunkError, Content: "boom"}, want: wire.EndFailure},
		{name: "benign end", chunk: wire.BenignEnd(), want: wire.EndBenign,
			wantJSON: `{"seq":0,"type":"error","metadata":{"benign_eos":true}}`},
		{name: "benign end as decoded", chunk: decodeChunk(t, `{"seq":3,"type":"error","metadata":{"benign_eos":true}}`), want: wire.EndBenign},
		{name: "benign_eos false", chunk: wire.Chunk{Kind: wire.ChunkError, Metadata: map[string]any{wire.MetaBenignEOS: false}}, want: wire.EndFailure},
		{name: "benign_eos not a boolean", chunk: wire.Chunk{Kind: wire.ChunkError, Metadata: map[string]any{wire.MetaBenignEOS: "true"}}, want: wire.EndFailure},
		{name: "reconnect notice", chunk: wire.ReconnectNotice("Reconnecting... 1/5 (x)"), want: wire.EndNotice,
			wantJSON: `{"seq":0,"type":"error","content":"Reconnecting... 1/5 (x)","metadata":{"reconnect_notice":true}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.chunk.End(); got != tt.want {
				t.Errorf("End() = %d, want %d", got, tt.want)
			}
			if tt.wantJSON == "" {
				return
			}
			b, err := json.Marshal(tt.chunk)
			if err != nil || string(b) != tt.wantJSON {
				t.Errorf("JSON %s, %v; want %s", b, err, tt.wantJSON)
			}
		})
	}
}

func decodeChunk(t *testing.T, s string) wire.Chunk {
	t.Helper()
	var c wire.Chunk
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		t.Fatal(err)
	}
	return c
}
