package lndl

import (
	"errors"
	"fmt"
	"strings"
)

// Outcome classifies one model response of the multi-round adapter
// (ADR-0024 D3, LNDL.md section 7).
type Outcome int

// Round outcomes.
const (
	// OutcomeContinue: no lndl block, or no OUT block. Every lact of the
	// response is pending.
	OutcomeContinue Outcome = iota
	// OutcomeRetry: the response does not parse or assemble; Err says why
	// and is the repair message for the next round.
	OutcomeRetry
	// OutcomeSuccess: a success candidate. The pending actions are the
	// placeholders reachable from the assembled value; after they run,
	// [RoundResult.Resolve] gives the value to validate.
	OutcomeSuccess
)

// String returns "continue", "retry" or "success".
func (o Outcome) String() string {
	switch o {
	case OutcomeContinue:
		return "continue"
	case OutcomeRetry:
		return "retry"
	case OutcomeSuccess:
		return "success"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// RoundInput is one model response and the state of earlier rounds.
type RoundInput struct {
	// Text is the raw model response.
	Text string
	// Target is the structured result to assemble; nil for none.
	Target *Target
	// ActionResults are the results of actions executed in earlier
	// rounds, by alias. They are read, never modified.
	ActionResults map[string]any
	// Notes is the scratchpad left by earlier rounds (LNDL-D13). It is
	// read, never modified.
	Notes map[string]any
}

// RoundResult is the classification of one response.
type RoundResult struct {
	Outcome Outcome
	// Pending are the actions to run before the next step: for a
	// continue, every lact of the response in declaration order; for a
	// success, the placeholders reachable from Assembled in depth-first
	// order, each alias once (LNDL-D8).
	Pending []Action
	// Assembled is the assembled value of a success (an *Object), with a
	// *Placeholder for every action that has not run; nil otherwise.
	Assembled any
	// Err is the LNDL error of a retry; nil otherwise.
	Err error
	// Notes is the scratchpad after this round: a copy of the input
	// notes overwritten by this response's note lvars, or of the input
	// notes alone when the response has no lndl block or does not parse.
	// Never nil. The adapter passes it to the next round.
	Notes map[string]any

	prog   *Program
	d      *decls
	fields []OutEntry
	target *Target
	known  map[string]any
	// calls are the lact calls parsed by the assembly, by lact index;
	// read only.
	calls []*Placeholder
	// decls is the storage of d.
	decls decls
}

// ErrNotSuccess is returned by [RoundResult.Resolve] for a round whose
// outcome is not OutcomeSuccess.
var ErrNotSuccess = errors.New("lndl: round outcome is not success")

// Round classifies one model response (LNDL.md section 7):
//
//  1. "\r\n" becomes "\n" and the lndl blocks are extracted; none gives
//     a continue with nothing pending.
//  2. The blocks are joined with a blank line, normalized without
//     extracting again (LNDL-D10) and parsed; a ParseError is a retry.
//  3. The notes are merged with the response's note lvars (LNDL-D13).
//  4. Without OUT: a continue with every lact pending (an invalid call
//     body is a retry).
//  5. With OUT: assembly against the target; an LNDL error is a retry,
//     else a success candidate whose pending actions are the placeholders
//     reachable from the assembled value.
//
// Bounds: a response longer than [MaxInputBytes] is a retry with a
// ParseError ("Input too large") before anything else; the parser's
// bounds ([MaxDeclarations], [MaxOutEntries], [MaxDepth]) and the call
// parser's ([MaxCallBodyLen], [MaxCallDepth]) apply. Each lact is parsed
// at most once per assembly however often it is referenced, each object
// result is turned into JSON text at most once, and splitting a string
// yields at most one item per byte, so the assembled value is linear in
// the response plus the results it references. Round's time is linear in
// the size of the response.
//
// Round is pure: it reads its input and modifies nothing, so rounds may
// run concurrently.
func Round(in RoundInput) *RoundResult {
	res := &RoundResult{target: in.Target}
	if len(in.Text) > MaxInputBytes {
		res.Notes = copyNotes(in.Notes)
		return res.retry(&ParseError{Line: 1, Column: 1, Reason: fmt.Sprintf(
			"Input too large - %d bytes exceeds the limit of %d", len(in.Text), MaxInputBytes)})
	}
	blocks := Extract(in.Text)
	if len(blocks) == 0 {
		res.Notes = copyNotes(in.Notes)
		res.Outcome = OutcomeContinue
		return res
	}
	block, count := repairTagsCounting(strings.Join(blocks, "\n\n"))
	prog, err := parse(block, true, count)
	if err != nil {
		res.Notes = copyNotes(in.Notes)
		return res.retry(err)
	}
	res.Notes = mergeNotes(in.Notes, prog)
	if prog.Out == nil {
		res.Outcome = OutcomeContinue
		res.Pending = make([]Action, 0, len(prog.Lacts))
		for i := range prog.Lacts {
			act, err := parseAction(prog.Lacts[i].Alias, prog.Lacts[i].Call)
			if err != nil {
				res.Pending = nil
				return res.retry(err)
			}
			res.Pending = append(res.Pending, act)
		}
		return res
	}
	d := &res.decls
	d.init(prog)
	fields := prog.Out.keyedFields((&binder{d: d, target: in.Target}).bind)
	a := getAssembler(d, in.Target, in.ActionResults, res.Notes)
	obj, err := a.assemble(fields)
	calls := a.calls
	a.release()
	if err != nil {
		return res.retry(err)
	}
	res.prog, res.d, res.fields, res.known, res.calls = prog, d, fields, in.ActionResults, calls
	res.Outcome = OutcomeSuccess
	res.Assembled = obj
	res.Pending = collectPending(obj)
	return res
}

func (r *RoundResult) retry(err error) *RoundResult {
	r.Outcome = OutcomeRetry
	r.Err = err
	return r
}

// Resolve assembles the response again with executed — the results of
// this round's pending actions, by alias — added to the earlier results
// (LNDL-D7, LNDL-D8): every result is placed and coerced like a result
// known before the round, and fills every place its alias appears. A
// placeholder remains only for an action without a result. The value is
// the one to validate (see [Target.Validate]). Fields that refer to no
// executed action are not assembled again: their values are those of
// r.Assembled, shared, so treat both as read-only. Resolve reads r.Notes
// as the scratchpad and modifies nothing; it may be called more than
// once, also concurrently.
func (r *RoundResult) Resolve(executed map[string]any) (any, error) {
	if r == nil || r.Outcome != OutcomeSuccess || r.prog == nil {
		return nil, ErrNotSuccess
	}
	known := r.known
	switch {
	case len(executed) == 0:
	case len(r.known) == 0:
		// Nothing to merge: the assembly only reads the results.
		known = executed
	default:
		known = make(map[string]any, len(r.known)+len(executed))
		for k, v := range r.known {
			known[k] = v
		}
		for k, v := range executed {
			known[k] = v
		}
	}
	a := getAssembler(r.d, r.target, known, r.Notes)
	defer a.release()
	a.prevCalls = r.calls
	// Only the fields that refer to an executed action can change; the
	// others keep the value of the first assembly.
	first, _ := r.Assembled.(*Object)
	changed := newRefNames(executed)
	obj, err := a.reassemble(r.fields, first, func(i int) bool {
		return !changed.refersTo(&r.fields[i].Value)
	})
	if err != nil {
		return nil, err
	}
	return obj, nil
}

func copyNotes(notes map[string]any) map[string]any {
	out := make(map[string]any, len(notes))
	for k, v := range notes {
		out[k] = v
	}
	return out
}

// maxPlaceholderDepth is how deep collectPending looks: placeholders sit
// at most a few levels down (a field, a list item, a model field in a
// list item, a group), so deeper action results are not walked.
const maxPlaceholderDepth = 8

// pendingScan is how many pending actions collectPending scans for a
// repeated alias before it indexes them.
const pendingScan = 16

// collectPending returns the actions of the placeholders in v, depth
// first (arrays in order, objects in insertion order), each alias once.
func collectPending(v any) []Action {
	pending := []Action{}
	// The aliases seen: found by scanning pending while it is short, in
	// a map beyond.
	var seen map[string]bool
	isNew := func(name string) bool {
		if seen != nil {
			if seen[name] {
				return false
			}
			seen[name] = true
			return true
		}
		for i := range pending {
			if pending[i].Name == name {
				return false
			}
		}
		if len(pending) == pendingScan {
			seen = make(map[string]bool, 2*pendingScan)
			for i := range pending {
				seen[pending[i].Name] = true
			}
			seen[name] = true
		}
		return true
	}
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > maxPlaceholderDepth {
			return
		}
		switch x := v.(type) {
		case *Placeholder:
			if isNew(x.Action.Name) {
				pending = append(pending, x.Action)
			}
		case *Object:
			x.Range(func(_ string, e any) bool {
				walk(e, depth+1)
				return true
			})
		case []any:
			for _, e := range x {
				walk(e, depth+1)
			}
		}
	}
	walk(v, 0)
	return pending
}
