package ops

import (
	"context"
	"errors"

	"github.com/lionbus/lionbus/pkg/ops/internal/clirun"
)

// ChunkHistory is implemented by a [ChunkOutlet] that can read back what
// the earlier attempts of a request streamed. A redelivered run (its
// worker died mid-stream) reads its stored chunks and, when they name the
// CLI's session, continues that session instead of starting its
// instruction again: the CLI is resumed with [ResumePrompt], the stored
// chunks count as streamed (they are folded, not emitted again) and the
// new chunks follow them. A stored stream that had ended (the CLI's result
// arrived before the worker died) is recorded as it is, without running
// the CLI at all.
type ChunkHistory interface {
	// StoredChunks returns the chunks stored for req by its earlier
	// attempts, in seq order: at most max of them, else an error wrapping
	// ErrTooManyChunks.
	StoredChunks(ctx context.Context, req Request, max int) ([]Chunk, error)
}

// MaxResumeChunks bounds the chunks a redelivered run reads back to
// resume its CLI's session. A run whose earlier attempts stored more
// starts its instruction again, as a run without a session does.
const MaxResumeChunks = 10_000

// ErrTooManyChunks is wrapped by a [ChunkHistory]'s error for a request
// with more stored chunks than asked for.
var ErrTooManyChunks = errors.New("ops: more stored chunks than the bound")

// ResumePrompt is what a redelivered run sends the CLI's session it
// resumes, in place of its instruction, which the session holds already.
const ResumePrompt = clirun.ResumePrompt

// MetaResumed is the metadata key of the system chunk a resumed run emits
// first: the session it resumes.
const MetaResumed = clirun.MetaResumed

// resumePoint reads back the chunks a redelivered run's earlier attempts
// stored and folds them ([clirun.Resume]): ok is false when the run
// starts again instead (a first attempt, an outlet that cannot read back,
// no stored chunk naming a session, too many chunks, a read that fails).
func (r *cliRun) resumePoint(ctx context.Context, instructionStored bool) (clirun.Point, bool) {
	e, req := r.e, r.x.streamRequest(r.req)
	ch, ok := e.chunks.(ChunkHistory)
	if !ok || !instructionStored || r.req.Attempt < 2 {
		return clirun.Point{}, false
	}
	past, err := ch.StoredChunks(ctx, req, MaxResumeChunks)
	if err != nil {
		e.log.Info().Err(err).Str("request_id", req.ID).Msg("run: the redelivered run starts again: its stored chunks could not be read")
		return clirun.Point{}, false
	}
	return clirun.Resume(past, r.newFold())
}
