package transcript

import (
	"errors"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/wire"
)

// MarkSession records the session on every message of the run.
func TestFold_MarkSession(t *testing.T) {
	t.Parallel()
	s := &Fold{Msgs: []wire.Message{{ID: "a"}, {ID: "b", Metadata: map[string]any{"tool_id": "t1"}}}, Session: "S1"}
	s.MarkSession()
	for _, m := range s.Msgs {
		if m.Metadata[MetaSessionID] != "S1" {
			t.Errorf("message %s: metadata %v", m.ID, m.Metadata)
		}
	}
	if s.Msgs[1].Metadata["tool_id"] != "t1" {
		t.Errorf("metadata lost: %v", s.Msgs[1].Metadata)
	}
}

// The numbers of usage always add up over a response; those of the
// provider's Totals keys add up too, other keys are the last chunk's.
func TestFold_result_totals(t *testing.T) {
	t.Parallel()
	results := []map[string]any{
		{"usage": map[string]any{"input_tokens": 3.0, "output_tokens": 4.0}, "total_cost_usd": 0.5, "num_turns": 1.0, "subtype": "a"},
		{"usage": map[string]any{"input_tokens": 1.0, "output_tokens": 2.0}, "total_cost_usd": 0.25, "num_turns": 2.0, "subtype": "b"},
	}
	tests := []struct {
		name            string
		totals          []string
		wantCost, turns float64
	}{
		{name: "the provider's totals", totals: []string{"total_cost_usd", "num_turns"}, wantCost: 0.75, turns: 3},
		{name: "cost only", totals: []string{"total_cost_usd"}, wantCost: 0.75, turns: 2},
		{name: "no totals", wantCost: 0.25, turns: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &Fold{Clock: time.Now, Totals: tt.totals}
			for _, md := range results {
				if err := s.Take(wire.Chunk{Kind: wire.ChunkResult, Metadata: md}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Take(wire.Chunk{Kind: wire.ChunkText, Content: "done"}); err != nil {
				t.Fatal(err)
			}
			s.Flush()
			if len(s.Msgs) != 1 {
				t.Fatalf("%d messages", len(s.Msgs))
			}
			mr, _ := s.Msgs[0].Metadata[history.MetaModelResponse].(map[string]any)
			if mr["total_cost_usd"] != tt.wantCost || mr["num_turns"] != tt.turns || mr["subtype"] != "b" {
				t.Errorf("model_response %v, want cost %v, turns %v, subtype b", mr, tt.wantCost, tt.turns)
			}
			u, _ := mr["usage"].(map[string]any)
			if u["input_tokens"] != 4.0 || u["output_tokens"] != 6.0 || s.Usage == nil || *s.Usage != (wire.Usage{InputTokens: 4, OutputTokens: 6, TotalTokens: 10}) {
				t.Errorf("usage %v, %+v", u, s.Usage)
			}
		})
	}
}

// An error chunk ends the stream as its marks say.
func TestFold_error_chunks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		chunk       wire.Chunk
		wantErr     error
		wantNotice  string
		wantFailure string
	}{
		{name: "benign end", chunk: wire.BenignEnd(), wantErr: ErrBenignEOS},
		{name: "notice", chunk: wire.ReconnectNotice("Reconnecting... 1/5 (x)"), wantNotice: "Reconnecting... 1/5 (x)"},
		{name: "failure", chunk: wire.Chunk{Kind: wire.ChunkError, Content: "boom"}, wantErr: ErrStreamFailed, wantFailure: "boom"},
		{name: "empty failure", chunk: wire.Chunk{Kind: wire.ChunkError}, wantErr: ErrStreamFailed, wantFailure: EmptyErrorText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var notice string
			s := &Fold{Clock: time.Now, OnReconnect: func(n string) { notice = n }}
			if err := s.Take(tt.chunk); !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("Take = %v, want %v", err, tt.wantErr)
			}
			if notice != tt.wantNotice || s.Failure != tt.wantFailure {
				t.Errorf("notice %q, failure %q; want %q, %q", notice, s.Failure, tt.wantNotice, tt.wantFailure)
			}
		})
	}
}
