package wire

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
	// metadata.benign_eos marks one that only ends the stream,
	// metadata.reconnect_notice one that is a notice (see [Chunk.End]).
	ChunkError ChunkKind = "error"
	// ChunkRound is a completed round of a streamed react: Content is the
	// round's analysis text (the answer, for the final round; compact
	// JSON unless it is text), metadata.round its index from 0,
	// metadata.phase "analysis" or "answer", metadata.value its value.
	ChunkRound ChunkKind = "round"
)

// Metadata keys of the error chunks that do not fail their stream.
const (
	// MetaBenignEOS (true) marks an error chunk that only ends the stream.
	MetaBenignEOS = "benign_eos"
	// MetaReconnectNotice (true) marks an error chunk that is a notice:
	// the model's connection is restored and the stream goes on.
	MetaReconnectNotice = "reconnect_notice"
)

// StreamEnd is what an error chunk means for its stream ([Chunk.End]).
type StreamEnd int

// What an error chunk means for its stream.
const (
	// EndNone: the chunk is not an error chunk.
	EndNone StreamEnd = iota
	// EndFailure: the model reported a failure; the stream fails with it.
	EndFailure
	// EndBenign: the stream ends normally (metadata.benign_eos).
	EndBenign
	// EndNotice: a notice that ends nothing (metadata.reconnect_notice).
	EndNotice
)

// BenignEnd returns the error chunk that ends a stream normally.
func BenignEnd() Chunk {
	return Chunk{Kind: ChunkError, Metadata: map[string]any{MetaBenignEOS: true}}
}

// ReconnectNotice returns the error chunk of a reconnect notice, text.
func ReconnectNotice(text string) Chunk {
	return Chunk{Kind: ChunkError, Content: text, Metadata: map[string]any{MetaReconnectNotice: true}}
}

// End returns what c means for its stream: EndNone unless c is an error
// chunk, else EndBenign or EndNotice as its metadata marks it, else
// EndFailure.
func (c Chunk) End() StreamEnd {
	if c.Kind != ChunkError {
		return EndNone
	}
	if b, _ := c.Metadata[MetaBenignEOS].(bool); b {
		return EndBenign
	}
	if b, _ := c.Metadata[MetaReconnectNotice].(bool); b {
		return EndNotice
	}
	return EndFailure
}

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
	// provider leaves it 0; whoever forwards the chunks numbers them.
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
	// Read an error chunk's marks with [Chunk.End].
	Metadata map[string]any `json:"metadata,omitempty"`
}
