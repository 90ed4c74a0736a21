package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/lionbus/lionbus/pkg/lndl"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
	"github.com/lionbus/lionbus/pkg/ops/internal/lndlmiddle"
	"github.com/lionbus/lionbus/pkg/ops/middle"
	"github.com/lionbus/lionbus/pkg/ops/provider"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Bounds of the LNDL middle (package lndlmiddle: ADR-0024,
// docs/lndl.md#the-operate-adapter).
const (
	// DefaultRoundBudget is the round budget of a request that sets none.
	DefaultRoundBudget = lndlmiddle.DefaultRoundBudget
	// MaxRoundBudget is the largest round_budget a request may set.
	MaxRoundBudget = lndlmiddle.MaxRoundBudget
	// MaxLNDLNotes bounds the notes one invocation keeps across its rounds.
	MaxLNDLNotes = lndlmiddle.MaxNotes
	// MaxLNDLNotesBytes bounds the size of those notes.
	MaxLNDLNotesBytes = lndlmiddle.MaxNotesBytes
)

// Outcomes of a round as [LNDLRound] reports them (see lndlmiddle).
const (
	RoundContinue = lndlmiddle.RoundContinue
	RoundRetry    = lndlmiddle.RoundRetry
	RoundRejected = lndlmiddle.RoundRejected
	RoundSuccess  = lndlmiddle.RoundSuccess
)

// Sentinel errors of the LNDL middle.
var (
	// ErrLNDLExhausted is matched by the error of an LNDL middle whose
	// rounds ran out without a valid result: a CodeParse *Error naming the
	// budget and the last round error, which it also wraps.
	ErrLNDLExhausted = lndlmiddle.ErrExhausted
	// ErrLNDLNotes is the repair error of a round whose notes exceed
	// [MaxLNDLNotes] or [MaxLNDLNotesBytes].
	ErrLNDLNotes = lndlmiddle.ErrNotes
)

// cliProviderName is the provider name of CLI-backed models: their inner
// exchanges go through the run_and_collect middle.
const cliProviderName = "cli"

// LNDLRound is what one round of the LNDL middle did ([wire.LNDLRound]).
type LNDLRound = wire.LNDLRound

// lndlMiddle is the LNDL adapter of ADR-0024: a bounded loop of recorded
// inner exchanges, each classified with lndl.Round, whose actions run
// through act's stage, returning the first value that validates against
// the target.
type lndlMiddle struct {
	e *Engine
	// cli, when set, replaces the engine's run_and_collect middle for
	// CLI-backed models (internal tests).
	cli Middle
}

// inner returns the middle of the inner exchanges for model: the
// run_and_collect middle for a CLI-backed model, communicate otherwise. A CLI
// model with no run_and_collect middle served is an
// invalid request, refused before any model call.
func (m lndlMiddle) inner(model *history.ModelRef) (Middle, error) {
	if model == nil || model.Provider != cliProviderName {
		return communicateMiddle{m.e}, nil
	}
	if m.cli != nil {
		return m.cli, nil
	}
	mid, err := m.e.Middle(MiddleRunAndCollect)
	if err != nil {
		return nil, &Error{Code: CodeInvalidRequest, Err: err, Message: fmt.Sprintf(
			"middle %s: model %s is CLI-backed and needs the %s middle, which this worker does not serve",
			MiddleLNDL, model.String(), MiddleRunAndCollect)}
	}
	return mid, nil
}

// Exchange runs the rounds of in (ADR-0024 D1 to D5).
//
// Before the first round, it checks the budget (in.RoundBudget, 0 for
// DefaultRoundBudget, at most MaxRoundBudget), reads the target from
// in.ResponseFormat (the generated schema operate asks the model for, its
// properties ordered as in in.CallerFormat) and selects the inner middle;
// a failure is a CodeInvalidRequest error and no model is called.
//
// Round N's exchange is recorded under "<in.RequestID>/round<N>", its
// actions under "<in.RequestID>/round<N>/act"; a redelivery finds them
// committed and replays them without calling a model or a tool. Each
// round emits one lndl.round signal. The first value that validates is
// the answer; running out of rounds is a CodeParse error matching
// ErrLNDLExhausted. Errors of the inner exchanges and of the action
// stage are returned as they are.
func (m lndlMiddle) Exchange(ctx context.Context, in MiddleInput) (*MiddleResult, error) {
	if in.RequestID == "" {
		return nil, Errorf(CodeInvalidRequest, "middle %s: a request id is required", MiddleLNDL)
	}
	var opts middle.LNDLInput
	if in.LNDL != nil {
		opts = *in.LNDL
	}
	budget, err := lndlmiddle.RoundBudget(opts.RoundBudget)
	if err != nil {
		return nil, err
	}
	l := &lndlmiddle.Loop{
		RequestID: in.RequestID, BranchID: in.BranchID, Verb: in.Verb, Budget: budget,
		SkipValidation: in.SkipValidation, CallerGuidance: jsonval.Text(in.Guidance), MaxActions: MaxActionRequests,
		Emit: m.e.emit,
	}
	if l.Verb == "" {
		l.Verb = MiddleLNDL
	}
	if l.Target, err = lndlmiddle.Target(in.ResponseFormat, opts.CallerFormat); err != nil {
		return nil, err
	}
	inner, err := m.inner(in.ChatModel)
	if err != nil {
		return nil, err
	}
	out := &MiddleResult{}
	l.Exchange = func(ctx context.Context, t lndlmiddle.Turn) (*lndlmiddle.Reply, error) {
		res, err := inner.Exchange(ctx, roundInput(in, t))
		if err != nil || res == nil {
			return nil, err
		}
		provider.AddUsage(&out.Usage, res.Usage)
		return &lndlmiddle.Reply{Value: res.Value, Replayed: res.Replayed}, nil
	}
	l.Bridge = func(ctx context.Context, n int, roundID string, pending []lndl.Action, rec *LNDLRound) (map[string]any, bool, error) {
		return m.bridge(ctx, in, opts.Tools, l.Verb, n, roundID, pending, rec)
	}
	o, err := l.Run(ctx)
	if err != nil {
		return nil, err
	}
	out.Value = o.Value
	if !in.SkipValidation {
		// Unvalidated, the value keeps the caller's order of properties.
		if out.Value, err = decoded(o.Value); err != nil {
			return nil, err
		}
	}
	out.Replayed, out.LNDL = o.Replayed, &middle.LNDLReport{Rounds: o.Rounds}
	return out, nil
}

// roundInput is the middle input of a round's inner exchange: in under
// the round's id, with no native tools or response format, asking for the
// raw text; round 1 with the LNDL guidance, later rounds with the round's
// instruction instead of the caller's, no plain content and no clear.
func roundInput(in MiddleInput, t lndlmiddle.Turn) MiddleInput {
	in.RequestID = t.ID
	in.ResponseFormat, in.ToolSchemas, in.LNDL = nil, nil, nil
	in.SkipValidation, in.NumParseRetries = true, nil
	if t.N == 1 {
		in.Guidance = t.Guidance
	} else {
		in.Instruction = t.Instruction
		in.PlainContent, in.ClearMessages = "", false
	}
	return in
}

// bridgeOutcome is the recorded outcome of one bridged call: the act
// stage's value is the list of them, one per call, in call order, null
// outputs included, so results pair strictly with calls.
type bridgeOutcome struct {
	Alias    string     `json:"alias"`
	Function string     `json:"function"`
	Output   any        `json:"output,omitempty"`
	Error    *ToolError `json:"error,omitempty"`
}

// bridge runs round n's pending actions (at least one) through act's stage: as ordinary
// action requests (the alias as the request's
// id), concurrently, tool errors suppressed, authorized against the
// branch's tools (narrowed to tools unless nil) and the engine's gate, with the
// hook signals, recorded as one event under "<round id>/act". It returns
// the results by alias: a call's output, or {"error": {code, message}}
// for a call that failed. A stage already committed is
// replayed from history.
func (m lndlMiddle) bridge(ctx context.Context, in MiddleInput, tools []string, verb string, n int, roundID string, pending []lndl.Action, rec *LNDLRound) (map[string]any, bool, error) {
	e := m.e
	req := Request{ID: stageID(roundID, "act"), Verb: verb, BranchID: in.BranchID, Attempt: in.Attempt}
	b, err := e.load(ctx, in.BranchID)
	if err != nil {
		return nil, false, err
	}
	var res *Result
	if seq, ok := b.Commits.Seq(req.ID); ok {
		res, err = e.replayCommitted(ctx, req, seq, replayMessages)
	} else {
		res, err = m.runStage(ctx, req, b, tools, pending)
	}
	if err != nil {
		return nil, false, err
	}
	var outcomes []bridgeOutcome
	if err := json.Unmarshal(res.Value, &outcomes); err != nil {
		return nil, false, Errorf(CodeInternal, "middle %s: round %d: the act stage's value: %v", MiddleLNDL, n, err)
	}
	if len(outcomes) != len(pending) {
		return nil, false, Errorf(CodeInternal, "middle %s: round %d: %d action outcomes for %d calls", MiddleLNDL, n, len(outcomes), len(pending))
	}
	executed := make(map[string]any, len(pending))
	for i, o := range outcomes {
		if o.Alias != pending[i].Name || o.Function != pending[i].Function {
			return nil, false, Errorf(CodeInternal, "middle %s: round %d: action outcome %d is of %s (%s), the call was %s (%s)",
				MiddleLNDL, n, i, Truncate(o.Alias, MaxIDLength), Truncate(o.Function, MaxIDLength), Truncate(pending[i].Name, MaxIDLength), Truncate(pending[i].Function, MaxIDLength))
		}
		act := wire.LNDLAction{Alias: o.Alias, Function: o.Function}
		if o.Error != nil {
			act.ErrorCode = o.Error.Code
			executed[o.Alias] = map[string]any{"error": map[string]any{"code": o.Error.Code, "message": o.Error.Message}}
		} else {
			executed[o.Alias] = o.Output
		}
		rec.Actions = append(rec.Actions, act)
	}
	return executed, res.Replayed, nil
}

// runStage runs pending as the act stage req on branch b, its tools
// narrowed to tools unless nil, and records it: the value is the list of
// bridgeOutcomes, one per call, in call order.
func (m lndlMiddle) runStage(ctx context.Context, req Request, b *history.Branch, tools []string, pending []lndl.Action) (*Result, error) {
	e := m.e
	if tools != nil {
		nb := *b
		nb.Settings.Tools = slices.DeleteFunc(slices.Clone(b.Settings.Tools), func(t string) bool { return !slices.Contains(tools, t) })
		b = &nb
	}
	p := actParams{suppress: true, requests: make([]wire.ActionRequest, len(pending))}
	for i, a := range pending {
		p.requests[i] = wire.ActionRequest{Function: a.Function, Arguments: a.Arguments}
		if len(a.Name) <= maxActionIDLength {
			p.requests[i].ID = a.Name
		}
	}
	start := e.clock()
	run := e.runActions(ctx, req, b, p)
	if err := ended(ctx); err != nil {
		return nil, err
	}
	outcomes := make([]bridgeOutcome, len(run.calls))
	for i, c := range run.calls {
		outcomes[i] = bridgeOutcome{Alias: pending[i].Name, Function: c.req.Function}
		if c.resp != nil {
			outcomes[i].Output, outcomes[i].Error = c.resp.Output, c.resp.Error
		}
	}
	v, err := marshalValue(outcomes)
	if err != nil {
		return nil, err
	}
	res := &Result{Value: v, BranchID: b.ID, DurationMS: e.clock().Sub(start).Milliseconds()}
	return e.commitEvent(ctx, req, b.ID, history.Event{Messages: run.messages()}, res, nil)
}
