package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Usage counts the tokens a request used, summed over its model calls.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
	// CostUSD is what the calls cost in US dollars by the worker's price
	// table (docs/budgets.md); 0 when no price is known.
	CostUSD float64 `json:"cost_usd,omitempty"`
}

// Result is the outcome of a successful request, whatever its verb: the
// `data` of a lionbus.V.result event. The typed result of each verb
// ([CommunicateResult], ...) decodes the same data with its value typed.
//
// Result holds the fields every verb shares. What only some verbs answer
// (operate's lndl_rounds, react's analyses, a persisted run's run_log) is
// in Extra, as a JSON object whose keys are written beside the shared
// ones; [OperateExtra], [ReactExtra] and [RunExtra] are its typed forms.
type Result struct {
	// Value is the verb's return value as JSON.
	Value json.RawMessage `json:"value"`
	// BranchID is the branch the request acted on, if any.
	BranchID string `json:"branch_id,omitempty"`
	// Usage is the token usage of the request's model calls, if any.
	Usage *Usage `json:"usage,omitempty"`
	// DurationMS is how long the request ran, in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// Replayed is true when the result was read back from history because
	// the request had already been committed.
	Replayed bool `json:"replayed,omitempty"`
	// Extra is the verb's own part of the result: a JSON object whose
	// keys are top-level keys of the result's data, none of them a shared
	// field's; nil when the verb answered none. Set it with
	// [Result.SetExtra] and read it with [Result.DecodeExtra]. Decoding a
	// result puts every key that is not a shared field here (keys match
	// exactly, as in the schemas), so a result decoded and encoded again
	// keeps them, whatever its verb.
	Extra json.RawMessage `json:"-"`
}

// ErrExtraNotObject is returned when a result's Extra is not a JSON
// object or names a field every result has.
var ErrExtraNotObject = errors.New("wire: a result's extra must be a JSON object without the shared fields")

// sharedResult is Result without its JSON methods: the shared fields.
type sharedResult Result

// isShared reports whether key is the JSON name of a shared field.
func isShared(key string) bool {
	switch key {
	case "value", "branch_id", "usage", "duration_ms", "replayed":
		return true
	}
	return false
}

// SetExtra sets r's Extra to v (one of [OperateExtra], [ReactExtra],
// [RunExtra], or any struct or map of the verb's own keys) encoded as
// JSON; a v that encodes to an empty object or null clears it.
func (r *Result) SetExtra(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("wire: a result's extra: %w", err)
	}
	if string(b) == "null" || string(b) == "{}" {
		r.Extra = nil
		return nil
	}
	if err := checkExtra(b); err != nil {
		return err
	}
	r.Extra = b
	return nil
}

// DecodeExtra decodes r's Extra into v (a pointer to [OperateExtra], ...);
// with no Extra it leaves v as it is.
func (r *Result) DecodeExtra(v any) error {
	if len(r.Extra) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.Extra, v); err != nil {
		return fmt.Errorf("wire: a result's extra: %w", err)
	}
	return nil
}

// checkExtra reports ErrExtraNotObject unless b is a JSON object without a
// shared field's key.
func checkExtra(b []byte) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil || keys == nil {
		return ErrExtraNotObject
	}
	for k := range keys {
		if isShared(k) {
			return fmt.Errorf("%w: %q", ErrExtraNotObject, k)
		}
	}
	return nil
}

// MarshalJSON encodes the shared fields, then Extra's keys in its order.
func (r Result) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(sharedResult(r))
	if err != nil || len(r.Extra) == 0 {
		return b, err
	}
	if err := checkExtra(r.Extra); err != nil {
		return nil, err
	}
	x := bytes.TrimSpace(r.Extra)
	inner := bytes.TrimSpace(x[1 : len(x)-1])
	if len(inner) == 0 {
		return b, nil
	}
	out := make([]byte, 0, len(b)+len(inner)+1)
	out = append(out, b[:len(b)-1]...)
	out = append(out, ',')
	out = append(out, inner...)
	return append(out, '}'), nil
}

