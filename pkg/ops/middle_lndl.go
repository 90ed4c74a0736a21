package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/lionbus/lionbus/pkg/lndl"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Bounds of the LNDL middle (ADR-0024, docs/lndl.md#the-operate-adapter).
const (
	// DefaultRoundBudget is the round budget of a request that sets none: at
	// most three model exchanges.
	DefaultRoundBudget = 3
	// MaxRoundBudget is the largest round_budget a request may set; a
	// larger one, zero, a negative or a non-integer budget is an invalid
	// request, refused before any model call.
	MaxRoundBudget = 10
	// MaxLNDLNotes bounds the notes (note.X) one invocation keeps across
	// its rounds.
	MaxLNDLNotes = 64
	// MaxLNDLNotesBytes bounds the size of those notes: the sum of the
	// lengths of their names and their values (as text).
	MaxLNDLNotesBytes = 64 << 10
	// MaxRoundErrorBytes bounds the error text a round reports in its
	// lndl.round signal and in the result's lndl_rounds.
	MaxRoundErrorBytes = lndl.MaxPromptErrorBytes
)

// Outcomes of a round as [LNDLRound] reports them.
const (
	// RoundContinue: no lndl block or no OUT{}; the round's lacts ran.
	RoundContinue = "continue"
	// RoundRetry: the response did not parse or assemble (or broke a
	// bound of the middle); its error is the next round's repair message.
	RoundRetry = "retry"
	// RoundRejected: a success candidate whose actions ran but whose
	// value did not validate against the target; the validation error is
	// the next round's repair message.
	RoundRejected = "rejected"
	// RoundSuccess: the value validated (or needed no validation) and is
	// the answer.
	RoundSuccess = "success"
)

// Sentinel errors of the LNDL middle.
var (
	// ErrLNDLExhausted is matched by the error of an LNDL middle whose
	// rounds ran out without a valid result. The error is a
	// CodeParse *Error naming the budget and the last round error, which
	// it also wraps.
	ErrLNDLExhausted = errors.New("ops: lndl round budget exhausted")
	// ErrLNDLNotes is the repair error of a round whose notes exceed
	// [MaxLNDLNotes] or [MaxLNDLNotesBytes]: the round is a retry and its
	// notes are not kept.
	ErrLNDLNotes = errors.New("ops: lndl notes exceed their bounds")
	// ErrLNDLActions is the repair error of a round asking for more than
	// [MaxActionRequests] actions: the round is a retry and runs none.
	ErrLNDLActions = errors.New("ops: lndl round asks for too many actions")
)

// cliProviderName is the provider name of CLI-backed models: their inner
// exchanges go through the run_and_collect middle.
const cliProviderName = "cli"

// LNDLRound is what one round of the LNDL middle did ([wire.LNDLRound]).
type LNDLRound = wire.LNDLRound

// LNDLAction is one action a round ran ([wire.LNDLAction]).
type LNDLAction = wire.LNDLAction

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

// lndlRun is the state of one invocation of the LNDL middle.
type lndlRun struct {
	m      lndlMiddle
	in     MiddleInput
	verb   string
	budget int
	target *lndl.Target
	inner  Middle
	// results are the action results by alias, for the whole invocation;
	// notes the scratchpad carried across rounds.
	results map[string]any
	notes   map[string]any
	rounds  []LNDLRound
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
func (m lndlMiddle) Exchange(ctx context.Context, in MiddleInput) (*Result, error) {
	if in.RequestID == "" {
		return nil, Errorf(CodeInvalidRequest, "middle %s: a request id is required", MiddleLNDL)
	}
	budget, err := roundBudget(in.RoundBudget)
	if err != nil {
		return nil, err
	}
	r := &lndlRun{m: m, in: in, verb: in.Verb, budget: budget, results: map[string]any{}, notes: map[string]any{}}
	if r.verb == "" {
		r.verb = MiddleLNDL
	}
	if r.target, err = lndlTarget(in.ResponseFormat, in.CallerFormat); err != nil {
		return nil, err
	}
	if r.inner, err = m.inner(in.ChatModel); err != nil {
		return nil, err
	}
	return r.run(ctx)
}

// roundBudget applies the default to n and checks it.
func roundBudget(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultRoundBudget, nil
	case n < 1 || n > MaxRoundBudget:
		return 0, Errorf(CodeInvalidRequest, "round_budget must be an integer from 1 to %d, got %d", MaxRoundBudget, n)
	}
	return n, nil
}

