package ops

import (
	"errors"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Sentinel errors returned by a [Store] and by the [Engine].
var (
	// ErrBranchNotFound means the branch has no history.
	ErrBranchNotFound = wire.ErrBranchNotFound
	// ErrBranchExists means a branch with that id already has history.
	ErrBranchExists = wire.ErrBranchExists
	// ErrAlreadyCommitted means an event for the same request is already in
	// the branch's history: the request ran before.
	ErrAlreadyCommitted = errors.New("ops: request already committed")
)
