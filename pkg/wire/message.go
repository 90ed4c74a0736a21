package wire

import (
	"encoding/json"
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

// Content keys of the message kinds, as ADR-0021/ADR-0022 name them.
const (
	// system
	KeySystemMessage = "system_message"
	// instruction
	KeyInstruction    = "instruction"
	KeyGuidance       = "guidance"
	KeyContext        = "context"
	KeyResponseFormat = "response_format"
	KeyToolSchemas    = "tool_schemas"
	KeyPlainContent   = "plain_content"
	// assistant_response
	KeyAssistantResponse = "assistant_response"
	// action_request and action_response
	KeyFunction         = "function"
	KeyArguments        = "arguments"
	KeyOutput           = "output"
	KeyError            = "error"
	KeyActionRequestID  = "action_request_id"
	KeyActionResponseID = "action_response_id"
)

// Message is one recorded message of a branch. Content holds the fields of
// its kind, named as in ADR-0021/ADR-0022 (see the Key constants). The
// msgpack tags are the branch store's encoding of it.
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

// Text returns the text of an assistant response or system message, and
// "" for other kinds.
func (m Message) Text() string {
	var v any
	switch m.Kind {
	case KindAssistantResponse:
		v = m.Content[KeyAssistantResponse]
	case KindSystem:
		v = m.Content[KeySystemMessage]
	}
	s, _ := v.(string)
	return s
}

// Settings are the parts of a branch that are not messages. On a
// branch.updated event, a nil or empty field means "unchanged".
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

// Branch is the folded state of a branch as the branch verbs answer it
// (the value of a branch.create, branch.get, branch.clear or branch.clone
// result).
type Branch struct {
	// ID is the branch id.
	ID string `json:"id"`
	// Settings holds the system message, models, tools and notes.
	Settings Settings `json:"settings"`
	// Messages are the recorded messages, oldest first.
	Messages []Message `json:"messages"`
	// Seq is the sequence of the last history event folded into the branch.
	Seq uint64 `json:"seq"`
	// Commits maps the request ids of the branch's most recent recorded
	// exchanges to their sequence.
	Commits map[string]uint64 `json:"commits,omitempty"`
	// CreatedAt and UpdatedAt are the times of the first and last event.
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// ModelCalls counts the model calls recorded on the branch.
	ModelCalls uint64 `json:"model_calls,omitempty"`
	// Fork, on a fork, is its parent and the parent's sequence it starts
	// from (the lineage; the parent's own Fork continues it).
	Fork *ForkPoint `json:"fork,omitempty"`
}

// EventType names the kind of a history [Event].
type EventType string

// History event types. Every change to a branch is one of these.
const (
	// EventCreated starts a branch: its settings and, for a clone, its
	// initial messages.
	EventCreated EventType = "branch.created"
	// EventMessages appends the messages one operation recorded, with the
	// operation's result.
	EventMessages EventType = "branch.messages"
	// EventCleared removes every message except the system message.
	EventCleared EventType = "branch.cleared"
	// EventUpdated changes branch settings.
	EventUpdated EventType = "branch.updated"
)

// Event is one entry of a branch's history, as branch.history answers it.
type Event struct {
	// Seq is the position of the event in the history, from 1.
	Seq uint64 `json:"seq"`
	// Type says what the event does.
	Type EventType `json:"type"`
	// RequestID is the id of the request that caused the event.
	RequestID string `json:"request_id"`
	// Time is when the event was produced.
	Time time.Time `json:"time"`
	// Settings is set on branch.created and branch.updated.
	Settings *Settings `json:"settings,omitempty"`
	// Messages is set on branch.created (a clone's messages) and
	// branch.messages.
	Messages []Message `json:"messages,omitempty"`
	// Result is the operation's JSON result on branch.messages: a result,
	// or {"error": {"code", "message"}} for an operation that recorded its
	// exchange and then failed.
	Result json.RawMessage `json:"result,omitempty"`
	// BranchID is the branch the event belongs to.
	BranchID string `json:"branch_id,omitempty"`
	// Clear, on branch.messages, removes every message except the system
	// message before Messages are appended.
	Clear bool `json:"clear,omitempty"`
	// ModelCalls is the number of model calls the operation made.
	ModelCalls uint64 `json:"model_calls,omitempty"`
	// Fork is set on a fork's branch.created (its parent and the
	// parent's sequence it starts from) and on the parent's
	// branch.forked (the fork and that sequence).
	Fork *ForkPoint `json:"fork,omitempty"`
	// Tombstone is set on branch.deleted.
	Tombstone *Tombstone `json:"tombstone,omitempty"`
	// Compaction is set on branch.compacted.
	Compaction *Compaction `json:"compaction,omitempty"`
	// Approval is set on branch.approval_requested.
	Approval *ApprovalRequest `json:"approval,omitempty"`
}
