package history

import "errors"

// Sentinel errors returned by a [Store] and by the engine of package
// [github.com/lionbus/lionbus/pkg/ops].
var (
	// ErrBranchNotFound means the branch has no history.
	ErrBranchNotFound = errors.New("ops: branch not found")
	// ErrBranchExists means a branch with that id already has history.
	ErrBranchExists = errors.New("ops: branch already exists")
	// ErrAlreadyCommitted means an event for the same request is already in
	// the branch's history: the request ran before.
	ErrAlreadyCommitted = errors.New("ops: request already committed")
)
