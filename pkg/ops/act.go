package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Strategies of act (ADR-0022 D4): how its tool calls are scheduled.
const (
	// strategyConcurrent runs the calls at once, at most
	// Config.MaxConcurrentTools at a time. It is the default.
	strategyConcurrent = "concurrent"
	// strategySequential runs the calls one after the other, in order.
	strategySequential = "sequential"
)

// sequential reports whether strategy s, the request field named field,
// is strategySequential; a strategy neither it nor strategyConcurrent is
// refused.
func sequential(field, s string) (bool, error) {
	if s != strategyConcurrent && s != strategySequential {
		return false, Errorf(CodeInvalidRequest, "%s must be %q or %q, not %q", field, strategyConcurrent, strategySequential, Truncate(s, 64))
	}
	return s == strategySequential, nil
}

// Bounds of act.
const (
	// MaxActionRequests is the most action requests one act request may
	// make.
	MaxActionRequests = 256
	// DefaultMaxConcurrentTools is how many tool calls of one act request
	// run at once, with the concurrent strategy, when
	// Config.MaxConcurrentTools is 0.
	DefaultMaxConcurrentTools = 8
	// SummaryLength bounds the argument and result summaries of the tool
	// hook signals, in bytes of compact JSON.
	SummaryLength = wire.SummaryLength
	// DebugPreviewLength bounds the argument preview of act's debug log
	// records, in bytes of compact JSON.
	DebugPreviewLength = 50
)

// Codes of the errors act itself puts in action responses. A tool's own
// failure keeps the code the tool gave ([ToolError]; ToolErrorFailed when
// it gave none).
const (
	// ActionErrorDenied: the call was not authorized; the
	// message is the reason. It is never suppressed or raised: a denial
	// is always a value.
	ActionErrorDenied = wire.ActionErrorDenied
	// ActionErrorNoTool: the invoker knows no tool of that name.
	ActionErrorNoTool = wire.ActionErrorNoTool
	// ActionErrorNoService: the tool is known but no service answered
	// ([ErrNoService]).
	ActionErrorNoService = wire.ActionErrorNoService
	// ActionErrorTimeout: the call's deadline passed before it answered.
	ActionErrorTimeout = wire.ActionErrorTimeout
	// ActionErrorInvoker: the invoker failed to get an outcome (a
	// transport failure).
	ActionErrorInvoker = wire.ActionErrorInvoker
)

// Metadata keys of the action messages act records.
const (
	// MetaCallID is the call's idempotency key ([ToolCallKey]), on the
	// action request.
	MetaCallID = "call_id"
	// MetaActionID is the caller's id of the action request, when it gave
	// one, on the action request.
	MetaActionID = "action_id"
	// MetaErrorCode is the code of an error-valued action response.
	MetaErrorCode = "error_code"
)

// ActionResponse is the outcome of one action request
// ([wire.ActionResponse]).
type ActionResponse = wire.ActionResponse

// actData is the request data of act ([wire.ActRequest]).
type actData struct {
	wire.ActRequest
	// Strategy is read as sent, over the wire type's: present, it must
	// name a strategy ("" too is refused).
	Strategy *string `json:"strategy"`
}

// maxActionIDLength bounds the caller's id of an action request.
const maxActionIDLength = 256

// actParams is what the act stage runs: the requests and how.
type actParams struct {
	requests   []wire.ActionRequest
	sequential bool
	// suppress turns tool failures into error values; without
	// it the first failure fails the request.
	suppress bool
}

// params checks d and returns the stage's parameters.
func (d *actData) params() (actParams, error) {
	p := actParams{requests: d.ActionRequests, suppress: true}
	if d.SuppressErrors != nil {
		p.suppress = *d.SuppressErrors
	}
	if d.Strategy != nil {
		seq, err := sequential("data.strategy", *d.Strategy)
		if err != nil {
			return p, err
		}
		p.sequential = seq
	}
	if len(p.requests) > MaxActionRequests {
		return p, Errorf(CodeInvalidRequest, "data.action_requests has %d items, at most %d are allowed", len(p.requests), MaxActionRequests)
	}
	for i, r := range p.requests {
		switch {
		case r.Function == "":
			return p, Errorf(CodeInvalidRequest, "data.action_requests[%d].function is required", i)
		case len(r.ID) > maxActionIDLength:
			return p, Errorf(CodeInvalidRequest, "data.action_requests[%d].id is longer than %d characters", i, maxActionIDLength)
		}
	}
	return p, nil
}

// actVerb is act (ADR-0022 D4): run the action requests of the data with
// the branch's tools, record them, and answer the action responses.
func (e *Engine) actVerb(ctx context.Context, req Request) (*Result, error) {
	if err := requireBranchID(req); err != nil {
		return nil, err
	}
	var d actData
	if err := decodeData(req.Data, &d); err != nil {
		return nil, err
	}
	p, err := d.params()
	if err != nil {
		return nil, err
	}
	b, err := e.load(ctx, req.BranchID)
	if err != nil {
		return nil, err
	}
	return e.act(ctx, req, b, p)
}

// act is the act stage, shared by the act verb and operate (for the action
// requests of its result). Under the id of req, it runs the calls of p on
// b (see runActions), then records every call's action request and action
// response as messages of ONE EventMessages together with the result, and
// emits message.added for each. The result value is the list of action
// responses. It emits no run lifecycle (docs/decisions.md#reference-a9).
//
// A request already committed on b is answered from history, without
// calling a tool (its message.added signals are emitted again). An empty
// list runs and records nothing. When ctx ends while the calls
// run, nothing is recorded and the request fails with ctx's error: tools
// may have run, and a redelivery calls them again with the same
// idempotency keys. A failure with errors not suppressed is recorded with
// the calls that started, and answered CodeAction, on every delivery.
func (e *Engine) act(ctx context.Context, req Request, b *history.Branch, p actParams) (*Result, error) {
	if seq, ok := b.Commits.Seq(req.ID); ok {
		return e.replayCommitted(ctx, req, seq, replayMessages)
	}
	start := e.clock()
	if len(p.requests) == 0 {
		return &Result{Value: json.RawMessage("[]"), BranchID: b.ID}, nil
	}
	run := e.runActions(ctx, req, b, p)
	if err := ended(ctx); err != nil {
		return nil, err
	}
	res := &Result{BranchID: b.ID}
	var operr *Error
	if f := run.failed; f != nil {
		operr = Errorf(CodeAction, "action %d (%s) failed: %s: %s", f.index, f.req.Function, f.resp.Error.Code, f.resp.Error.Message)
	} else {
		v, err := marshalValue(run.responses())
		if err != nil {
			return nil, err
		}
		res.Value = v
	}
	res.DurationMS = e.clock().Sub(start).Milliseconds()
	return e.commitEvent(ctx, req, b.ID, history.Event{Messages: run.messages()}, res, operr)
}

// ended returns ctx's error, or context.DeadlineExceeded once its deadline
// has passed: a call given that deadline may time out, and return, a moment
// before ctx itself is marked done.
func ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// actionError is the error value of a call that gave no output.
func actionError(code, format string, args ...any) *ToolError {
	return &ToolError{Code: code, Message: fmt.Sprintf(format, args...)}
}
