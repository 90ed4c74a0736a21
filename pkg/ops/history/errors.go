package history

import (
	"errors"
	"fmt"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Sentinel errors returned by a [Store] and by the engine of package
// [github.com/lionbus/lionbus/pkg/ops].
var (
	// ErrBranchNotFound means the branch has no history ([wire.ErrBranchNotFound]).
	ErrBranchNotFound = wire.ErrBranchNotFound
	// ErrBranchExists means a branch with that id already has history
	// ([wire.ErrBranchExists]).
	ErrBranchExists = wire.ErrBranchExists
	// ErrAlreadyCommitted means an event for the same request is already in
	// the branch's history: the request ran before.
	ErrAlreadyCommitted = errors.New("ops: request already committed")
	// ErrBranchDeleted means the branch's history ends with its tombstone
	// (an EventDeleted). It is an ErrBranchNotFound.
	ErrBranchDeleted = fmt.Errorf("%w: deleted (its history ends with its %s)", ErrBranchNotFound, EventDeleted)
)
