package clirun

import (
	"context"
	"errors"
	"time"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
	"github.com/lionbus/lionbus/pkg/ops/internal/transcript"
	"github.com/lionbus/lionbus/pkg/ops/provider"
	"github.com/lionbus/lionbus/pkg/wire"
)

// MetaInstruction is the metadata key of the system chunk a run emits
// first: the instruction it streams for.
const MetaInstruction = "instruction"

// ErrTimeout is the cause of a run's own deadline (the model's timeout
// option, see [Timeout]).
var ErrTimeout = errors.New("run() stream timeout exceeded")

// Timeout returns the positive "timeout" option of model, in seconds;
// anything else means none.
func Timeout(m history.ModelRef) (time.Duration, bool) {
	n, ok := jsonval.Number(m.Options["timeout"])
	if !ok || n <= 0 {
		return 0, false
	}
	return time.Duration(n * float64(time.Second)), true
}

// SinkError marks a chunk the sink refused: the chunks could not be
// delivered, and the run records nothing.
type SinkError struct{ Err error }

// Error returns the sink's error text.
func (e *SinkError) Error() string { return e.Err.Error() }

// Unwrap returns the sink's error.
func (e *SinkError) Unwrap() error { return e.Err }

// Stream is one stream of a CLI model on a branch: its first system
// chunk (the instruction, or the session a redelivered run resumes), then
// the model's chunks, each delivered to Sink and folded into Fold.
type Stream struct {
	// Provider streams the model.
	Provider provider.StreamingProvider
	// Call is the run's model call (ResumeCall makes the resumed one).
	Call provider.Call
	// Fold folds the chunks; with Resume, Resume.Fold.
	Fold *transcript.Fold
	// Resume is the resume point of a redelivered run; nil for a stream
	// that starts its instruction.
	Resume *Point
	// BranchID and Instruction are named by the first system chunk.
	BranchID    string
	Instruction history.Message
	// Sink delivers a chunk (numbered by the caller's sink).
	Sink func(ctx context.Context, c wire.Chunk) error
	// Observe makes the model call through do, telling whoever watches
	// model calls; nil calls do directly.
	Observe func(ctx context.Context, call provider.Call, do func(context.Context) (*provider.Completion, error)) (*provider.Completion, error)
}

// End is how a stream ended.
type End struct {
	// Completion is the provider's final answer, nil when it gave none.
	Completion *provider.Completion
	// Err is the error that ended the stream, nil for a clean end.
	Err error
	// TimedOut is set when the run's own timeout ended it.
	TimedOut bool
}

// Run streams: the first system chunk, then, unless a resumed stream had
// ended already, the model's chunks under the model's timeout option. A
// chunk after ctx ended stops the stream.
func (s *Stream) Run(ctx context.Context) End {
	emit := func(c wire.Chunk) error {
		if err := ctx.Err(); err != nil {
			return err // cancelled: the stream stops, the outcome says why
		}
		if err := s.Sink(ctx, c); err != nil {
			return &SinkError{err}
		}
		return s.Fold.Take(c)
	}
	call, rp := s.Call, s.Resume
	var err error
	switch {
	case rp != nil && rp.Ended:
		// The stored stream ended: the run is recorded as it is.
		err = rp.EndErr
	case rp != nil:
		// The instruction chunk is stored already; a system chunk says
		// the stream goes on in the resumed session.
		call = ResumeCall(call, rp.Session)
		err = emit(wire.Chunk{Kind: wire.ChunkSystem, Metadata: map[string]any{MetaResumed: rp.Session, "branch_id": s.BranchID}})
	default:
		// The instruction, stored already, is emitted first, before any
		// chunk is read: a system chunk carrying it.
		err = emit(wire.Chunk{Kind: wire.ChunkSystem, Metadata: map[string]any{MetaInstruction: s.Instruction, "branch_id": s.BranchID}})
	}
	sctx, stop := ctx, context.CancelFunc(func() {})
	if d, ok := Timeout(call.Model); ok {
		sctx, stop = context.WithTimeoutCause(ctx, d, ErrTimeout)
	}
	defer stop()
	var comp *provider.Completion
	if err == nil && (rp == nil || !rp.Ended) {
		do := func(ctx context.Context) (*provider.Completion, error) { return s.Provider.Stream(ctx, call, emit) }
		if s.Observe != nil {
			comp, err = s.Observe(sctx, call, do)
		} else {
			comp, err = do(sctx)
		}
	}
	return End{Completion: comp, Err: err, TimedOut: errors.Is(context.Cause(sctx), ErrTimeout)}
}

// Finish folds what is left after the end: the session the completion
// names when no chunk did, the last response, the session's mark on the
// last message.
func (s *Stream) Finish(end End) {
	if c := end.Completion; c != nil && c.SessionID != "" && s.Fold.Session == "" {
		s.Fold.Session = c.SessionID
	}
	s.Fold.Flush()
	s.Fold.MarkSession()
}

// Value is the value of the run's result: what Fold holds; canceled
// says the client cancelled the run and it ended cleanly.
func (s *Stream) Value(canceled bool) wire.RunValue {
	st := s.Fold
	val := wire.RunValue{Responses: st.Responses, SessionID: st.Session, Chunks: st.Chunks, Canceled: canceled}
	if val.Responses == nil {
		val.Responses = []string{}
	}
	if joined := transcript.JoinResponses(st.Responses); joined != "" {
		val.Text = &joined
	}
	return val
}
