package wire

import "time"

// Fork verbs.
const (
	VerbBranchFork  = "branch.fork"
	VerbBranchForks = "branch.forks"
)

// EventForked, in a parent's history, records that a fork was made of
// it: the fork's id and the parent's sequence the fork starts from (in
// Event.Fork). It changes nothing of the parent but its seq.
const EventForked EventType = "branch.forked"

// MaxForkDepth is how many parents a fork may have above it (a fork of
// a fork of ...): a fork's read folds each of their prefixes.
const MaxForkDepth = 32

// ForkPoint names a point of a branch's history a fork starts from.
type ForkPoint struct {
	// BranchID is, on a fork's branch and its branch.created, the parent;
	// on the parent's branch.forked, the fork.
	BranchID string `json:"branch_id" msgpack:"branch_id"`
	// Seq is the parent's sequence the fork's prefix ends at: the fork
	// holds the parent as branch.get at_seq Seq answers it, then its own
	// events.
	Seq uint64 `json:"seq" msgpack:"seq"`
}

// BranchForkRequest is the data of a branch.fork request: a new branch
// that starts as the request's branch was at a point of its history and
// refers to that prefix instead of copying it.
type BranchForkRequest struct {
	// BranchID is the fork's id; "" means one derived from the request
	// id.
	BranchID string `json:"branch_id,omitempty"`
	// AtSeq is the parent's history sequence to fork at (the fold of its
	// events with seq <= AtSeq); 0 means its head. It excludes
	// BeforeMessage.
	AtSeq uint64 `json:"at_seq,omitempty"`
	// BeforeMessage is the id of a message of the parent: the fork
	// starts just before the event that recorded it (an exchange's
	// instruction), so that an edited instruction can be sent on the
	// fork instead.
	BeforeMessage string `json:"before_message,omitempty"`
}

// BranchForked is the value of a branch.fork result: the fork, without
// its messages (branch.get reads them), so that the answer does not grow
// with the parent either.
type BranchForked struct {
	// BranchID is the fork's id.
	BranchID string `json:"branch_id"`
	// Fork is its parent and the parent's sequence it starts from.
	Fork ForkPoint `json:"fork"`
	// Seq is the sequence of the fork's branch.created: its head.
	Seq uint64 `json:"seq"`
	// Messages counts the fork's messages (all the prefix's).
	Messages int `json:"messages"`
	// CreatedAt is when the fork was made.
	CreatedAt time.Time `json:"created_at"`
}

// BranchForkResult is the result of branch.fork.
type BranchForkResult struct {
	Value BranchForked `json:"value"`
	ResultMeta
}

// BranchForksRequest is the data of a branch.forks request: one page of
// the forks made of the request's branch, found in its history.
type BranchForksRequest struct {
	// After scans the history after this sequence (0: from the start).
	After uint64 `json:"after,omitempty"`
	// Limit is the most history events scanned; 0 or more than 1000
	// means 1000.
	Limit int `json:"limit,omitempty"`
}

// Fork is one fork of a branch, as branch.forks lists it.
type Fork struct {
	// BranchID is the fork's id.
	BranchID string `json:"branch_id"`
	// Seq is the parent's sequence the fork starts from.
	Seq uint64 `json:"seq"`
	// RequestID is the branch.fork request that made it; Time when.
	RequestID string    `json:"request_id"`
	Time      time.Time `json:"time"`
	// EventSeq is the sequence of the parent's branch.forked event.
	EventSeq uint64 `json:"event_seq"`
}

// ForkPage is the value of a branch.forks result.
type ForkPage struct {
	// Forks are the forks recorded in the scanned events, oldest first.
	Forks []Fork `json:"forks"`
	// Next is the sequence of the last scanned event: the After of the
	// next page.
	Next uint64 `json:"next"`
	// More is true when the scan stopped before the history's end.
	More bool `json:"more"`
}

// BranchForksResult is the result of branch.forks.
type BranchForksResult struct {
	Value ForkPage `json:"value"`
	ResultMeta
}
