package ops

import (
	"context"
	"encoding/json"
	"time"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/toolschema"
	"github.com/lionbus/lionbus/pkg/wire"
)

// operate is the composed operation of ADR-0022: prepare the request
// (D1), generate the request and response schemas (D2), make ONE call to
// the selected middle (D3), apply the outer validation policy, then run the
// result's action requests through the act stage and enrich the result
// with their action_responses (D4).
//
// The middle records its exchange under the stage id "<id>/middle" and the
// act stage its calls under "<id>/act", each as one EventMessages; operate
// records nothing itself. A redelivery therefore finds both stages
// committed and answers from history without calling a model or a tool.
// operate emits run.start, then exactly one of run.end and run.failed; the
// stages' message.added and tool hook signals, in between, carry the stage
// ids.
func (e *Engine) operate(ctx context.Context, req Request) (*Result, error) {
	if err := requireBranchID(req); err != nil {
		return nil, err
	}
	var d operateData
	if err := decodeData(req.Data, &d); err != nil {
		return nil, err
	}
	return e.operateWith(ctx, req, &d)
}

// operateWith is operate once its data is decoded: the path every operate
// takes, the verb's and each react round's, so that they prepare, call the
// middle, validate, act and record alike.
func (e *Engine) operateWith(ctx context.Context, req Request, d *operateData) (*Result, error) {
	b, err := e.load(ctx, req.BranchID)
	if err != nil {
		return nil, err
	}
	p, err := d.plan(b)
	if err != nil {
		return nil, err
	}
	if d.Middle == "" && (p.runParams || e.isCLIModel(p.chat.ChatModel)) {
		// Run parameters, or a CLI model, select run_and_collect; run refuses
		// a model that is not a CLI
		// one, with guidance.
		p.middle = MiddleRunAndCollect
	}
	sch, err := buildSchemas(p)
	if err != nil {
		return nil, err
	}
	mid, err := e.Middle(p.middle)
	if err != nil {
		return nil, err
	}
	o := &operation{e: e, req: req, b: b, p: p, sch: sch, mid: mid}
	return e.runLifecycle(ctx, req, b.ID, func() (*Result, error) { return o.run(ctx) })
}

// operation is one operate after preparation: its stages, run in order
// by run, and the result they build.
type operation struct {
	e   *Engine
	req Request
	b   *history.Branch
	p   *operatePlan
	sch *operateSchemas
	mid Middle
	t0  time.Time
	out *Result
}

// run runs the stages: one call of the middle, the outer policy, then the
// actions the result asks for.
func (o *operation) run(ctx context.Context) (*Result, error) {
	o.t0 = o.e.clock()
	in, err := o.middleInput(ctx)
	if err != nil {
		return nil, err
	}
	// Exactly one call, never retried here; the middle owns
	// clear_messages and persistence.
	mres, err := o.mid.Exchange(ctx, in)
	o.out = &Result{BranchID: o.b.ID}
	if err != nil {
		if v, ok := o.parseFailureValue(ctx, in, err); ok {
			return o.value(v)
		}
		return nil, err
	}
	if mres == nil {
		return nil, Errorf(CodeInternal, "middle %s returned no result", o.p.middle)
	}
	o.out.Usage, o.out.Replayed = mres.Usage, mres.Replayed
	// Only the LNDL middle and run_and_collect answer extras; a plain
	// exchange encodes none.
	if mres.LNDL != nil || mres.Run != nil {
		var extra wire.OperateExtra
		if mres.LNDL != nil {
			extra.LNDLRounds = mres.LNDL.Rounds
		}
		if mres.Run != nil {
			extra.RunLog = mres.Run.Log
		}
		if err := o.out.SetExtra(extra); err != nil {
			return nil, Errorf(CodeInternal, "operate: %v", err)
		}
	}
	value := mres.Value
	// skip_validation returns the raw result at once.
	if o.p.skip {
		return o.value(value)
	}
	obj, _ := value.(map[string]any)
	if obj != nil && o.p.actions {
		// Only the runtime fills action_responses.
		delete(obj, fieldActionResponses)
	}
	if res, done, err := o.policy(value); done {
		return res, err
	}
	return o.act(ctx, value, obj)
}

