package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/clirun"
	"github.com/lionbus/lionbus/pkg/ops/internal/outcome"
	"github.com/lionbus/lionbus/pkg/ops/internal/transcript"
	"github.com/lionbus/lionbus/pkg/ops/prompt"
	"github.com/lionbus/lionbus/pkg/wire"
)

// ChunkStream is the chunk sink of one request: Emit forwards a chunk
// (numbered already), Close waits until every emitted chunk is delivered
// (stored, for the bus) and releases the stream. Close is called once,
// after the last Emit, also when the request fails.
type ChunkStream interface {
	ChunkSink
	Close(ctx context.Context) error
}

// ChunkOutlet opens the chunk stream of a request that streams: run, and
// communicate or operate with "stream": true. The engine numbers the
// chunks (see [Sequence]) before they reach the stream.
type ChunkOutlet interface {
	OpenChunks(ctx context.Context, req Request) (ChunkStream, error)
}

// RunLog keeps what run's stream_persist asks for: a
// snapshot of the branch at the start and at the end of the run, and a
// live log of its chunks while it goes. Remove deletes the live log; run
// calls it after the final snapshot, so a run that never reached its end
// (a worker crash) leaves its log to inspect.
//
// Every log is kept in a directory: dir is the request's
// stream_persist_dir, else the engine's Config.RunLogDir, always a valid
// run log directory ([ValidRunLogDir]) when the engine calls.
type RunLog interface {
	// Snapshot stores b as the snapshot of the run req (final: its last).
	Snapshot(ctx context.Context, dir string, req Request, b *history.Branch, final bool) error
	// Open opens the live chunk log of req.
	Open(ctx context.Context, dir string, req Request) (ChunkStream, error)
	// Remove deletes the live chunk log of req.
	Remove(ctx context.Context, dir string, req Request) error
	// Location says where the log and the snapshots of req in dir are
	// kept, for the run's result.
	Location(dir string, req Request) RunLogLocation
}

// The run log directory: where a run with stream_persist
// keeps its log is one name, a subject token on the bus. The worker has a
// default (Config.RunLogDir); a request may name another
// (stream_persist_dir).
const (
	// DefaultRunLogDir is the directory of an engine configured with none.
	DefaultRunLogDir = clirun.DefaultLogDir
	// MaxRunLogDirLength bounds a run log directory.
	MaxRunLogDirLength = clirun.MaxLogDirLength
	// RunLogDirRule says the rule in words, for error messages.
	RunLogDirRule = clirun.LogDirRule
)

// ErrInvalidRunLogDir is wrapped by the errors about a run log directory
// that breaks the rule ([ValidRunLogDir]): a request's stream_persist_dir
// (an *[Error] with CodeInvalidRequest) or Config.RunLogDir (NewEngine's
// error).
var ErrInvalidRunLogDir = clirun.ErrInvalidLogDir

// ValidRunLogDir reports whether s is a usable run log directory: 1 to
// MaxRunLogDirLength characters of [A-Za-z0-9_-], a single subject token.
func ValidRunLogDir(s string) bool { return clirun.ValidLogDir(s) }

// RunLogLocation says where a run with stream_persist kept its log
// ([wire.RunLogLocation]).
type RunLogLocation = wire.RunLogLocation

// ErrCanceledByClient is the cause of the context of a request that its
// client cancelled. run ends cleanly on it, recording the partial output
// (a run end, not a failure); the transports cancel with it.
var ErrCanceledByClient = errors.New("request cancelled by the client")

// Keys of a run's result value and of its messages' metadata.
const (
	MetaThinking     = transcript.MetaThinking
	MetaSessionID    = transcript.MetaSessionID
	metaResultSource = "run"
)

// runData is the data of a run request ([wire.RunRequest]): the exchange
// data of communicate, whose turn fields are run's and whose others a run
// checks as communicate does, and the run's parameters (stream_persist).
type runData struct {
	chatData
	wire.RunParams
}

// RunValue is the value of a run result ([wire.RunValue]).
type RunValue = wire.RunValue

// isCLI reports whether model is a CLI model, and returns its provider.
func (e *Engine) cliProvider(model history.ModelRef) (CLIProvider, error) {
	prov, err := e.providers.Lookup(model.Provider)
	if err != nil {
		return nil, Errorf(CodeInvalidRequest, "model %s: %v", model.String(), err)
	}
	cp, ok := prov.(CLIProvider)
	if !ok || !cp.IsCLI(model) {
		return nil, Errorf(CodeInvalidRequest,
			"run needs a CLI model (a model reference cli:NAME naming a CLI configured in the worker), not %s; use communicate for API models", model.String())
	}
	return cp, nil
}

