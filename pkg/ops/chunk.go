package ops

import (
	"context"
	"sync"
)

// ChunkKind is the kind of a streamed [Chunk] (ADR-0021 D3).
type ChunkKind string

// Chunk kinds, as a CLI or streamed API model produces them.
const (
	// ChunkSystem carries provider session data; metadata.session_id, when
	// present, is the session to resume next time.
	ChunkSystem ChunkKind = "system"
	// ChunkThinking carries reasoning text in Content.
	ChunkThinking ChunkKind = "thinking"
	// ChunkText carries assistant text in Content; consecutive text chunks
	// concatenate without a separator.
	ChunkText ChunkKind = "text"
	// ChunkToolUse is a tool call the model made: ToolID, ToolName,
	// ToolInput.
	ChunkToolUse ChunkKind = "tool_use"
	// ChunkToolResult is the result of the call with the same ToolID:
	// ToolOutput, IsError.
	ChunkToolResult ChunkKind = "tool_result"
	// ChunkResult ends a turn; Metadata carries usage and cost.
	ChunkResult ChunkKind = "result"
	// ChunkError is an error the model reported in the stream, in Content;
	// metadata.benign_eos marks one that only ends the stream.
	ChunkError ChunkKind = "error"
	// ChunkRound is a completed round of a streamed react: Content is the
	// round's analysis text (the answer, for the final round; compact
	// JSON unless it is text), metadata.round its index from 0,
	// metadata.phase "analysis" or "answer", metadata.value its value.
	ChunkRound ChunkKind = "round"
)

// Valid reports whether k is one of the chunk kinds.
func (k ChunkKind) Valid() bool {
	switch k {
	case ChunkSystem, ChunkThinking, ChunkText, ChunkToolUse, ChunkToolResult, ChunkResult, ChunkError, ChunkRound:
		return true
	}
	return false
}

// Chunk is one piece of a streamed model answer. Its JSON form is the data
// of a lionbus.run.chunk event; the field names follow the normalised
// stream-chunk contract of the reference (type, content, tool_name, ...).
type Chunk struct {
	// Seq numbers the chunks of one request from 1, in emission order. A
	// provider leaves it 0; whoever forwards the chunks to a [ChunkSink]
	// numbers them (see [Sequence]).
	Seq uint64 `json:"seq"`
	// Kind is the chunk's kind.
	Kind ChunkKind `json:"type"`
	// Content is the text of text, thinking and error chunks.
	Content string `json:"content,omitempty"`
	// ToolName, ToolID and ToolInput describe a tool_use; ToolID links a
	// tool_result to it.
	ToolName  string         `json:"tool_name,omitempty"`
	ToolID    string         `json:"tool_id,omitempty"`
	ToolInput map[string]any `json:"tool_input,omitempty"`
	// ToolOutput is a tool_result's output; IsError marks a failed one.
	ToolOutput any  `json:"tool_output,omitempty"`
	IsError    bool `json:"is_error,omitempty"`
	// IsDelta marks a text or thinking chunk that continues the previous
	// one rather than starting a block.
	IsDelta bool `json:"is_delta,omitempty"`
	// Metadata holds kind-specific data (session_id, usage, benign_eos...).
	Metadata map[string]any `json:"metadata,omitempty"`
}

// ChunkSink receives the chunks of a streamed request, in order. Emit must
// not keep c's maps beyond the call unless it owns them; an error stops the
// stream (the run fails with it). Implementations need not be safe for
// concurrent use unless they say so: one request's chunks are emitted from
// one goroutine.
type ChunkSink interface {
	Emit(ctx context.Context, c Chunk) error
}

// ChunkSinkFunc adapts a function to a [ChunkSink].
type ChunkSinkFunc func(ctx context.Context, c Chunk) error

// Emit calls f.
func (f ChunkSinkFunc) Emit(ctx context.Context, c Chunk) error { return f(ctx, c) }

// Sequence returns a sink that numbers the chunks it forwards to sink: the
// first gets Seq 1, the next 2, and so on, whatever Seq they carried. It
// is safe for concurrent use and forwards one chunk at a time, so sink
// receives them in Seq order. A chunk sink refused keeps its number (the
// stream fails anyway).
func Sequence(sink ChunkSink) ChunkSink {
	s := &sequencer{sink: sink}
	return ChunkSinkFunc(s.emit)
}

type sequencer struct {
	mu   sync.Mutex
	next uint64
	sink ChunkSink
}

func (s *sequencer) emit(ctx context.Context, c Chunk) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	c.Seq = s.next
	return s.sink.Emit(ctx, c)
}

// StreamingProvider is a [Provider] that can also deliver its answer as a
// stream of chunks, for run and for streamed API calls. Register it in
// [Providers] like any provider; verbs that stream find it by type
// assertion.
//
// Stream makes the same model call as Complete and passes each chunk to
// emit as it arrives, with Seq left 0. It returns the same final
// [Completion] that Complete would: its Text is the concatenation of the
// text chunks. Provider failures are returned as by Complete; an error
// chunk the model reports in band is emitted, and what it means is the
// caller's decision. When emit returns an error, Stream stops reading and
// returns an error wrapping it. emit is called from one goroutine at a time.
type StreamingProvider interface {
	Provider
	Stream(ctx context.Context, call Call, emit func(Chunk) error) (*Completion, error)
}