// parseRoundBudget reads a request's round_budget: a JSON integer from 1
// to MaxRoundBudget (2.0 counts as 2). Anything else, null included, is a
// CodeInvalidRequest error.
func parseRoundBudget(raw json.RawMessage) (int, error) {
	bad := func() (int, error) {
		return 0, Errorf(CodeInvalidRequest, "data.round_budget must be an integer from 1 to %d, got %s",
			MaxRoundBudget, Truncate(string(bytes.TrimSpace(raw)), 64))
	}
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] == '"' {
		return bad() // json.Number would take a quoted number
	}
	var num json.Number
	if err := json.Unmarshal(t, &num); err != nil {
		return bad()
	}
	n, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(string(num), 64)
		if ferr != nil || f != float64(int64(f)) {
			return bad()
		}
		n = int64(f)
	}
	if n < 1 || n > MaxRoundBudget {
		return bad()
	}
	return int(n), nil
}

// lndlTarget parses the target of the rounds: nil for no response format.
func lndlTarget(format, caller json.RawMessage) (*lndl.Target, error) {
	if len(bytes.TrimSpace(format)) == 0 || string(bytes.TrimSpace(format)) == "null" {
		return nil, nil
	}
	ordered, err := orderLike(format, caller)
	if err != nil {
		return nil, Errorf(CodeInvalidRequest, "middle %s: response_format: %v", MiddleLNDL, err)
	}
	t, err := lndl.ParseTarget(ordered)
	if err != nil {
		return nil, &Error{Code: CodeInvalidRequest, Err: err, Message: fmt.Sprintf(
			"middle %s: response_format cannot be an LNDL target: %v", MiddleLNDL, err)}
	}
	return t, nil
}

// orderLike returns the JSON of doc with the keys of each object in the
// order of the object at the same place in ref (its other keys after them,
// sorted): operate's generated schema comes from Go maps, which lose the
// order of the caller's properties, and the target's field order is the
// declaration order the model is shown. An empty or
// unreadable ref leaves the keys sorted.
func orderLike(doc, ref json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var r any
	if len(bytes.TrimSpace(ref)) > 0 {
		r, _ = lndl.DecodeJSON(ref)
	}
	return json.Marshal(ordered(v, r, 0))
}

// ordered is orderLike on decoded values; depth bounds the walk (deeper
// parts keep their sorted keys).
func ordered(v, ref any, depth int) any {
	if depth > lndl.MaxJSONDepth {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		refObj, _ := ref.(*lndl.Object)
		out := lndl.NewObject(len(x))
		if refObj != nil {
			for _, k := range refObj.Keys() {
				if child, ok := x[k]; ok {
					sub, _ := refObj.Get(k)
					out.Set(k, ordered(child, sub, depth+1))
				}
			}
		}
		rest := make([]string, 0, len(x))
		for k := range x {
			if refObj == nil || !refObj.Has(k) {
				rest = append(rest, k)
			}
		}
		sort.Strings(rest)
		for _, k := range rest {
			out.Set(k, ordered(x[k], nil, depth+1))
		}
		return out
	case []any:
		refList, _ := ref.([]any)
		out := make([]any, len(x))
		for i, e := range x {
			var sub any
			if len(refList) == len(x) {
				sub = refList[i]
			}
			out[i] = ordered(e, sub, depth+1)
		}
		return out
	}
	return v
}

// run is the round loop.
func (r *lndlRun) run(ctx context.Context) (*Result, error) {
	out := &Result{BranchID: r.in.BranchID, Replayed: true}
	var (
		lastErr error     // the last repair error
		prev    roundStep // the previous round's
	)
	for round := 1; round <= r.budget; round++ {
		text, res, err := r.exchange(ctx, round, prev.repair, prev.executed)
		if err != nil {
			return nil, err
		}
		addUsage(&out.Usage, res.Usage)
		rec := LNDLRound{Round: round, Budget: r.budget, BudgetLeft: r.budget - round, Actions: []LNDLAction{}}
		step, err := r.step(ctx, round, text, &rec)
		if err != nil {
			return nil, err
		}
		out.Replayed = out.Replayed && res.Replayed && step.replayed
		if step.repair != nil {
			lastErr = step.repair
			rec.Error = Truncate(step.repair.Error(), MaxRoundErrorBytes)
		}
		rec.Notes = len(r.notes)
		r.rounds = append(r.rounds, rec)
		r.m.e.emit(ctx, Signal{Type: SignalLNDLRound, Verb: r.verb, BranchID: r.in.BranchID, RequestID: r.roundID(round), Round: &rec})
		if step.done {
			raw, err := marshalValue(step.value)
			if err != nil {
				return nil, err
			}
			out.Value, out.LNDLRounds = raw, r.rounds
			return out, nil
		}
		prev = step
	}
	return nil, r.exhausted(lastErr)
}

