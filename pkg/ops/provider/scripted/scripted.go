// Package scripted is a deterministic model provider for tests and demos.
//
// Two model references are understood:
//
//   - "scripted:echo" answers every call with the current instruction's
//     text (the "instruction" field, a non-string as compact JSON, or the
//     plain_content).
//   - {"provider": "scripted", "replies": [...]} answers the replies in
//     order, one per model call on the branch. A reply is a string (the
//     text) or an object {"text", "tool_calls", "usage", "error"}.
//     Running out of replies is a final provider error.
//
// The provider also streams ([Provider.Stream], an [ops.StreamingProvider]):
// the same reply, cut into one text chunk per word.
//
// # Position in the script
//
// The reply used for a call is replies[call.Index], where [ops.Call.Index]
// is the number of model calls recorded in the branch's committed history
// (ops.Branch.ModelCalls) plus the calls the current operation has already
// made. It is derived from persisted state only, so every worker, in any
// process, picks the same reply for the same call. Calls that are not
// recorded (chat, or an operation that failed before committing) do not
// advance the script.
//
// The index is read from the branch as the operation loaded it, which has
// two consequences (limitations of a script keyed by position):
//
//   - Two operations running concurrently on one branch load the same
//     ModelCalls, so both get the same reply; both commit (one after the
//     other), and the script then advances by both, skipping a reply.
//     Scripts meant to be followed reply by reply need the operations on
//     one branch to run one at a time.
//   - A redelivered request picks the same replies as its first delivery
//     when nothing else committed on the branch in between (always the
//     case for a request redelivered after it committed: it is answered
//     from history without calling the model). If another operation
//     committed in between, the redelivery starts further along the
//     script.
//
// # Scripted errors
//
// A reply's "error" is a string (the message of a final provider error) or
// an object {"message", "temporary", "attempts"}. With "temporary": true the
// error is temporary (worth retrying). With "attempts": N > 0 the error is
// returned only while the request's delivery attempt is at most N; later
// attempts get the reply's text, which lets tests script a failure that a
// retry overcomes.
package scripted

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lionbus/lionbus/pkg/ops"
)

// Name is the provider name to register the provider under.
const Name = "scripted"

// Provider is the scripted provider. The zero value is ready to use.
type Provider struct{}

var _ ops.Provider = Provider{}

// New returns a scripted provider.
func New() Provider { return Provider{} }

// Register adds the scripted provider to p under [Name].
func Register(p *ops.Providers) error { return p.Register(Name, New()) }

// Reply is one scripted answer.
type Reply struct {
	Text      string         `json:"text"`
	ToolCalls []ops.ToolCall `json:"tool_calls,omitempty"`
	Usage     *ops.Usage     `json:"usage,omitempty"`
	Error     *ReplyError    `json:"error,omitempty"`
}

// ReplyError is a scripted provider failure.
type ReplyError struct {
	Message   string `json:"message"`
	Temporary bool   `json:"temporary,omitempty"`
	Attempts  int    `json:"attempts,omitempty"`
}

// UnmarshalJSON accepts a string (the message) or an object.
func (e *ReplyError) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*e = ReplyError{Message: s}
		return nil
	}
	type plain ReplyError
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("error must be a string or an object {message, temporary, attempts}: %w", err)
	}
	*e = ReplyError(p)
	return nil
}

// UnmarshalJSON accepts a string (the text) or an object.
func (r *Reply) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*r = Reply{Text: s}
		return nil
	}
	type plain Reply
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("a reply must be a string or an object {text, tool_calls, usage, error}: %w", err)
	}
	*r = Reply(p)
	return nil
}

// Complete answers call from the script of call.Model.
func (Provider) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	raw, hasReplies := call.Model.Options["replies"]
	if !hasReplies {
		if call.Model.Model != "echo" {
			return nil, &ops.ProviderError{Provider: Name, Message: fmt.Sprintf(
				"model %q is unknown: use \"scripted:echo\" or {\"provider\":\"scripted\",\"replies\":[...]}", call.Model.Model)}
		}
		return completion(call, Reply{Text: call.Instruction})
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, &ops.ProviderError{Provider: Name, Message: "replies cannot be encoded", Err: err}
	}
	var replies []Reply
	if err := json.Unmarshal(b, &replies); err != nil {
		return nil, &ops.ProviderError{Provider: Name, Message: fmt.Sprintf("replies must be a list of strings or objects: %v", err), Err: err}
	}
	if call.Index >= uint64(len(replies)) {
		return nil, &ops.ProviderError{Provider: Name, Message: fmt.Sprintf(
			"script exhausted: model call %d on branch %q but only %d replies are scripted", call.Index+1, call.BranchID, len(replies))}
	}
	r := replies[call.Index]
	if r.Error != nil && (r.Error.Attempts <= 0 || call.Attempt <= r.Error.Attempts) {
		msg := r.Error.Message
		if msg == "" {
			msg = "scripted error"
		}
		return nil, &ops.ProviderError{Provider: Name, Message: msg, Temporary: r.Error.Temporary}
	}
	return completion(call, r)
}

func completion(call ops.Call, r Reply) (*ops.Completion, error) {
	raw, err := json.Marshal(map[string]any{"provider": Name, "index": call.Index, "text": r.Text})
	if err != nil {
		return nil, err
	}
	return &ops.Completion{Text: r.Text, ToolCalls: r.ToolCalls, Usage: r.Usage, Raw: raw}, nil
}
