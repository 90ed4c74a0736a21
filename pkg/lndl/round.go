package lndl

import (
	"errors"
	"fmt"
	"strings"
)

// Outcome classifies one model response of the multi-round adapter
// (docs/decisions.md, ADR-0024 D3, docs/lndl.md#rounds).
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

	// What Resolve needs, set for a success: the fields that can change
	// (a lact, a result or an undeclared name in them) with their values copied out of the syntax
	// tree, the declarations those name and the placeholders of their
	// lacts (by index in d), all read only. The keys of the fields are
	// those of Assembled, in order.
	resolvable bool
	dyn        []dynField
	d          *decls
	calls      []*Placeholder
	target     *Target
	known      map[string]any
}

// dynField is an OUT field whose value refers to an action or a result:
// its position and value.
type dynField struct {
	i int
	v Value
}

// ErrNotSuccess is returned by [RoundResult.Resolve] for a round whose
// outcome is not OutcomeSuccess.
var ErrNotSuccess = errors.New("lndl: round outcome is not success")

// Round classifies one model response (docs/lndl.md#rounds):
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
	failed := func(outcome Outcome, err error, notes map[string]any) *RoundResult {
		if notes == nil {
			notes = copyNotes(in.Notes)
		}
		return &RoundResult{Outcome: outcome, Err: err, Notes: notes, target: in.Target}
	}
	if len(in.Text) > MaxInputBytes {
		return failed(OutcomeRetry, &ParseError{Line: 1, Column: 1, Reason: fmt.Sprintf(
			"Input too large - %d bytes exceeds the limit of %d", len(in.Text), MaxInputBytes)}, nil)
	}
	var buf [4]string
	blocks := extractInto(crlfToLF(in.Text), buf[:0])
	if len(blocks) == 0 {
		return failed(OutcomeContinue, nil, nil)
	}
	// The program lives in pooled storage that is released when Round
	// returns: nothing Round returns refers to it.
	sc := getScratch()
	defer sc.release()
	block, count := repairTagsCounting(strings.Join(blocks, "\n\n"))
	prog, err := parseWith(block, count, sc)
	if err != nil {
		return failed(OutcomeRetry, err, nil)
	}
	d := &sc.d
	d.initWith(prog, sc.contents)
	notes := mergeNotesBoxed(in.Notes, prog, d.contents)
	if prog.Out == nil {
		pending := make([]Action, 0, len(prog.Lacts))
		for i := range prog.Lacts {
			act, err := parseAction(prog.Lacts[i].Alias, prog.Lacts[i].Call)
			if err != nil {
				return failed(OutcomeRetry, err, notes)
			}
			pending = append(pending, act)
		}
		res := failed(OutcomeContinue, nil, notes)
		res.Pending = pending
		return res
	}
	fields := prog.Out.keyedFields((&binder{d: d, target: in.Target}).bind)
	a := getAssembler(d, in.Target, in.ActionResults, notes)
	defer a.release()
	obj, err := a.assemble(fields)
	if err != nil {
		return failed(OutcomeRetry, err, notes)
	}
	// Placeholders are only in the fields that refer to a lact, a
	// result or a note; the others are not walked.
	placeholders := 0
	for _, ph := range a.calls {
		if ph != nil {
			placeholders++
		}
	}
	res, kept, pending := newSuccess(len(a.dynFields) > 0, placeholders)
	res.Outcome, res.Notes, res.Assembled = OutcomeSuccess, notes, obj
	res.target, res.known = in.Target, in.ActionResults
	res.keepForResolve(kept, d, fields, a.dynFields, a.calls)
	c := pendingCollector{pending: pending}
	for _, i := range a.anyFields {
		c.walk(obj.pairs[i].val, 1)
	}
	res.Pending = c.pending
	return res
}

// successResult is a successful round's result with what it keeps for
// Resolve and room for its first pending action, made together.
type successResult struct {
	res     RoundResult
	kept    keptDecls
	pending [1]Action
}

