package history

import (
	"context"
	"encoding/json"
	"time"

	"github.com/lionbus/lionbus/pkg/wire"
)

// MaxHistoryPage is the most events one [Store.History] call returns, and
// the limit a store applies when asked for limit <= 0 or more. It is also the
// largest page of the branch.history verb. Every store uses this bound.
const MaxHistoryPage = 1000

// EventType names the kind of a history [Event].
type EventType string

// History event types. Every change to a branch is one of these.
const (
	// EventCreated starts a branch: its settings and, for a clone, its
	// initial messages. It is always the first event of a branch.
	EventCreated EventType = "branch.created"
	// EventMessages appends the messages one operation recorded, together
	// with the operation's result, atomically.
	EventMessages EventType = "branch.messages"
	// EventCleared removes every message except the system message.
	EventCleared EventType = "branch.cleared"
	// EventUpdated changes branch settings (provider session id, notes, ...).
	EventUpdated EventType = "branch.updated"
	// EventForked, in a parent's history, records a fork made of it (in
	// Event.Fork: the fork and the sequence it starts from). It changes
	// nothing of the parent but its Seq and UpdatedAt.
	EventForked EventType = "branch.forked"
	// EventDeleted is a deleted branch's tombstone, its last event (in
	// Event.Tombstone: who, why, the head before it). The fold of a
	// history ending with it is a deleted branch (Branch.Deleted), which
	// stores answer as ErrBranchDeleted; a new branch.created may follow
	// it (the id used again).
	EventDeleted EventType = "branch.deleted"
	// EventCompacted is a compaction point (in Event.Compaction: the
	// branch's state as the events before it fold it). Its fold replaces
	// the branch's state with that one, so a history may start with it
	// once retention dropped the events before it.
	EventCompacted EventType = "branch.compacted"
	// EventApprovalRequested records a tool call a request parked for an
	// approver (in Event.Approval). It changes nothing of the branch but
	// its Seq and UpdatedAt. A Store appends one per (RequestID,
	// approval id): a request that parks on two calls records both.
	EventApprovalRequested EventType = EventType(wire.EventApprovalRequested)
)

// Compaction is what an EventCompacted records ([wire.Compaction]).
type Compaction = wire.Compaction

// Tombstone is what an EventDeleted records ([wire.Tombstone]).
type Tombstone = wire.Tombstone

// ForkPoint names a point of a branch's history a fork starts from
// ([wire.ForkPoint]).
type ForkPoint = wire.ForkPoint

// MaxForkDepth bounds the parents above a fork ([wire.MaxForkDepth]).
const MaxForkDepth = wire.MaxForkDepth

