package wire

import "time"

// VerbBranchList is the verb that lists the branches a worker group
// keeps: one page of them, by id.
const VerbBranchList = "branch.list"

// MaxBranchPage is the most branches one branch.list answer holds, and
// the page size of a request asking for 0 or more.
const MaxBranchPage = 1000

// BranchListRequest is the data of a branch.list request. It names no
// branch: the request's branchid attribute is not set.
type BranchListRequest struct {
	// After lists the branches whose id sorts after this one ("": from
	// the first).
	After string `json:"after,omitempty"`
	// Limit is the most branches answered; 0 or more than MaxBranchPage
	// means MaxBranchPage.
	Limit int `json:"limit,omitempty"`
}

// BranchSummary is one branch of a branch.list page.
type BranchSummary struct {
	// ID is the branch id.
	ID string `json:"branch_id"`
	// Events is how many events its history holds now (retention and
	// compaction may have dropped older ones).
	Events uint64 `json:"events"`
	// Updated is when its last history event was stored.
	Updated time.Time `json:"updated_at"`
}

// BranchPage is the value of a branch.list result.
type BranchPage struct {
	// Branches are the branches with history that are not deleted, with
	// ids after the request's After, sorted by id.
	Branches []BranchSummary `json:"branches"`
	// Next is the id of the last branch answered (the After of the next
	// page), or the request's After when none was.
	Next string `json:"next"`
	// More is true when the page is full, so there may be more branches.
	More bool `json:"more"`
}

// BranchListResult is the result of branch.list: it names no branch.
type BranchListResult struct {
	Value BranchPage `json:"value"`
	// DurationMS is how long the request ran, in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// Usage is never set (no model is called); the schema allows it as
	// for every verb.
	Usage *Usage `json:"usage,omitempty"`
	// Replayed is never set (nothing is recorded); the schema allows it
	// as for every verb.
	Replayed bool `json:"replayed,omitempty"`
}
