package ops

import (
	"encoding/json"
	"fmt"
	"iter"
	"slices"
)

// Prompt is the outgoing conversation of a model call: an optional system
// message, then user and assistant turns, ending with the current
// instruction. It is read-only and cheap to pass by value: the engine
// shares a branch's rendered turns between the prompts of its successive
// calls instead of copying the whole conversation for each (see
// promptMemo), so a Prompt gives its turns by value only. Slice returns a
// copy to change.
//
// The zero Prompt is empty.
type Prompt struct {
	head []ChatMessage // shared with other prompts: never written through a Prompt
	tail []ChatMessage // this prompt's own last turns
}

// PromptOf returns the prompt of msgs, copied.
func PromptOf(msgs ...ChatMessage) Prompt {
	return Prompt{tail: slices.Clone(msgs)}
}

// Len returns the number of messages.
func (p Prompt) Len() int { return len(p.head) + len(p.tail) }

// At returns message i, 0 <= i < Len().
func (p Prompt) At(i int) ChatMessage {
	if i < len(p.head) {
		return p.head[i]
	}
	return p.tail[i-len(p.head)]
}

// Last returns the last message, and false when the prompt is empty.
func (p Prompt) Last() (ChatMessage, bool) {
	if n := p.Len(); n > 0 {
		return p.At(n - 1), true
	}
	return ChatMessage{}, false
}

// All yields the messages in order with their index.
func (p Prompt) All() iter.Seq2[int, ChatMessage] {
	return func(yield func(int, ChatMessage) bool) {
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
func (p Prompt) Slice() []ChatMessage {
	out := make([]ChatMessage, 0, p.Len())
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