// exhausted is the error of a loop that ran out of rounds.
func (r *lndlRun) exhausted(lastErr error) error {
	if lastErr == nil {
		return &Error{Code: CodeParse, Err: ErrLNDLExhausted, Message: fmt.Sprintf(
			"lndl: no valid result in %d round(s) (round_budget %d): no OUT{} was produced", r.budget, r.budget)}
	}
	return &Error{Code: CodeParse, Err: fmt.Errorf("%w: %w", ErrLNDLExhausted, lastErr), Message: fmt.Sprintf(
		"lndl: no valid result in %d round(s) (round_budget %d); last error: %s", r.budget, r.budget,
		Truncate(lastErr.Error(), MaxRoundErrorBytes))}
}

// roundID is the stage id of round n's exchange.
func (r *lndlRun) roundID(n int) string { return stageID(r.in.RequestID, "round"+strconv.Itoa(n)) }

// exchange makes round n's inner exchange and returns the response text.
// The first round sends the caller's instruction with the LNDL guidance;
// later ones "Round N of M." with the previous round's action results
// and repair error, and the caller's guidance alone. No round offers native
// tools or a native response format,
// and each asks for the raw text; only the first
// clears the messages.
func (r *lndlRun) exchange(ctx context.Context, n int, repair error, results map[string]any) (string, *Result, error) {
	in := r.in
	in.RequestID = r.roundID(n)
	in.ResponseFormat, in.ToolSchemas, in.CallerFormat = nil, nil, nil
	in.SkipValidation, in.NumParseRetries, in.RoundBudget, in.Tools = true, nil, 0, nil
	if n == 1 {
		// The caller's guidance as text: a string as it is, any other
		// value as compact JSON (as lionbus intends it).
		in.Guidance = lndl.Guidance(r.target, jsonval.Text(r.in.Guidance))
	} else {
		in.Instruction = lndl.NextRoundPrompt(n, r.budget, r.target, results, repair)
		in.PlainContent, in.ClearMessages = "", false
	}
	res, err := r.inner.Exchange(ctx, in)
	if err != nil {
		return "", nil, err
	}
	if res == nil {
		return "", nil, Errorf(CodeInternal, "middle %s: the inner exchange of round %d returned no result", MiddleLNDL, n)
	}
	text, err := rawText(res.Value)
	if err != nil {
		return "", nil, Errorf(CodeInternal, "middle %s: round %d: %v", MiddleLNDL, n, err)
	}
	return text, res, nil
}

// rawText reads an inner exchange's value: a JSON string is the text;
// null or nothing is no text, which every kind of model answers the same
// way, as a continue round (as lionbus intends it).
func rawText(v json.RawMessage) (string, error) {
	t := bytes.TrimSpace(v)
	if len(t) == 0 || string(t) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(t, &s); err != nil {
		return "", fmt.Errorf("the inner exchange answered %s, not text", Truncate(string(t), 64))
	}
	return s, nil
}

// roundStep is what a round decided.
type roundStep struct {
	// done: value is the answer.
	done  bool
	value any
	// repair is the round's repair error, for the next round; nil for a
	// continue or a success.
	repair error
	// executed are the results of the actions the round ran, by alias.
	executed map[string]any
	// replayed: the round's action stage, if any, was read from history.
	replayed bool
}

