package lndlmiddle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/lionbus/lionbus/pkg/lndl"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Turn is one round's inner exchange as the loop asks for it.
type Turn struct {
	// N is the round, from 1.
	N int
	// ID is the round's stage id, "<request id>/round<N>": the
	// idempotency key of what the exchange records.
	ID string
	// Guidance replaces the caller's guidance in round 1: the LNDL
	// guidance followed by the caller's. Later rounds keep the caller's.
	Guidance string
	// Instruction replaces the caller's instruction in the rounds after
	// the first ("Round N of M." with the previous round's action results
	// and repair error); those rounds send no plain content and clear no
	// messages. Empty in round 1.
	Instruction string
}

// Loop is one invocation of the LNDL middle: what it works on, and the
// engine's parts it runs its rounds with.
type Loop struct {
	// RequestID is the middle's request id, from which the rounds' stage
	// ids derive; BranchID and Verb label the signals.
	RequestID, BranchID, Verb string
	// Budget is the most rounds (see RoundBudget).
	Budget int
	// Target is what the answer must validate against; nil for none.
	Target *lndl.Target
	// SkipValidation returns the first assembled value unvalidated.
	SkipValidation bool
	// CallerGuidance is the caller's guidance as text.
	CallerGuidance string
	// MaxActions bounds the actions one round may run.
	MaxActions int

	// Exchange makes a round's inner exchange and returns its reply.
	Exchange func(ctx context.Context, t Turn) (*Reply, error)
	// Bridge runs the actions a round selects, recorded under roundID's
	// act stage, and returns their results by alias, appending each to
	// rec.Actions; replayed says the stage was read from history.
	Bridge func(ctx context.Context, n int, roundID string, pending []lndl.Action, rec *wire.LNDLRound) (executed map[string]any, replayed bool, err error)
	// Emit emits a signal (one lndl.round per round).
	Emit func(ctx context.Context, s wire.Signal)

	// results are the action results by alias, for the whole invocation;
	// notes the scratchpad carried across rounds.
	results map[string]any
	notes   map[string]any
	rounds  []wire.LNDLRound
}

// Reply is what a round's inner exchange answered.
type Reply struct {
	// Value is the answer's text as a string; nil for no text.
	Value any
	// Replayed is set when the exchange was read back from history.
	Replayed bool
}

// Outcome is what a loop that found its answer returns.
type Outcome struct {
	// Value is the answer (validated unless SkipValidation or no target).
	Value any
	// Rounds are the records of the rounds run, the last one the success.
	Rounds []wire.LNDLRound
	// Replayed is set when every round's exchange and action stage was
	// read from history.
	Replayed bool
}

// RoundID is the stage id of round n's exchange.
func (l *Loop) RoundID(n int) string { return l.RequestID + "/round" + strconv.Itoa(n) }

// Run runs the rounds (ADR-0024 D1 to D5). The first value that validates
// is the answer; running out of rounds is a CodeParse error matching
// ErrExhausted. Errors of the exchanges and of the bridge are returned as
// they are.
func (l *Loop) Run(ctx context.Context) (*Outcome, error) {
	l.results, l.notes = map[string]any{}, map[string]any{}
	replayed := true
	var (
		lastErr error     // the last repair error
		prev    roundStep // the previous round's
	)
	for round := 1; round <= l.Budget; round++ {
		text, res, err := l.exchange(ctx, round, prev.repair, prev.executed)
		if err != nil {
			return nil, err
		}
		rec := wire.LNDLRound{Round: round, Budget: l.Budget, BudgetLeft: l.Budget - round, Actions: []wire.LNDLAction{}}
		step, err := l.step(ctx, round, text, &rec)
		if err != nil {
			return nil, err
		}
		replayed = replayed && res.Replayed && step.replayed
		if step.repair != nil {
			lastErr = step.repair
			rec.Error = wire.Truncate(step.repair.Error(), MaxRoundErrorBytes)
		}
		rec.Notes = len(l.notes)
		l.rounds = append(l.rounds, rec)
		l.Emit(ctx, wire.Signal{Type: wire.SignalLNDLRound, Verb: l.Verb, BranchID: l.BranchID, RequestID: l.RoundID(round), Round: &rec})
		if step.done {
			return &Outcome{Value: step.value, Rounds: l.rounds, Replayed: replayed}, nil
		}
		prev = step
	}
	return nil, l.exhausted(lastErr)
}

