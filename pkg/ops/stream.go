package ops

import (
	"context"
	"fmt"
	"github.com/lionbus/lionbus/pkg/ops/internal/toolschema"
	"github.com/lionbus/lionbus/pkg/ops/prompt"
)

// streamRequest is the request whose chunk stream x's chunks go to: req,
// or the caller's request for a middle.
func (x *exchange) streamRequest(req Request) Request {
	if x.streamID != "" && x.streamID != req.ID {
		return Request{ID: x.streamID, Verb: req.Verb, BranchID: req.BranchID, TraceParent: req.TraceParent, Attempt: req.Attempt}
	}
	return req
}

type emitterKey struct{}

// withChunkEmitter returns ctx carrying emit, the chunk emitter of the
// model call made under it (see chunkEmitter).
func withChunkEmitter(ctx context.Context, emit func(Chunk) error) context.Context {
	return context.WithValue(ctx, emitterKey{}, emit)
}

// chunkEmitter returns the chunk emitter ctx carries, nil for none: a
// model call with one streams when its provider can.
func chunkEmitter(ctx context.Context) func(Chunk) error {
	f, _ := ctx.Value(emitterKey{}).(func(Chunk) error)
	return f
}

// stream is the model call of an exchange with "stream": true:
// the provider streams (when it can) into the request's chunk stream,
// numbered from 1, and the completion is the same as without streaming.
// Without a chunk outlet the call is an ordinary one.
func (x *exchange) stream(ctx context.Context, req Request, msgs Prompt) (*Completion, error) {
	e := x.e
	if e.chunks == nil {
		return e.complete(ctx, req, x.branch, x.chat, msgs, prompt.InstructionText(x.ins.Content), x.calls, toolschema.Native(x.data.tools)...)
	}
	cs, err := e.openChunks(ctx, x.streamRequest(req), "")
	if err != nil {
		return nil, err
	}
	out := Sequence(cs)
	emit := func(c Chunk) error { return out.Emit(ctx, c) }
	comp, err := e.complete(withChunkEmitter(ctx, emit), req, x.branch, x.chat, msgs, prompt.InstructionText(x.ins.Content), x.calls, toolschema.Native(x.data.tools)...)
	if cerr := closeChunks(ctx, cs, ""); cerr != nil && err == nil {
		return nil, cerr
	}
	return comp, err
}

// openChunks opens req's chunk stream; a failure is a temporary
// CodeUnavailable error, its message led by what (the verb) when given.
func (e *Engine) openChunks(ctx context.Context, req Request, what string) (ChunkStream, error) {
	cs, err := e.chunks.OpenChunks(ctx, req)
	if err != nil {
		return nil, &Error{Code: CodeUnavailable, Temporary: true, Message: lead(what) + fmt.Sprintf("open the chunk stream: %v", err), Err: err}
	}
	return cs, nil
}

// closeChunks closes cs, waiting for its chunks to be stored for at most
// commitTimeout, even when ctx has ended; a failure is a temporary
// CodeUnavailable error, as in openChunks.
func closeChunks(ctx context.Context, cs ChunkStream, what string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	if err := cs.Close(cctx); err != nil {
		return &Error{Code: CodeUnavailable, Temporary: true, Message: lead(what) + fmt.Sprintf("chunks could not be stored: %v", err), Err: err}
	}
	return nil
}

// lead is what, followed by ": ", or "" for none.
func lead(what string) string {
	if what == "" {
		return ""
	}
	return what + ": "
}