// isCLIModel reports whether m names a CLI model.
func (e *Engine) isCLIModel(m *history.ModelRef) bool {
	if m == nil {
		return false
	}
	_, err := e.cliProvider(*m)
	return err == nil
}

// runVerb is run (ADR-0021 D3): the instruction and everything the CLI
// model streams, recorded; its own lifecycle (D4).
func (e *Engine) runVerb(ctx context.Context, req Request) (*Result, error) {
	var d runData
	if err := decodeData(req.Data, &d); err != nil {
		return nil, err
	}
	// The directory is checked before anything is stored.
	logDir, err := clirun.LogDir("data.stream_persist_dir", d.StreamPersist, d.StreamPersistDir, e.runLogDefault)
	if err != nil {
		return nil, err
	}
	x, err := e.prepareData(ctx, req, &d.chatData)
	if err != nil {
		return nil, err
	}
	prov, err := e.cliProvider(x.chat)
	if err != nil {
		return nil, err
	}
	if seq, ok := x.branch.Commits.Seq(req.ID); ok {
		return e.replayRunCommitted(ctx, req, x.branch, seq, replayRun)
	}
	return e.runLifecycle(ctx, req, x.branch.ID, func() (*Result, error) {
		res, _, err := (&cliRun{e: e, req: req, x: x, prov: prov, logDir: logDir}).stream(ctx)
		return res, err
	})
}

// cliRun is one run of a CLI model on an exchange: run's, or
// run_and_collect's. logDir is the run log directory of a run with
// stream_persist, "" for none.
type cliRun struct {
	e      *Engine
	req    Request
	x      *exchange
	prov   CLIProvider
	logDir string
	// insStored is set by call when an earlier attempt stored the
	// instruction (a redelivery).
	insStored bool
}

// stream runs the stream of a run on x: the instruction first, stored
// in its own event (see storeInstruction) and emitted as chunk 1, then the
// chunks; on every exit the provider's stream is over (the provider stops
// and reaps its process) before the outcome is recorded, in the final
// event under req.ID. logDir is the run log directory of a run with
// stream_persist, "" for none. It returns the result and the state (for
// run_and_collect).
func (r *cliRun) stream(ctx context.Context) (*Result, *transcript.Fold, error) {
	e, x, prov := r.e, r.x, r.prov
	t0 := e.clock()
	call, err := r.call(ctx)
	if err != nil {
		return nil, nil, err
	}
	// A redelivered run whose stored chunks name the CLI's session
	// continues it (see ChunkHistory).
	cs := &clirun.Stream{Provider: prov, Call: call, Fold: r.newFold(), BranchID: x.branch.ID, Instruction: x.ins, Observe: e.observeCall}
	if rp, ok := r.resumePoint(ctx, r.insStored); ok {
		cs.Fold, cs.Resume = rp.Fold, &rp
		if !rp.Ended {
			e.log.Info().Str("request_id", r.req.ID).Str("session", rp.Session).Uint64("chunks", rp.Fold.Chunks).Msg("run: the redelivered run resumes its CLI session")
		}
	}
	sinks, closeSinks, err := r.openSinks(ctx)
	if err != nil {
		return nil, nil, err
	}
	cs.Sink = Sequence(sinks).Emit
	end := cs.Run(ctx)
	x.calls = 1

	// Whatever happens next is recorded even when the request's context
	// has ended (a cancel): the commit gets its own bound.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	canceled := errors.Is(context.Cause(ctx), ErrCanceledByClient)
	operr, fatal := cs.Outcome(ctx, end, canceled)
	if fatal != nil {
		closeSinks(cctx)
		return nil, nil, asError(ctx, fatal)
	}
	cs.Finish(end)
	if err := closeSinks(cctx); err != nil && operr == nil && !canceled {
		return nil, nil, &Error{Code: CodeUnavailable, Temporary: true, Message: fmt.Sprintf("run: chunks could not be stored: %v", err), Err: err}
	}
	res, err := r.record(cctx, cs, operr, canceled, t0)
	return res, cs.Fold, err
}

// newFold returns the fold of a run's chunks: stamped by the engine's
// clock, its reconnects logged, the provider's result totals summed.
func (r *cliRun) newFold() *transcript.Fold {
	e := r.e
	st := &transcript.Fold{Model: r.x.chat, Clock: e.clock, OnReconnect: func(notice string) {
		e.log.Info().Str("notice", Truncate(notice, 200)).Msg("run: the model reconnects")
	}}
	if t, ok := r.prov.(ResultTotals); ok {
		st.Totals = t.TotalKeys()
	}
	return st
}

