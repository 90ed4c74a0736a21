package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
	"github.com/lionbus/lionbus/pkg/wire"
)

// toolConfig is the engine's tool wiring, from [Config].
type toolConfig struct {
	invoker Invoker
	auth    Authorizer // nil: no gate beyond the branch's tools
	limit   int        // concurrent calls per act request
}

// newToolConfig applies the defaults of the tool fields of cfg.
func newToolConfig(cfg Config) (toolConfig, error) {
	if cfg.MaxConcurrentTools < 0 {
		return toolConfig{}, fmt.Errorf("ops: Config.MaxConcurrentTools must not be negative, got %d", cfg.MaxConcurrentTools)
	}
	t := toolConfig{invoker: cfg.Tools, auth: cfg.Authorizer, limit: cfg.MaxConcurrentTools}
	if t.limit == 0 {
		t.limit = DefaultMaxConcurrentTools
	}
	if t.invoker == nil {
		t.invoker = InvokerFunc(func(_ context.Context, call ToolInvocation) (ToolOutcome, error) {
			return ToolOutcome{}, fmt.Errorf("%w %q (the worker has no tools)", ErrNoTool, call.Function)
		})
	}
	return t, nil
}

// actCall is one action request while act runs it.
type actCall struct {
	index   int
	req     wire.ActionRequest
	args    map[string]any  // req.Arguments, {} for none
	started bool            // authorized or denied; false when skipped
	request history.Message // the action_request message
	resp    *ActionResponse // nil when the call answered null
	respMsg history.Message // the action_response message, when resp is set
}

// actRun is the state of one act stage.
type actRun struct {
	e      *Engine
	req    Request
	branch *history.Branch
	p      actParams
	calls  []actCall
	cancel context.CancelFunc // stops the calls after an unsuppressed failure

	mu     sync.Mutex // serialises the hook signals and failed
	failed *actCall   // the first unsuppressed failure
}

// runActions runs the calls of p for req on b and returns them with their
// outcomes; it records nothing. Each call is authorized first, by the
// branch's tools then the engine's Authorizer; a denied call
// gets an error-valued response and no hook signal. An authorized call
// emits tool.pre, is invoked with its idempotency key and ctx's deadline,
// then emits tool.post or tool.error. With the concurrent
// strategy at most the engine's limit of calls run at once;
// with the sequential one they run in order. When errors are not
// suppressed, the first failure stops the calls not yet started and
// cancels those running.
func (e *Engine) runActions(ctx context.Context, req Request, b *history.Branch, p actParams) *actRun {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &actRun{e: e, req: req, branch: b, p: p, calls: make([]actCall, len(p.requests)), cancel: cancel}
	for i, ar := range p.requests {
		r.calls[i] = actCall{index: i, req: ar}
	}
	if p.sequential {
		for i := range r.calls {
			if runCtx.Err() != nil {
				break
			}
			r.call(runCtx, &r.calls[i])
		}
		return r
	}
	next := make(chan *actCall)
	var wg sync.WaitGroup
	for range min(e.tools.limit, len(r.calls)) {
		wg.Go(func() {
			for c := range next {
				r.call(runCtx, c)
			}
		})
	}
dispatch:
	for i := range r.calls {
		select {
		case next <- &r.calls[i]:
		case <-runCtx.Done():
			break dispatch
		}
	}
	close(next)
	wg.Wait()
	return r
}