// UnmarshalJSON decodes the shared fields and keeps every other key in
// Extra (ordered by key). A null leaves r as it is.
func (r *Result) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	if fields == nil {
		return nil // null
	}
	var extra map[string]json.RawMessage
	for k, v := range fields {
		var err error
		switch k {
		case "value":
			r.Value = v
		case "branch_id":
			err = json.Unmarshal(v, &r.BranchID)
		case "usage":
			err = json.Unmarshal(v, &r.Usage)
		case "duration_ms":
			err = json.Unmarshal(v, &r.DurationMS)
		case "replayed":
			err = json.Unmarshal(v, &r.Replayed)
		default:
			if extra == nil {
				extra = map[string]json.RawMessage{}
			}
			extra[k] = v
		}
		if err != nil {
			return fmt.Errorf("wire: result field %s: %w", k, err)
		}
	}
	if extra == nil {
		r.Extra = nil
		return nil
	}
	x, err := json.Marshal(extra)
	if err != nil {
		return fmt.Errorf("wire: a result's extra: %w", err)
	}
	r.Extra = x
	return nil
}

// LNDLRound is what one round of the LNDL middle did: the data of its
// lionbus.lndl.round signal and an item of an operate result's lndl_rounds.
type LNDLRound struct {
	// Round is the round's number, from 1.
	Round int `json:"round"`
	// Budget is the invocation's round budget.
	Budget int `json:"budget"`
	// BudgetLeft is how many rounds remain after this one.
	BudgetLeft int `json:"budget_left"`
	// Outcome is "continue", "retry", "rejected" or "success".
	Outcome string `json:"outcome"`
	// Error is the round's repair error (retry, rejected), bounded.
	Error string `json:"error,omitempty"`
	// Actions are the actions the round ran, in the order they were
	// asked for; never nil.
	Actions []LNDLAction `json:"actions"`
	// Notes is how many notes the invocation keeps after the round.
	Notes int `json:"notes"`
}

// LNDLAction is one action a round ran.
type LNDLAction struct {
	// Alias is the lact's alias.
	Alias string `json:"alias"`
	// Function is the tool called.
	Function string `json:"function"`
	// ErrorCode is the code of the call's error value, when it failed (a
	// denial, the tool's own failure, the invoker's).
	ErrorCode string `json:"error_code,omitempty"`
}

// RunLogLocation says where a run with stream_persist kept its log: the
// directory and the subjects of the live chunk log and of the snapshots.
type RunLogLocation struct {
	// Dir is the run log directory.
	Dir string `json:"dir"`
	// Chunks is where the live chunk log is (removed after a clean end).
	Chunks string `json:"chunks,omitempty"`
	// Snapshot is where the branch snapshots are.
	Snapshot string `json:"snapshot,omitempty"`
}

// RunValue is the value of a run result.
type RunValue struct {
	// Text is the assistant responses that have text, joined with a blank
	// line; nil when there were none.
	Text *string `json:"text"`
	// Responses are the texts of the recorded assistant responses, in order.
	Responses []string `json:"responses"`
	// SessionID is the provider session the next run resumes, if any.
	SessionID string `json:"session_id,omitempty"`
	// Chunks is the number of chunks the run emitted: the seq of its last.
	Chunks uint64 `json:"chunks"`
	// Canceled is true when the client cancelled the run (it ended
	// cleanly, with what arrived until then).
	Canceled bool `json:"canceled,omitempty"`
}

// HistoryPage is the value of a branch.history result.
type HistoryPage struct {
	// Events are the history events with Seq > after, oldest first.
	Events []Event `json:"events"`
	// Next is the Seq of the last returned event (the "after" of the next
	// page), or the request's after when no event was returned.
	Next uint64 `json:"next"`
	// More is true when the page is full, so there may be more events.
	More bool `json:"more"`
}