// call builds the run's model call: the prompt of the history (after the
// resumed session's part, if any) and the instruction, which it stores in
// its own event first (see storeInstruction).
func (r *cliRun) call(ctx context.Context) (Call, error) {
	e, req, x := r.e, r.req, r.x
	past := x.branch.Messages
	if x.data.ClearMessages {
		past = nil
	}
	resume := x.branch.Settings.ProviderSession
	if resume != "" {
		// A resumed session holds what it recorded: the prompt carries
		// only what came after it.
		past = transcript.AfterSession(past, resume)
	}
	// A first attempt builds (and bounds) its prompt before it stores the
	// instruction, so that a refused prompt records nothing; a redelivery
	// reads its stored instruction first and leaves it out of the history.
	_, stored := x.branch.Commits.Seq(stageID(req.ID, stageInstruction))
	r.insStored = stored
	var msgs Prompt
	var err error
	if !stored {
		x.ins = history.NewInstructionMessage(x.data.spec(), e.clock())
		if msgs, err = x.prompt(past); err != nil {
			return Call{}, err
		}
	}
	if err := r.storeInstruction(ctx); err != nil {
		return Call{}, err
	}
	if stored {
		if msgs, err = x.prompt(transcript.WithoutMessage(past, x.ins.ID)); err != nil {
			return Call{}, err
		}
	}
	attempt := max(req.Attempt, 1)
	call := Call{
		Model: x.chat, Messages: msgs, Instruction: prompt.InstructionText(x.ins.Content),
		BranchID: x.branch.ID, RequestID: req.ID, Index: x.branch.ModelCalls, Attempt: attempt,
		Resume: resume,
	}
	return call, nil
}

// record commits what the run recorded, with its result (or operr), in
// the final event under the request id, and finishes the run log.
func (r *cliRun) record(cctx context.Context, cs *clirun.Stream, operr *Error, canceled bool, t0 time.Time) (*Result, error) {
	e, req, x, logDir, st := r.e, r.req, r.x, r.logDir, cs.Fold
	v, merr := marshalValue(cs.Value(canceled && operr == nil))
	if merr != nil {
		return nil, merr
	}
	res := &Result{Value: v, BranchID: x.branch.ID, Usage: st.Usage, DurationMS: e.clock().Sub(t0).Milliseconds()}
	if logDir != "" && e.runLog != nil {
		// Where the log went, under the id it was opened with.
		loc := e.runLog.Location(logDir, x.streamRequest(req))
		if err := res.SetExtra(wire.RunExtra{RunLog: &loc}); err != nil {
			return nil, Errorf(CodeInternal, "run: %v", err)
		}
	}
	// The instruction and the clearing are in the instruction's event.
	ev := history.Event{Messages: st.Msgs, ModelCalls: x.calls}
	if st.Session != "" && st.Session != x.branch.Settings.ProviderSession {
		ev.Settings = &history.Settings{ProviderSession: st.Session}
	}
	out2, cerr := e.commitEvent(cctx, req, x.branch.ID, ev, res, operr)
	if logDir != "" {
		// Under the id the log was opened with (the caller's, for a
		// middle's run).
		r.finishLog(cctx)
	}
	return out2, cerr
}

// stageInstruction names the stage event of a run's instruction: its id
// is stageID(request id, stageInstruction).
const stageInstruction = "instruction"

// storeInstruction sets x.ins and records it before the stream starts, as its
// own event under the stage id of req's instruction,
// with the clearing x asks for, then emits its message.added. The rest of
// the run is recorded in the final event under req.ID, so history shows
// the instruction first even when the worker dies mid-run; the
// redelivered run finds the instruction committed, takes it as recorded
// (emitting its message.added again, as a replay does) and streams again.
// An instruction event without a final event is an attempt that did not
// end (yet).
func (r *cliRun) storeInstruction(ctx context.Context) error {
	e, req, x := r.e, r.req, r.x
	id := stageID(req.ID, stageInstruction)
	signal := func() {
		e.emit(ctx, Signal{Type: SignalMessageAdded, Verb: req.Verb, BranchID: x.branch.ID, RequestID: req.ID, Message: &x.ins})
	}
	if seq, ok := x.branch.Commits.Seq(id); ok {
		ins, err := e.committedInstruction(ctx, x.branch.ID, id, seq)
		if err != nil {
			return err
		}
		x.ins = ins
		signal()
		return nil
	}
	if x.ins.ID == "" {
		x.ins = history.NewInstructionMessage(x.data.spec(), e.clock())
	}
	stored, err := outcome.Encode(&Result{Value: json.RawMessage("null"), BranchID: x.branch.ID}, nil)
	if err != nil {
		return err
	}
	// A client's cancel before the stream still ends the run cleanly, with
	// the instruction recorded: storing it ignores that cancel.
	sctx := ctx
	if errors.Is(context.Cause(ctx), ErrCanceledByClient) {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
		defer cancel()
	}
	ev := history.Event{
		Type: history.EventMessages, RequestID: id, Time: e.clock(), BranchID: x.branch.ID,
		Messages: []history.Message{x.ins}, Clear: x.data.ClearMessages, Result: stored,
	}
	seq, dup, err := e.appendOnce(sctx, x.branch.ID, ev)
	if err != nil {
		return err
	}
	if dup {
		// A concurrent duplicate stored it first: its instruction is the one.
		if x.ins, err = e.committedInstruction(ctx, x.branch.ID, id, seq); err != nil {
			return err
		}
	}
	signal()
	return nil
}