// newSuccess returns a result to fill, the storage of what it keeps for
// Resolve when some field can change (else nil), and an empty slice with
// room for the pending actions.
func newSuccess(dynamic bool, pending int) (*RoundResult, *keptDecls, []Action) {
	if !dynamic {
		return new(RoundResult), nil, make([]Action, 0, pending)
	}
	s := new(successResult)
	if pending <= len(s.pending) {
		return &s.res, &s.kept, s.pending[:0:len(s.pending)]
	}
	return &s.res, &s.kept, make([]Action, 0, pending)
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
	if r == nil || r.Outcome != OutcomeSuccess || !r.resolvable {
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
	// others keep the value of the first assembly. The keys are those of
	// the first assembly, so the required-field check holds.
	first := r.Assembled.(*Object)
	out := NewObject(len(first.pairs))
	out.pairs = append(out.pairs, first.pairs...)
	if len(out.pairs) > objectIndexMin {
		out.buildIndex()
	}
	for j := range r.dyn {
		f := &r.dyn[j]
		if len(executed) == 0 || !refersTo(&f.v, executed) {
			continue
		}
		key := out.pairs[f.i].key
		var ft *Type
		if r.target != nil {
			if spec := r.target.Model.fieldNear(key, f.i); spec != nil {
				ft = shapeType(spec.Type)
			}
		}
		v, err := a.assembleValue(key, f.v, ft)
		if err != nil {
			return nil, err
		}
		out.pairs[f.i].val = v
	}
	return out, nil
}

// keepForResolve copies out of the round's syntax tree what Resolve
// needs, into k: the fields that can change (dyn, as the assembly found
// them), and the declarations they name, with their boxed bodies and
// parsed calls. k may be nil when dyn is empty.
func (r *RoundResult) keepForResolve(k *keptDecls, d *decls, fields []OutEntry, dyn []int, calls []*Placeholder) {
	r.resolvable = true
	if len(dyn) == 0 {
		r.d = &noDecls
		return
	}
	k.d.prog = &k.prog
	k.prog.Lacts, r.calls, r.dyn, k.free = k.lacts[:0], k.calls[:0], k.dyn[:0], k.items[:0]
	for _, i := range dyn {
		r.dyn = append(r.dyn, dynField{i: i, v: k.copyValue(fields[i].Value)})
	}
	kept := &k.d
	r.d = kept
	// The declarations the fields name, each once, in a program of
	// their own, indexed once they are more than smallDecls.
	var add func(v *Value)
	add = func(v *Value) {
		switch v.Kind {
		case ValueList:
			for i := range v.List {
				add(&v.List[i])
			}
			return
		case ValueRef:
		default:
			return
		}
		if _, note := noteKey(v.Text); note {
			return
		}
		if _, ok := kept.lookup(v.Text); ok {
			return
		}
		di, ok := d.lookup(v.Text)
		if !ok {
			return
		}
		prog := kept.prog
		if di >= 0 {
			prog.Lvars = append(prog.Lvars, d.prog.Lvars[di])
			kept.contents = append(kept.contents, d.contents[di])
		} else {
			prog.Lacts = append(prog.Lacts, d.prog.Lacts[-di-1])
			var ph *Placeholder
			if calls != nil {
				ph = calls[-di-1]
			}
			r.calls = append(r.calls, ph)
		}
		switch {
		case kept.index == nil && len(prog.Lvars)+len(prog.Lacts) > smallDecls:
			kept.index = indexAliases(prog)
		case kept.index != nil && di >= 0:
			kept.index[v.Text] = len(prog.Lvars) - 1
		case kept.index != nil:
			kept.index[v.Text] = -len(prog.Lacts)
		}
	}
	for i := range r.dyn {
		add(&r.dyn[i].v)
	}
}

// keptDecls holds what a RoundResult keeps for Resolve, with room for
// the usual one field referring to one lact with a short list, in one
// allocation.
type keptDecls struct {
	d     decls
	prog  Program
	dyn   [1]dynField
	lacts [1]Lact
	calls [1]*Placeholder
	items [2]Value
	// free is the room left in items.
	free []Value
}

// copyValue returns a copy of v that shares no list with it, carving the
// lists from k.items while they fit.
func (k *keptDecls) copyValue(v Value) Value {
	if v.Kind != ValueList || v.List == nil {
		return v
	}
	n := len(v.List)
	var list []Value
	if used := len(k.free); cap(k.free)-used >= n {
		k.free = k.free[:used+n]
		list = k.free[used : used+n : used+n]
	} else {
		list = make([]Value, n)
	}
	for i := range v.List {
		list[i] = k.copyValue(v.List[i])
	}
	v.List = list
	return v
}

// noDecls declares nothing.
var noDecls = decls{prog: &Program{}}

func copyNotes(notes map[string]any) map[string]any {
	out := make(map[string]any, len(notes))
	for k, v := range notes {
		out[k] = v
	}
	return out
}

// maxPlaceholderDepth is how deep pendingCollector looks: placeholders sit
// at most a few levels down (a field, a list item, a model field in a
// list item, a group), so deeper action results are not walked.
const maxPlaceholderDepth = 8

// pendingScan is how many pending actions pendingCollector scans for a
// repeated alias before it indexes them.
const pendingScan = 16

// pendingCollector gathers the actions of placeholders, each alias once.
type pendingCollector struct {
	pending []Action
	// seen holds the aliases once pending is longer than pendingScan;
	// before, pending is scanned.
	seen map[string]bool
}

func (c *pendingCollector) isNew(name string) bool {
	if c.seen != nil {
		if c.seen[name] {
			return false
		}
		c.seen[name] = true
		return true
	}
	for i := range c.pending {
		if c.pending[i].Name == name {
			return false
		}
	}
	if len(c.pending) == pendingScan {
		c.seen = make(map[string]bool, 2*pendingScan)
		for i := range c.pending {
			c.seen[c.pending[i].Name] = true
		}
		c.seen[name] = true
	}
	return true
}

func (c *pendingCollector) walk(v any, depth int) {
	if depth > maxPlaceholderDepth {
		return
	}
	switch x := v.(type) {
	case *Placeholder:
		if c.isNew(x.Action.Name) {
			c.pending = append(c.pending, x.Action)
		}
	case *Object:
		for i := range x.pairs {
			switch x.pairs[i].val.(type) {
			case *Placeholder, *Object, []any:
				c.walk(x.pairs[i].val, depth+1)
			}
		}
	case []any:
		for _, e := range x {
			switch e.(type) {
			case *Placeholder, *Object, []any:
				c.walk(e, depth+1)
			}
		}
	}
}