// call runs one call: authorize, hooks, invoke.
func (r *actRun) call(ctx context.Context, c *actCall) {
	if ctx.Err() != nil {
		return // stopped by an earlier failure, or the request ended
	}
	e, args := r.e, c.req.Arguments
	if args == nil {
		args = map[string]any{}
	}
	c.args = args
	inv := ToolInvocation{
		Function: c.req.Function, Arguments: jsonval.CopyMap(args), IdempotencyKey: ToolCallKey(r.req.ID, c.index),
		RequestID: r.req.ID, BranchID: r.branch.ID,
	}
	if dl, ok := ctx.Deadline(); ok {
		inv.Deadline = dl
	}
	c.started = true
	c.request = history.NewActionRequest(inv.Function, args, e.clock())
	c.request.Metadata = map[string]any{MetaCallID: inv.IdempotencyKey}
	if c.req.ID != "" {
		c.request.Metadata[MetaActionID] = c.req.ID
	}
	log := e.log.With().Str("request_id", r.req.ID).Str("tool", inv.Function).Str("call_id", inv.IdempotencyKey).Logger()

	if d := e.authorize(ctx, r.branch, inv); !d.Allow {
		log.Info().Str("reason", d.Reason).Msg("tool call denied")
		r.finish(c, nil, actionError(ActionErrorDenied, "%s", d.Reason))
		return
	}
	argsJSON := jsonval.Compact(args)
	hook := &ToolSignal{Function: inv.Function, CallID: inv.IdempotencyKey, Index: c.index, ArgsSummary: Truncate(argsJSON, SummaryLength)}
	r.emit(ctx, Signal{Type: SignalToolPre, Tool: hook})

	t0 := e.clock()
	ictx := ctx
	var observed func(ToolOutcome, error)
	if e.observer != nil {
		ictx, observed = e.observer.ToolCall(ctx, inv)
	}
	out, err := e.tools.invoker.Invoke(ictx, inv)
	if observed != nil {
		observed(out, err)
	}
	done := *hook
	done.DurationMS = e.clock().Sub(t0).Milliseconds()
	var output any
	var terr *ToolError
	switch {
	case err != nil:
		terr = invokeError(err)
	case out.Error != nil:
		terr = &ToolError{Code: out.Error.Code, Message: out.Error.Message}
		if terr.Code == "" {
			terr.Code = ToolErrorFailed
		}
	default:
		// What is recorded and answered is plain JSON, whatever the
		// invoker returned.
		if err := roundTrip(out.Output, &output); err != nil {
			terr = actionError(ToolErrorFailed, "output is not JSON-encodable: %v", err)
		}
	}
	if terr != nil {
		r.emit(ctx, Signal{Type: SignalToolError, Tool: &done, Err: &Error{Code: Code(terr.Code), Message: terr.Message}})
		log.Warn().Str("code", terr.Code).Str("error", terr.Message).Bool("suppressed", r.p.suppress).
			Int64("duration_ms", done.DurationMS).Msg("tool call failed")
		r.finish(c, nil, terr)
		if !r.p.suppress {
			r.fail(c)
		}
		return
	}
	done.ResultSummary = Truncate(jsonval.Compact(output), SummaryLength)
	r.emit(ctx, Signal{Type: SignalToolPost, Tool: &done})
	log.Debug().Str("args", Truncate(argsJSON, DebugPreviewLength)).Int64("duration_ms", done.DurationMS).
		Bool("null_output", output == nil).Msg("tool call succeeded")
	r.finish(c, output, nil)
}

// finish sets the call's response: output, or the error value. A null
// output gives no response.
func (r *actRun) finish(c *actCall, output any, terr *ToolError) {
	if output == nil && terr == nil {
		return
	}
	errText := ""
	if terr != nil {
		errText = terr.Message
	}
	c.respMsg = history.NewActionResponse(&c.request, output, errText, r.e.clock())
	if terr != nil {
		c.respMsg.Metadata = map[string]any{MetaErrorCode: terr.Code}
	}
	c.resp = &ActionResponse{ID: c.req.ID, Function: c.req.Function, Arguments: jsonval.CopyMap(c.args), Output: output, Error: terr}
}

// fail records c as the run's failure, if it is the first, and stops the
// other calls.
func (r *actRun) fail(c *actCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed == nil {
		r.failed = c
		r.cancel()
	}
}

// emit sends a hook signal, one at a time: calls run concurrently, and a
// Signals implementation need not be safe for concurrent use. The signal
// goes out under ctx's values but not its cancellation, so that the hooks
// of a cancelled call are still published.
func (r *actRun) emit(ctx context.Context, s Signal) {
	s.Verb, s.BranchID, s.RequestID = r.req.Verb, r.branch.ID, r.req.ID
	r.mu.Lock()
	defer r.mu.Unlock()
	r.e.emit(context.WithoutCancel(ctx), s)
}

// responses returns the responses of the calls, in request order.
func (r *actRun) responses() []ActionResponse {
	out := []ActionResponse{}
	for _, c := range r.calls {
		if c.resp != nil {
			out = append(out, *c.resp)
		}
	}
	return out
}

// messages returns what the run records: for each call that started, its
// action request, then its action response when it has one.
func (r *actRun) messages() []history.Message {
	var out []history.Message
	for _, c := range r.calls {
		if !c.started {
			continue
		}
		out = append(out, c.request)
		if c.resp != nil {
			out = append(out, c.respMsg)
		}
	}
	return out
}

// authorize decides whether inv may run on b: its tool must be one of the
// branch's tools, and the engine's Authorizer, if any, must allow it. An
// Authorizer that cannot decide denies (fail closed).
func (e *Engine) authorize(ctx context.Context, b *history.Branch, inv ToolInvocation) Decision {
	if !slices.Contains(b.Settings.Tools, inv.Function) {
		return Decision{Reason: fmt.Sprintf("tool %q is not allowed on this branch", Truncate(inv.Function, MaxIDLength))}
	}
	if e.tools.auth == nil {
		return Decision{Allow: true}
	}
	d, err := e.tools.auth.Authorize(ctx, inv)
	switch {
	case err != nil:
		return Decision{Reason: "authorization failed: " + err.Error()}
	case !d.Allow && d.Reason == "":
		d.Reason = "denied by governance gate"
	}
	return d
}

// invokeError is the error value of an invoker failure.
func invokeError(err error) *ToolError {
	code := ActionErrorInvoker
	switch {
	case errors.Is(err, ErrNoTool):
		code = ActionErrorNoTool
	case errors.Is(err, ErrNoService):
		code = ActionErrorNoService
	case errors.Is(err, context.DeadlineExceeded):
		code = ActionErrorTimeout
	case errors.Is(err, context.Canceled):
		code = wire.ActionErrorCanceled
	}
	return &ToolError{Code: code, Message: err.Error()}
}