// committedInstruction returns the instruction that the stage event id
// recorded at seq.
func (e *Engine) committedInstruction(ctx context.Context, branchID, id string, seq uint64) (history.Message, error) {
	ev, err := e.committedEvent(ctx, branchID, id, seq)
	if err != nil {
		return history.Message{}, err
	}
	for _, m := range ev.Messages {
		if m.Kind == history.KindInstruction {
			return m, nil
		}
	}
	return history.Message{}, Errorf(CodeInternal, "the instruction event %d of request %q on branch %q holds no instruction", seq, id, branchID)
}

// replayRunCommitted answers a run (or run_and_collect) whose final event
// is committed at seq from history: the instruction's message.added comes
// first, from its stage event, then the final event's, as when it ran.
func (e *Engine) replayRunCommitted(ctx context.Context, req Request, b *history.Branch, seq uint64, sig replaySignals) (*Result, error) {
	var before []history.Message
	if iseq, ok := b.Commits.Seq(stageID(req.ID, stageInstruction)); ok && iseq < seq {
		ins, err := e.committedInstruction(ctx, b.ID, stageID(req.ID, stageInstruction), iseq)
		if err != nil {
			return nil, err
		}
		before = []history.Message{ins}
	}
	return e.replayCommittedAfter(ctx, req, before, seq, sig)
}

// commitTimeout bounds recording a run after its stream ended.
const commitTimeout = 30 * time.Second

// openSinks opens the request's chunk stream and, with a run log
// directory, the run log in it (after the first snapshot), and the
// function that closes them (once; later calls do nothing).
func (r *cliRun) openSinks(ctx context.Context) (ChunkSink, func(context.Context) error, error) {
	e, req, b, logDir := r.e, r.x.streamRequest(r.req), r.x.branch, r.logDir
	var streams []clirun.ChunkStream
	if e.chunks != nil {
		cs, err := e.openChunks(ctx, req, "run")
		if err != nil {
			return nil, nil, err
		}
		streams = append(streams, cs)
	}
	if logDir != "" && e.runLog != nil {
		if err := e.runLog.Snapshot(ctx, logDir, req, b, false); err != nil {
			// Persistence serves inspection; it does not stop the run.
			e.log.Warn().Err(err).Str("request_id", req.ID).Str("runlog_dir", logDir).Msg("run: stream_persist: the first snapshot failed")
		}
		lg, err := e.runLog.Open(ctx, logDir, req)
		if err != nil {
			for _, s := range streams {
				_ = closeChunks(ctx, s, "") // nothing was emitted into it
			}
			return nil, nil, &Error{Code: CodeUnavailable, Temporary: true, Message: fmt.Sprintf("run: open the run log: %v", err), Err: err}
		}
		streams = append(streams, lg)
	}
	emit, closeAll := clirun.Tee(streams)
	return chunkSinkFunc(emit), closeAll, nil
}

// finishLog writes the final snapshot of a persisted run, then removes
// its live log, in dir. Failures are logged: they never change the run's
// outcome.
func (r *cliRun) finishLog(ctx context.Context) {
	e, dir, req, branchID := r.e, r.logDir, r.x.streamRequest(r.req), r.x.branch.ID
	if e.runLog == nil {
		return
	}
	b, err := e.load(ctx, branchID)
	if err == nil {
		err = e.runLog.Snapshot(ctx, dir, req, b, true)
	}
	if err == nil {
		err = e.runLog.Remove(ctx, dir, req)
	}
	if err != nil {
		e.log.Warn().Err(err).Str("request_id", req.ID).Str("runlog_dir", dir).Msg("run: stream_persist cleanup failed; the run log is left")
	}
}