// Event is one entry of a branch's history log.
type Event struct {
	// Seq is the position of the event in the log. It is assigned by the
	// Store when the event is appended and is zero on events not yet stored.
	Seq uint64 `json:"seq,omitempty" msgpack:"seq,omitempty"`
	// Type says what the event does.
	Type EventType `json:"type" msgpack:"type"`
	// RequestID is the id of the request that caused the event. A Store
	// appends at most one event per (branch, [Event.CommitKey]): per
	// RequestID and Type, and for EventApprovalRequested per approval; a
	// second append with the same key is reported as ErrAlreadyCommitted.
	RequestID string `json:"request_id" msgpack:"request_id"`
	// Time is when the event was produced.
	Time time.Time `json:"time" msgpack:"time"`
	// Settings is set on EventCreated and EventUpdated.
	Settings *Settings `json:"settings,omitempty" msgpack:"settings,omitempty"`
	// Messages is set on EventCreated (a clone's messages) and EventMessages.
	Messages []Message `json:"messages,omitempty" msgpack:"messages,omitempty"`
	// Result is the operation's JSON result on EventMessages, so that a
	// redelivered request can be answered without running it again.
	// It holds either an ops.Result or, for an operation that recorded its
	// exchange and then failed (a parse failure), {"error": {"code", "message"}}.
	Result json.RawMessage `json:"result,omitempty" msgpack:"result,omitempty"`
	// BranchID is the branch the event belongs to. [Branch.Apply] takes the
	// branch id from the EventCreated that starts it.
	BranchID string `json:"branch_id,omitempty" msgpack:"branch_id,omitempty"`
	// Clear, on EventMessages, removes every message except the system
	// message before Messages are appended (communicate with
	// clear_messages), so that the clear and the exchange are one atomic
	// change.
	Clear bool `json:"clear,omitempty" msgpack:"clear,omitempty"`
	// ModelCalls is the number of model calls the operation made, on
	// EventMessages; on EventCreated it is the count the branch starts from
	// (a clone inherits its source's). It is added to Branch.ModelCalls.
	ModelCalls uint64 `json:"model_calls,omitempty" msgpack:"model_calls,omitempty"`
	// Fork is set on the EventCreated of a fork (its parent and the
	// parent's sequence its prefix ends at: the branch starts as the
	// parent was there, without a copy of its messages) and on the
	// parent's EventForked (the fork and that sequence).
	Fork *ForkPoint `json:"fork,omitempty" msgpack:"fork,omitempty"`
	// Tombstone is set on EventDeleted.
	Tombstone *Tombstone `json:"tombstone,omitempty" msgpack:"tombstone,omitempty"`
	// Compaction is set on EventCompacted.
	Compaction *Compaction `json:"compaction,omitempty" msgpack:"compaction,omitempty"`
	// Approval is set on EventApprovalRequested.
	Approval *wire.ApprovalRequest `json:"approval,omitempty" msgpack:"approval,omitempty"`
}

// Store persists branches. History is the source of truth; implementations
// may keep a snapshot of the folded state as a cache, and must rebuild it
// from history when it is missing, corrupt or behind.
//
// Implementations must be safe for concurrent use by several goroutines and
// by several processes sharing the same backing store.
//
// The branches Load, Create and Append return may share memory with the
// store (a cache) and with each other, so callers treat them as read-only;
// [Branch.Clone] gives a private copy. A store guarantees in return that a
// branch it returned never changes afterwards, and that appending to its
// Messages never reaches the store.
type Store interface {
	// Load returns the branch folded up to its latest history event.
	// It returns ErrBranchNotFound when the branch has no history.
	Load(ctx context.Context, branchID string) (*Branch, error)

	// Create appends ev (of type EventCreated) as the first event of a new
	// branch. It returns ErrBranchExists if the branch already has history.
	Create(ctx context.Context, branchID string, ev Event) (*Branch, error)

	// Append appends ev after the branch's current last event, whatever it
	// is: a concurrent append by another operation is not an error, the
	// store re-reads and appends after it. It returns the branch folded up
	// to and including ev, ErrBranchNotFound when the branch does not exist,
	// and ErrAlreadyCommitted (with the stored event's branch state) when an
	// event with the same RequestID and Type is already in history.
	Append(ctx context.Context, branchID string, ev Event) (*Branch, error)

	// History returns the branch's events with Seq > after, in order, at
	// most limit of them (limit <= 0 means the store's documented maximum).
	History(ctx context.Context, branchID string, after uint64, limit int) ([]Event, error)

	// Delete removes a branch: its history and snapshot; a history that
	// ends with an EventDeleted keeps that tombstone.
	// It returns ErrBranchNotFound when the branch has no history.
	Delete(ctx context.Context, branchID string) error
}

// CommitKey is what a Store appends one event of per branch: the
// request id and the type, and the approval's id on an
// EventApprovalRequested (a request may park on several calls in turn).
// It is "" for an event without a request id, which is never
// de-duplicated.
func (e Event) CommitKey() string {
	if e.RequestID == "" {
		return ""
	}
	k := e.RequestID + "/" + string(e.Type)
	if e.Type == EventApprovalRequested && e.Approval != nil {
		k += "/" + e.Approval.ID
	}
	return k
}