// middleInput is the middle's input: the plan's, under the stage id
// "<id>/middle", asking for the generated request schema, with the tools
// of the action stage.
func (o *operation) middleInput(ctx context.Context) (MiddleInput, error) {
	in := o.p.chat
	in.RequestID, in.BranchID, in.Verb, in.Attempt = stageID(o.req.ID, "middle"), o.b.ID, o.req.Verb, o.req.Attempt
	in.StreamID = o.req.ID
	if o.sch != nil {
		raw, err := marshalValue(o.sch.request)
		if err != nil {
			return in, err
		}
		in.ResponseFormat = raw
	}
	if o.p.action != nil {
		// The selected (or all) branch tools replace the tool schemas of
		// the instruction.
		in.ToolSchemas = toolschema.Names(o.p.tools, o.b.Settings.Tools)
		if d, ok := o.e.tools.invoker.(ToolDescriber); ok {
			in.ToolSchemas = toolschema.Described(in.ToolSchemas, func(names []string) []ToolSpec { return d.DescribeTools(ctx, names) })
		}
	}
	return in, nil
}

// act runs the action requests of the result's object obj (value) through
// the act stage, under "<id>/act", and adds their action_responses to it.
func (o *operation) act(ctx context.Context, value any, obj map[string]any) (*Result, error) {
	e, req, b, p := o.e, o.req, o.b, o.p
	// invoke_actions off, or no actions: no look at the requests.
	if p.action == nil || obj == nil {
		return o.value(value)
	}
	// Requests come only from the structured result.
	rawReqs, ok := obj[fieldActionRequests]
	if !ok || rawReqs == nil {
		return o.value(value)
	}
	ap := *p.action
	if err := roundTrip(rawReqs, &ap.requests); err != nil {
		return nil, Errorf(CodeAction, "the result's action_requests are not a list of {function, arguments}: %v", err)
	}
	if len(ap.requests) > MaxActionRequests {
		return nil, Errorf(CodeAction, "the result has %d action_requests, at most %d are run", len(ap.requests), MaxActionRequests)
	}
	for i, r := range ap.requests {
		if r.Function == "" {
			return nil, Errorf(CodeAction, "the result's action_requests[%d] has no function", i)
		}
	}
	if len(ap.requests) == 0 {
		// An empty list dispatches and enriches nothing.
		return o.value(value)
	}
	// The act stage, with the branch as the middle left it (its tools,
	// narrowed to the selection).
	ab, err := e.load(ctx, b.ID)
	if err != nil {
		return nil, err
	}
	if p.tools != nil {
		nb := *ab
		nb.Settings.Tools = p.tools
		ab = &nb
	}
	areq := Request{ID: stageID(req.ID, "act"), Verb: req.Verb, BranchID: b.ID, Attempt: req.Attempt}
	ares, err := e.act(ctx, areq, ab, ap)
	if err != nil {
		return nil, err
	}
	var responses []any
	if err := json.Unmarshal(ares.Value, &responses); err != nil {
		return nil, Errorf(CodeInternal, "act stage value: %v", err)
	}
	o.out.Replayed = o.out.Replayed && ares.Replayed
	if len(responses) > 0 {
		// Every non-null response, denials and suppressed errors
		// included, is offered to the context providers before the
		// result is enriched — at least once: a redelivery
		// offers them again, under the same request id.
		e.writeback(ctx, req, b.ID, ares.Value)
	}
	if len(responses) > 0 {
		// Enriched in place, never replaced by the list.
		obj[fieldActionResponses] = responses
	}
	return o.value(value)
}

// value sets the result's value to v and finishes it.
func (o *operation) value(v any) (*Result, error) {
	raw, err := marshalValue(v)
	if err != nil {
		return nil, err
	}
	o.out.Value = raw
	return o.finish()
}

// finish completes the result: null for no value, the duration unless
// it was replayed.
func (o *operation) finish() (*Result, error) {
	if o.out.Value == nil {
		o.out.Value = json.RawMessage("null")
	}
	if !o.out.Replayed {
		o.out.DurationMS = o.e.clock().Sub(o.t0).Milliseconds()
	}
	return o.out, nil
}
