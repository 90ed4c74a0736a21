package ops

import (
	"context"
	"sync"

	"github.com/lionbus/lionbus/pkg/wire"
)

// ChunkKind is the kind of a streamed [Chunk] ([wire.ChunkKind]).
type ChunkKind = wire.ChunkKind

// Chunk kinds (see package wire).
const (
	ChunkSystem     = wire.ChunkSystem
	ChunkThinking   = wire.ChunkThinking
	ChunkText       = wire.ChunkText
	ChunkToolUse    = wire.ChunkToolUse
	ChunkToolResult = wire.ChunkToolResult
	ChunkResult     = wire.ChunkResult
	ChunkError      = wire.ChunkError
	ChunkRound      = wire.ChunkRound
)

// Chunk is one piece of a streamed model answer ([wire.Chunk]).
type Chunk = wire.Chunk

// ChunkSink receives the chunks of a streamed request, in order. Emit must
// not keep c's maps beyond the call unless it owns them; an error stops the
// stream (the run fails with it). Implementations need not be safe for
// concurrent use unless they say so: one request's chunks are emitted from
// one goroutine.
type ChunkSink interface {
	Emit(ctx context.Context, c Chunk) error
}

// chunkSinkFunc adapts a function to a [ChunkSink].
type chunkSinkFunc func(ctx context.Context, c Chunk) error

// Emit calls f.
func (f chunkSinkFunc) Emit(ctx context.Context, c Chunk) error { return f(ctx, c) }

// Sequence returns a sink that numbers the chunks it forwards to sink: the
// first gets Seq 1, the next 2, and so on, whatever Seq they carried. It
// is safe for concurrent use and forwards one chunk at a time, so sink
// receives them in Seq order. A chunk sink refused keeps its number (the
// stream fails anyway).
func Sequence(sink ChunkSink) ChunkSink {
	s := &sequencer{sink: sink}
	return chunkSinkFunc(s.emit)
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
