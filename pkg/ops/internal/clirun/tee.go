package clirun

import (
	"context"
	"errors"

	"github.com/lionbus/lionbus/pkg/wire"
)

// ChunkStream is a chunk sink closed once, after its last chunk (the
// engine's chunk streams and run logs are).
type ChunkStream interface {
	Emit(ctx context.Context, c wire.Chunk) error
	Close(ctx context.Context) error
}

// Tee returns emit, which delivers a chunk to every stream in order (the
// first refusal stops it), and closeAll, which closes them all, once
// (later calls do nothing), joining their errors.
func Tee(streams []ChunkStream) (emit func(context.Context, wire.Chunk) error, closeAll func(context.Context) error) {
	emit = func(ctx context.Context, c wire.Chunk) error {
		for _, s := range streams {
			if err := s.Emit(ctx, c); err != nil {
				return err
			}
		}
		return nil
	}
	closed := false
	closeAll = func(ctx context.Context) error {
		if closed {
			return nil
		}
		closed = true
		var errs []error
		for _, s := range streams {
			if err := s.Close(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	return emit, closeAll
}