// step classifies round n's text (0024-D3), runs the actions its shape
// selects (0024-D4) and decides (0024-D5). rec gets the outcome and the
// actions. An error ends the invocation.
func (r *lndlRun) step(ctx context.Context, n int, text string, rec *LNDLRound) (roundStep, error) {
	rr := lndl.Round(lndl.RoundInput{Text: text, Target: r.target, ActionResults: r.results, Notes: r.notes})
	retry := func(e error) (roundStep, error) {
		rec.Outcome = RoundRetry
		return roundStep{repair: e, replayed: true}, nil
	}
	if rr.Outcome == lndl.OutcomeRetry {
		if !errors.Is(rr.Err, lndl.ErrLNDL) {
			return roundStep{}, rr.Err
		}
		return retry(rr.Err)
	}
	if e := checkNotes(rr.Notes); e != nil {
		return retry(e)
	}
	if len(rr.Pending) > MaxActionRequests {
		return retry(fmt.Errorf("%w: %d lacts, at most %d run in one round", ErrLNDLActions, len(rr.Pending), MaxActionRequests))
	}
	r.notes = rr.Notes
	executed, replayed, err := r.bridge(ctx, n, rr.Pending, rec)
	if err != nil {
		return roundStep{}, err
	}
	st := roundStep{executed: executed, replayed: replayed}
	// Results by alias, for the rest of the invocation; a continue round
	// overwrites an alias's earlier result.
	for alias, v := range executed {
		r.results[alias] = v
	}
	if rr.Outcome == lndl.OutcomeContinue {
		rec.Outcome = RoundContinue
		return st, nil
	}
	resolved, err := rr.Resolve(executed)
	switch {
	case err != nil && errors.Is(err, lndl.ErrLNDL):
		rec.Outcome, st.repair = RoundRetry, err
		return st, nil
	case err != nil:
		return roundStep{}, Errorf(CodeInternal, "middle %s: round %d: %v", MiddleLNDL, n, err)
	}
	// skip_validation or no target: the assembled value, results
	// substituted.
	if r.in.SkipValidation || r.target == nil {
		rec.Outcome, st.done, st.value = RoundSuccess, true, resolved
		return st, nil
	}
	valid, verr := r.target.Validate(resolved)
	switch {
	case verr == nil:
		rec.Outcome, st.done, st.value = RoundSuccess, true, valid
		return st, nil
	case errors.Is(verr, lndl.ErrValidation):
		// Never returned partially: repair text for the next round.
		rec.Outcome, st.repair = RoundRejected, verr
		return st, nil
	}
	return roundStep{}, &Error{Code: CodeInvalidRequest, Err: verr, Message: fmt.Sprintf(
		"middle %s: the target cannot validate: %v", MiddleLNDL, verr)}
}

// checkNotes checks the notes a round leaves against the bounds.
func checkNotes(notes map[string]any) error {
	if len(notes) > MaxLNDLNotes {
		return fmt.Errorf("%w: %d notes, at most %d are kept across rounds", ErrLNDLNotes, len(notes), MaxLNDLNotes)
	}
	size := 0
	for k, v := range notes {
		size += len(k)
		if s, ok := v.(string); ok {
			size += len(s)
		} else {
			size += len(jsonval.Compact(v))
		}
	}
	if size > MaxLNDLNotesBytes {
		return fmt.Errorf("%w: the notes hold %d bytes, at most %d are kept across rounds", ErrLNDLNotes, size, MaxLNDLNotesBytes)
	}
	return nil
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

// bridge runs round n's pending actions through act's stage: as ordinary
// action requests (the alias as the request's
// id), concurrently, tool errors suppressed, authorized against the
// branch's tools (narrowed to in.Tools) and the engine's gate, with the
// hook signals, recorded as one event under "<round id>/act". It returns
// the results by alias: a call's output, or {"error": {code, message}}
// for a call that failed. A stage already committed is
// replayed from history.
func (r *lndlRun) bridge(ctx context.Context, n int, pending []lndl.Action, rec *LNDLRound) (map[string]any, bool, error) {
	if len(pending) == 0 {
		return nil, true, nil
	}
	e := r.m.e
	req := Request{ID: stageID(r.roundID(n), "act"), Verb: r.verb, BranchID: r.in.BranchID, Attempt: r.in.Attempt}
	b, err := e.load(ctx, r.in.BranchID)
	if err != nil {
		return nil, false, err
	}
	var res *Result
	if seq, ok := b.Commits.Seq(req.ID); ok {
		if res, err = e.replayCommitted(ctx, req, seq, replayMessages); err != nil {
			return nil, false, err
		}
	} else {
		if r.in.Tools != nil {
			nb := *b
			nb.Settings.Tools = slices.DeleteFunc(slices.Clone(b.Settings.Tools), func(t string) bool { return !slices.Contains(r.in.Tools, t) })
			b = &nb
		}
		p := actParams{suppress: true, requests: make([]ActionRequest, len(pending))}
		for i, a := range pending {
			p.requests[i] = ActionRequest{Function: a.Function, Arguments: a.Arguments}
			if len(a.Name) <= maxActionIDLength {
				p.requests[i].ID = a.Name
			}
		}
		start := e.clock()
		run := e.runActions(ctx, req, b, p)
		if err := ended(ctx); err != nil {
			return nil, false, err
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
			return nil, false, err
		}
		res = &Result{Value: v, BranchID: b.ID, DurationMS: e.clock().Sub(start).Milliseconds()}
		if res, err = e.commitEvent(ctx, req, b.ID, history.Event{Messages: run.messages()}, res, nil); err != nil {
			return nil, false, err
		}
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
		act := LNDLAction{Alias: o.Alias, Function: o.Function}
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
