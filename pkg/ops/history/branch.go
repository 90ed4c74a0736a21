package history

import (
	"time"
)

// Role is the conversational role of a [Message].
type Role string

// Message roles, as ADR-0021 uses them.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleAction    Role = "action"
)

// Kind is the class of a [Message]; it fixes the message's role and which
// fields of its content are meaningful.
type Kind string

// Message kinds.
const (
	KindSystem            Kind = "system"
	KindInstruction       Kind = "instruction"
	KindAssistantResponse Kind = "assistant_response"
	KindActionRequest     Kind = "action_request"
	KindActionResponse    Kind = "action_response"
)

// Settings are the parts of a branch that are not messages. On an
// EventUpdated, a nil or empty field means "unchanged".
type Settings struct {
	// System is the branch's system message text ("" for none).
	System string `json:"system,omitempty" msgpack:"system,omitempty"`
	// ChatModel is the model used by chat, communicate and the verbs built
	// on them unless a request overrides it.
	ChatModel *ModelRef `json:"chat_model,omitempty" msgpack:"chat_model,omitempty"`
	// ParseModel is the model used for reformat rounds of parse; it
	// defaults to ChatModel.
	ParseModel *ModelRef `json:"parse_model,omitempty" msgpack:"parse_model,omitempty"`
	// Tools names the registered tools the branch may use.
	Tools []string `json:"tools,omitempty" msgpack:"tools,omitempty"`
	// ProviderSession is the provider's session id, for CLI resumption.
	ProviderSession string `json:"provider_session,omitempty" msgpack:"provider_session,omitempty"`
	// Notes is the LNDL scratchpad carried across rounds and operations.
	Notes map[string]any `json:"notes,omitempty" msgpack:"notes,omitempty"`
	// Metadata is free-form caller metadata.
	Metadata map[string]any `json:"metadata,omitempty" msgpack:"metadata,omitempty"`
}

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
}

// Message is one recorded message of a branch. Content holds the fields of
// its kind, named as in ADR-0021/ADR-0022 (instruction, guidance, context,
// response_format, assistant_response, function, arguments, output, ...).
type Message struct {
	ID        string         `json:"id" msgpack:"id"`
	Kind      Kind           `json:"kind" msgpack:"kind"`
	Role      Role           `json:"role" msgpack:"role"`
	CreatedAt time.Time      `json:"created_at" msgpack:"created_at"`
	Sender    string         `json:"sender,omitempty" msgpack:"sender,omitempty"`
	Recipient string         `json:"recipient,omitempty" msgpack:"recipient,omitempty"`
	Content   map[string]any `json:"content" msgpack:"content"`
	Metadata  map[string]any `json:"metadata,omitempty" msgpack:"metadata,omitempty"`
}