// exhausted is the error of a loop that ran out of rounds.
func (l *Loop) exhausted(lastErr error) error {
	if lastErr == nil {
		return &wire.Error{Code: wire.CodeParse, Err: ErrExhausted, Message: fmt.Sprintf(
			"lndl: no valid result in %d round(s) (round_budget %d): no OUT{} was produced", l.Budget, l.Budget)}
	}
	return &wire.Error{Code: wire.CodeParse, Err: fmt.Errorf("%w: %w", ErrExhausted, lastErr), Message: fmt.Sprintf(
		"lndl: no valid result in %d round(s) (round_budget %d); last error: %s", l.Budget, l.Budget,
		wire.Truncate(lastErr.Error(), MaxRoundErrorBytes))}
}

// exchange makes round n's inner exchange and returns the response text.
// The first round sends the caller's instruction with the LNDL guidance;
// later ones "Round N of M." with the previous round's action results
// and repair error, and the caller's guidance alone.
func (l *Loop) exchange(ctx context.Context, n int, repair error, results map[string]any) (string, *Reply, error) {
	t := Turn{N: n, ID: l.RoundID(n)}
	if n == 1 {
		t.Guidance = lndl.Guidance(l.Target, l.CallerGuidance)
	} else {
		t.Instruction = lndl.NextRoundPrompt(n, l.Budget, l.Target, results, repair)
	}
	res, err := l.Exchange(ctx, t)
	if err != nil {
		return "", nil, err
	}
	if res == nil {
		return "", nil, wire.Errorf(wire.CodeInternal, "middle %s: the inner exchange of round %d returned no result", Name, n)
	}
	text, err := rawText(res.Value)
	if err != nil {
		return "", nil, wire.Errorf(wire.CodeInternal, "middle %s: round %d: %v", Name, n, err)
	}
	return text, res, nil
}

// rawText reads an inner exchange's value: a string is the text; nil
// (null) is no text, which every kind of model answers the same way, as a
// continue round (as lionbus intends it).
func rawText(v any) (string, error) {
	switch t := v.(type) {
	case nil:
		return "", nil
	case string:
		return t, nil
	}
	b, _ := json.Marshal(v)
	return "", fmt.Errorf("the inner exchange answered %s, not text", wire.Truncate(string(b), 64))
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

// step classifies round n's text, runs the actions its shape selects and
// decides. rec gets the outcome and the actions. An error ends the
// invocation.
func (l *Loop) step(ctx context.Context, n int, text string, rec *wire.LNDLRound) (roundStep, error) {
	rr := lndl.Round(lndl.RoundInput{Text: text, Target: l.Target, ActionResults: l.results, Notes: l.notes})
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
	if e := CheckNotes(rr.Notes); e != nil {
		return retry(e)
	}
	if len(rr.Pending) > l.MaxActions {
		return retry(fmt.Errorf("%w: %d lacts, at most %d run in one round", ErrActions, len(rr.Pending), l.MaxActions))
	}
	l.notes = rr.Notes
	var executed map[string]any
	replayed := true
	if len(rr.Pending) > 0 {
		var err error
		if executed, replayed, err = l.Bridge(ctx, n, l.RoundID(n), rr.Pending, rec); err != nil {
			return roundStep{}, err
		}
	}
	st := roundStep{executed: executed, replayed: replayed}
	// Results by alias, for the rest of the invocation; a continue round
	// overwrites an alias's earlier result.
	for alias, v := range executed {
		l.results[alias] = v
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
		return roundStep{}, wire.Errorf(wire.CodeInternal, "middle %s: round %d: %v", Name, n, err)
	}
	// skip_validation or no target: the assembled value, results
	// substituted.
	if l.SkipValidation || l.Target == nil {
		rec.Outcome, st.done, st.value = RoundSuccess, true, resolved
		return st, nil
	}
	valid, verr := l.Target.Validate(resolved)
	switch {
	case verr == nil:
		rec.Outcome, st.done, st.value = RoundSuccess, true, valid
		return st, nil
	case errors.Is(verr, lndl.ErrValidation):
		// Never returned partially: repair text for the next round.
		rec.Outcome, st.repair = RoundRejected, verr
		return st, nil
	}
	return roundStep{}, &wire.Error{Code: wire.CodeInvalidRequest, Err: verr, Message: fmt.Sprintf(
		"middle %s: the target cannot validate: %v", Name, verr)}
}

// CheckNotes checks the notes a round leaves against the bounds.
func CheckNotes(notes map[string]any) error {
	if len(notes) > MaxNotes {
		return fmt.Errorf("%w: %d notes, at most %d are kept across rounds", ErrNotes, len(notes), MaxNotes)
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
	if size > MaxNotesBytes {
		return fmt.Errorf("%w: the notes hold %d bytes, at most %d are kept across rounds", ErrNotes, size, MaxNotesBytes)
	}
	return nil
}
