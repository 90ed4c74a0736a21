package opstest

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/lionbus/lionbus/pkg/ops"
)

// ErrChunkLimit is returned by [ChunkBuffer.Emit] when the buffer holds
// Limit chunks already.
var ErrChunkLimit = errors.New("ops: chunk buffer is full")

// ChunkBuffer is an in-memory [ops.ChunkSink] that keeps every chunk it
// receives, for tests and for collecting a stream. It is safe for concurrent
// use; the zero value is an empty, unbounded buffer.
type ChunkBuffer struct {
	// Limit bounds the number of chunks kept; 0 means no bound. Emit beyond
	// it fails with ErrChunkLimit.
	Limit int

	mu     sync.Mutex
	chunks []ops.Chunk
}

// Emit appends c. It fails with ctx's error when ctx has ended, and with
// ErrChunkLimit when the buffer is full.
func (b *ChunkBuffer) Emit(ctx context.Context, c ops.Chunk) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Limit > 0 && len(b.chunks) >= b.Limit {
		return ErrChunkLimit
	}
	b.chunks = append(b.chunks, c)
	return nil
}

// Chunks returns a copy of the chunks received so far, in order.
func (b *ChunkBuffer) Chunks() []ops.Chunk {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]ops.Chunk(nil), b.chunks...)
}

// Len returns the number of chunks received.
func (b *ChunkBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.chunks)
}

// Text returns the Content of the text chunks, concatenated.
func (b *ChunkBuffer) Text() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var sb strings.Builder
	for _, c := range b.chunks {
		if c.Kind == ops.ChunkText {
			sb.WriteString(c.Content)
		}
	}
	return sb.String()
}
