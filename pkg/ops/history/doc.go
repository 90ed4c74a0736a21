// Package history is the branch model of lionbus: a conversation
// ("branch") as an ordered log of [Event]s and the state folded from it.
//
// A [Branch] is a plain value produced by applying events in order
// ([Branch.Apply], [Replay]); it holds the branch's [Settings], its
// [Message]s and the [Commits] that recognise a redelivered request. A
// [Store] persists the log (and may cache the folded state); the message
// constructors ([NewInstructionMessage], [NewAssistantResponse], ...) build
// the messages the verbs of package [github.com/lionbus/lionbus/pkg/ops]
// record.
//
// The package is pure: it does no I/O and knows nothing of models, verbs or
// transports.
package history
