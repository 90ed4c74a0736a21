// Package prompt renders a branch's history and the current instruction
// as the outgoing conversation of a model call ([Prompt]): the system
// message, the user and assistant turns, and the instruction as readable
// sections (Guidance, Instruction, Context, Tools, ResponseSchema,
// ResponseFormat with a JSON example derived from the schema). Historical
// instructions are rendered without tools and schema, and action
// responses are folded into the next instruction's Context ([Build]). A
// [Memo] keeps each branch's rendered history, so that the next prompt on
// the branch renders only what was recorded since.
package prompt

import (
	"encoding/json"
	"fmt"
	"iter"
	"slices"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

// Message is one outgoing message of a model call.
type Message struct {
	Role    history.Role `json:"role"`
	Content string       `json:"content"`
}

// Prompt is the outgoing conversation of a model call: an optional system
// message, then user and assistant turns, ending with the current
// instruction. It is read-only and cheap to pass by value: a [Memo]
// shares a branch's rendered turns between the prompts of its successive
// calls instead of copying the whole conversation for each, so a Prompt
// gives its turns by value only. Slice returns a
// copy to change.
//
// The zero Prompt is empty.
type Prompt struct {
	head []Message // shared with other prompts: never written through a Prompt
	tail []Message // this prompt's own last turns
}

// Of returns the prompt of msgs, copied.
func Of(msgs ...Message) Prompt {
	return Prompt{tail: slices.Clone(msgs)}
}

// Len returns the number of messages.
func (p Prompt) Len() int { return len(p.head) + len(p.tail) }

// At returns message i, 0 <= i < Len().
func (p Prompt) At(i int) Message {
	if i < len(p.head) {
		return p.head[i]
	}
	return p.tail[i-len(p.head)]
}

// Last returns the last message, and false when the prompt is empty.
func (p Prompt) Last() (Message, bool) {
	if n := p.Len(); n > 0 {
		return p.At(n - 1), true
	}
	return Message{}, false
}

// All yields the messages in order with their index.
func (p Prompt) All() iter.Seq2[int, Message] {
	return func(yield func(int, Message) bool) {
		for i, m := range p.head {
			if !yield(i, m) {
				return
			}
		}
		for i, m := range p.tail {
			if !yield(len(p.head)+i, m) {
				return
			}
		}
	}
}

// Slice returns the messages as a new slice, which the caller owns.
func (p Prompt) Slice() []Message {
	out := make([]Message, 0, p.Len())
	out = append(out, p.head...)
	return append(out, p.tail...)
}

// Bytes returns the length of the messages' text.
func (p Prompt) Bytes() int {
	n := 0
	for _, m := range p.All() {
		n += len(m.Content)
	}
	return n
}

// MarshalJSON encodes the prompt as a JSON array of its messages.
func (p Prompt) MarshalJSON() ([]byte, error) {
	return json.Marshal(p.Slice())
}

// String formats the prompt as fmt formats a slice of its messages.
func (p Prompt) String() string { return fmt.Sprint(p.Slice()) }
