package wire

import "time"

// EventCompacted is a compaction point of a branch's history, written by
// history retention: it carries the branch's whole state as the events
// before it fold it (Event.Compaction), so that every read at or after
// it folds from it, and the events before it can be dropped. A read of
// the branch at a point before it, once they are dropped, is refused.
// It changes nothing of the branch but its seq.
const EventCompacted EventType = "branch.compacted"

// Compaction is what a branch.compacted event records: the branch's
// state at the event and what retention dropped before it.
type Compaction struct {
	// Head is the sequence of the branch's last event before this one:
	// the state below is the fold of the history up to it.
	Head uint64 `json:"head" msgpack:"head"`
	// Settings, Messages, ModelCalls, CreatedAt and UpdatedAt are the
	// branch's, as branch.get answered them at Head.
	Settings   Settings  `json:"settings" msgpack:"settings"`
	Messages   []Message `json:"messages" msgpack:"messages"`
	ModelCalls uint64    `json:"model_calls,omitempty" msgpack:"model_calls,omitempty"`
	CreatedAt  time.Time `json:"created_at" msgpack:"created_at"`
	UpdatedAt  time.Time `json:"updated_at" msgpack:"updated_at"`
	// Commits are the request ids the branch remembers, with the
	// sequence of their branch.messages, so that a redelivered request
	// is still recognised.
	Commits map[string]uint64 `json:"commits,omitempty" msgpack:"commits,omitempty"`
	// DroppedBefore, when not 0, says that retention drops the branch's
	// events with a sequence below it (an earlier compaction point or
	// the branch's creation is the first event kept); DroppedEvents is
	// how many.
	DroppedBefore uint64 `json:"dropped_before,omitempty" msgpack:"dropped_before,omitempty"`
	DroppedEvents uint64 `json:"dropped_events,omitempty" msgpack:"dropped_events,omitempty"`
	// Reason names the retention rule that wrote the compaction point
	// (e.g. "keep_events=1000", "max_age=720h0m0s").
	Reason string `json:"reason,omitempty" msgpack:"reason,omitempty"`
}
