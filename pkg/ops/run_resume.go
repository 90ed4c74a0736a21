package ops

import (
	"context"
	"errors"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/transcript"
	"github.com/lionbus/lionbus/pkg/ops/prompt"
	"github.com/lionbus/lionbus/pkg/wire"
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
const ResumePrompt = "Your previous turn in this session was interrupted before it finished. " +
	"Continue it from where it stopped, without repeating what is already done."

// MetaResumed is the metadata key of the system chunk a resumed run emits
// first: the session it resumes.
const MetaResumed = "resumed_session"

// resumePoint is what the earlier attempts of a redelivered run streamed,
// folded into fold: the session to resume, and whether the stream had
// ended already (ended; endErr, the error its last chunk ended it with).
type resumePoint struct {
	fold    *transcript.Fold
	ended   bool
	endErr  error
	session string
}

// resumePoint reads back the chunks a redelivered run's earlier attempts
// stored and folds them into a fold made by newFold: ok is false when the
// run starts again instead (a first attempt, an outlet that cannot read
// back, no stored chunk naming a session, too many chunks, a read that
// fails).
func (r *cliRun) resumePoint(ctx context.Context, newFold func() *transcript.Fold, instructionStored bool) (resumePoint, bool) {
	e, req := r.e, r.x.streamRequest(r.req)
	ch, ok := e.chunks.(ChunkHistory)
	if !ok || !instructionStored || r.req.Attempt < 2 {
		return resumePoint{}, false
	}
	past, err := ch.StoredChunks(ctx, req, MaxResumeChunks)
	if err != nil {
		e.log.Info().Err(err).Str("request_id", req.ID).Msg("run: the redelivered run starts again: its stored chunks could not be read")
		return resumePoint{}, false
	}
	probe := newFold()
	p := resumePoint{fold: probe}
	for _, c := range past {
		if c.Kind == wire.ChunkSystem {
			if _, resumed := c.Metadata[MetaResumed]; resumed {
				probe.Chunks++ // a marker of an earlier resume: nothing to fold
				continue
			}
		}
		if err := probe.Take(c); err != nil {
			p.ended, p.endErr = true, err
			break
		}
		if c.Kind == wire.ChunkResult {
			p.ended = true
		}
	}
	p.session = probe.Session
	if !p.ended && p.session == "" {
		return resumePoint{}, false // nothing to resume: start again
	}
	// What the dead attempt said is a response of its own: the resumed
	// session answers in a new one.
	probe.Flush()
	return p, true
}

// resumeCall turns call into the call that continues session: the
// session's flag, the system message kept, ResumePrompt as the prompt.
func resumeCall(call Call, session string) Call {
	var msgs []prompt.Message
	if call.Messages.Len() > 0 && call.Messages.At(0).Role == history.RoleSystem {
		msgs = append(msgs, call.Messages.At(0))
	}
	call.Messages = prompt.Of(append(msgs, prompt.Message{Role: history.RoleUser, Content: ResumePrompt})...)
	call.Instruction = ResumePrompt
	call.Resume = session
	return call
}
