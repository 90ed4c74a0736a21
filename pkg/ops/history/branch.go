package history

import (
	"time"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Role is the conversational role of a [Message] ([wire.Role]).
type Role = wire.Role

// Message roles.
const (
	RoleSystem    = wire.RoleSystem
	RoleUser      = wire.RoleUser
	RoleAssistant = wire.RoleAssistant
	RoleAction    = wire.RoleAction
)

// Kind is the class of a [Message] ([wire.Kind]).
type Kind = wire.Kind

// Message kinds.
const (
	KindSystem            = wire.KindSystem
	KindInstruction       = wire.KindInstruction
	KindAssistantResponse = wire.KindAssistantResponse
	KindActionRequest     = wire.KindActionRequest
	KindActionResponse    = wire.KindActionResponse
)

// Settings are the parts of a branch that are not messages
// ([wire.Settings]). On an EventUpdated, a nil or empty field means
// "unchanged".
type Settings = wire.Settings

// Branch is the folded state of one conversation. It is a plain value: it is
// produced by applying history events in order (see [Branch.Apply]) and is
// safe to copy, encode and cache.
type Branch struct {
	// ID is the branch id; it is a valid subject token.
	ID string `json:"id" msgpack:"id"`
	// Settings holds the system message, models, tools and notes.
	Settings Settings `json:"settings" msgpack:"settings"`
	// Messages are the recorded messages, oldest first.
	Messages []Message `json:"messages" msgpack:"messages"`
	// Seq is the sequence of the last history event folded into the branch.
	Seq uint64 `json:"seq" msgpack:"seq"`
	// Commits maps the request ids of the most recent EventMessages events
	// to their sequence, so that a redelivered request is recognised. It
	// holds at most MaxRememberedCommits entries (see Branch.Apply for the
	// eviction). It is immutable, so copies of the branch share it. Every
	// snapshot of the branch carries it, so a Store encodes it itself, and
	// compactly (msgpack leaves it out of the branch); only its content,
	// not its encoding, is part of the contract.
	Commits Commits `json:"commits,omitzero" msgpack:"-"`
	// CreatedAt and UpdatedAt are the times of the first and last event.
	CreatedAt time.Time `json:"created_at" msgpack:"created_at"`
	UpdatedAt time.Time `json:"updated_at" msgpack:"updated_at"`
	// ModelCalls counts the model calls recorded on the branch: the sum of
	// Event.ModelCalls over its history (a clone starts from its source's
	// count). Clearing messages does not reset it. Deterministic providers
	// (the scripted one) use it as their position; see [github.com/lionbus/lionbus/pkg/ops.Call.Index].
	ModelCalls uint64 `json:"model_calls,omitempty" msgpack:"model_calls,omitempty"`
	// Fork, on a fork, is its parent and the parent's sequence it starts
	// from. A store folds a fork's own events only (its messages start
	// empty); the engine puts the parent's prefix in front.
	Fork *ForkPoint `json:"fork,omitempty" msgpack:"fork,omitempty"`
	// Deleted is set on the fold of a history that ends with an
	// EventDeleted: nothing else of the branch is kept. Stores answer
	// such a branch as ErrBranchDeleted; it is never shown.
	Deleted bool `json:"-" msgpack:"deleted,omitempty"`
}

// Message is one recorded message of a branch ([wire.Message]).
type Message = wire.Message
