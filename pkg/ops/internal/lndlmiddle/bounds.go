// Package lndlmiddle is the round loop of operate's LNDL middle (ADR-0024,
// docs/lndl.md#the-operate-adapter): a bounded series of inner exchanges
// whose LNDL answers are classified by lndl.Round, the actions each round
// selects run through the caller's bridge, until a value validates against
// the target. The engine (pkg/ops) supplies the exchanges, the action
// stage and the signals ([Loop]); this package decides the rounds.
package lndlmiddle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/lionbus/lionbus/pkg/lndl"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Name is the middle's name ("middle": "lndl"), in its error messages.
const Name = "lndl"

// Bounds of the LNDL middle (ADR-0024, docs/lndl.md#the-operate-adapter).
const (
	// DefaultRoundBudget is the round budget of a request that sets none: at
	// most three model exchanges.
	DefaultRoundBudget = 3
	// MaxRoundBudget is the largest round_budget a request may set; a
	// larger one, zero, a negative or a non-integer budget is an invalid
	// request, refused before any model call.
	MaxRoundBudget = 10
	// MaxNotes bounds the notes (note.X) one invocation keeps across
	// its rounds.
	MaxNotes = 64
	// MaxNotesBytes bounds the size of those notes: the sum of the
	// lengths of their names and their values (as text).
	MaxNotesBytes = 64 << 10
	// MaxRoundErrorBytes bounds the error text a round reports in its
	// lndl.round signal and in the result's lndl_rounds.
	MaxRoundErrorBytes = lndl.MaxPromptErrorBytes
)

// Outcomes of a round as [wire.LNDLRound] reports them.
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
	// ErrExhausted is matched by the error of an LNDL middle whose
	// rounds ran out without a valid result. The error is a
	// CodeParse *wire.Error naming the budget and the last round error,
	// which it also wraps.
	ErrExhausted = errors.New("ops: lndl round budget exhausted")
	// ErrNotes is the repair error of a round whose notes exceed
	// [MaxNotes] or [MaxNotesBytes]: the round is a retry and its
	// notes are not kept.
	ErrNotes = errors.New("ops: lndl notes exceed their bounds")
	// ErrActions is the repair error of a round asking for more actions
	// than the loop's MaxActions: the round is a retry and runs none.
	ErrActions = errors.New("ops: lndl round asks for too many actions")
)

// RoundBudget applies the default to n and checks it.
func RoundBudget(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultRoundBudget, nil
	case n < 1 || n > MaxRoundBudget:
		return 0, wire.Errorf(wire.CodeInvalidRequest, "round_budget must be an integer from 1 to %d, got %d", MaxRoundBudget, n)
	}
	return n, nil
}

// ParseRoundBudget reads a request's round_budget: a JSON integer from 1
// to MaxRoundBudget (2.0 counts as 2). Anything else, null included, is a
// CodeInvalidRequest error.
func ParseRoundBudget(raw json.RawMessage) (int, error) {
	bad := func() (int, error) {
		return 0, wire.Errorf(wire.CodeInvalidRequest, "data.round_budget must be an integer from 1 to %d, got %s",
			MaxRoundBudget, wire.Truncate(string(bytes.TrimSpace(raw)), 64))
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

// Target parses the target of the rounds from format, the generated
// schema operate asks the model for, its properties ordered as in caller
// (the caller's response_format as sent); nil for no response format.
func Target(format, caller json.RawMessage) (*lndl.Target, error) {
	if len(bytes.TrimSpace(format)) == 0 || string(bytes.TrimSpace(format)) == "null" {
		return nil, nil
	}
	ordered, err := orderLike(format, caller)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidRequest, "middle %s: response_format: %v", Name, err)
	}
	t, err := lndl.ParseTarget(ordered)
	if err != nil {
		return nil, &wire.Error{Code: wire.CodeInvalidRequest, Err: err, Message: fmt.Sprintf(
			"middle %s: response_format cannot be an LNDL target: %v", Name, err)}
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
