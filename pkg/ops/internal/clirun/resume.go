package clirun

import (
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/transcript"
	"github.com/lionbus/lionbus/pkg/ops/prompt"
	"github.com/lionbus/lionbus/pkg/ops/provider"
	"github.com/lionbus/lionbus/pkg/wire"
)

// ResumePrompt is what a redelivered run sends the CLI's session it
// resumes, in place of its instruction, which the session holds already.
const ResumePrompt = "Your previous turn in this session was interrupted before it finished. " +
	"Continue it from where it stopped, without repeating what is already done."

// MetaResumed is the metadata key of the system chunk a resumed run emits
// first: the session it resumes.
const MetaResumed = "resumed_session"

// Point is what the earlier attempts of a redelivered run streamed,
// folded into Fold: the session to resume, and whether the stream had
// ended already (Ended; EndErr, the error its last chunk ended it with).
type Point struct {
	Fold    *transcript.Fold
	Ended   bool
	EndErr  error
	Session string
}

// Resume folds past, the chunks a redelivered run's earlier attempts
// stored, into probe: ok is false when the run starts again instead (no
// stored chunk naming a session, and a stream that had not ended).
// The markers of earlier resumes are counted, not folded.
func Resume(past []wire.Chunk, probe *transcript.Fold) (p Point, ok bool) {
	p.Fold = probe
	for _, c := range past {
		if c.Kind == wire.ChunkSystem {
			if _, resumed := c.Metadata[MetaResumed]; resumed {
				probe.Chunks++ // a marker of an earlier resume: nothing to fold
				continue
			}
		}
		if err := probe.Take(c); err != nil {
			p.Ended, p.EndErr = true, err
			break
		}
		if c.Kind == wire.ChunkResult {
			p.Ended = true
		}
	}
	p.Session = probe.Session
	if !p.Ended && p.Session == "" {
		return Point{}, false // nothing to resume: start again
	}
	// What the dead attempt said is a response of its own: the resumed
	// session answers in a new one.
	probe.Flush()
	return p, true
}

// ResumeCall turns call into the call that continues session: the
// session's flag, the system message kept, ResumePrompt as the prompt.
func ResumeCall(call provider.Call, session string) provider.Call {
	var msgs []prompt.Message
	if call.Messages.Len() > 0 && call.Messages.At(0).Role == history.RoleSystem {
		msgs = append(msgs, call.Messages.At(0))
	}
	call.Messages = prompt.Of(append(msgs, prompt.Message{Role: history.RoleUser, Content: ResumePrompt})...)
	call.Instruction = ResumePrompt
	call.Resume = session
	return call
}
