package storeerr

import (
	"context"
	"errors"
	"fmt"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Classify classifies a Store failure of the operation op: sentinels keep
// their meaning, context errors stay context errors, an *wire.Error from
// the store keeps its own code and Temporary flag (a store reports lasting
// damage, such as undecodable history, as a final error), anything else
// is a temporary CodeUnavailable. A nil err stays nil.
func Classify(op string, err error) error {
	var oe *wire.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, history.ErrBranchNotFound), errors.Is(err, history.ErrBranchExists),
		errors.Is(err, history.ErrAlreadyCommitted), errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded), errors.As(err, &oe):
		return err
	}
	return &wire.Error{Code: wire.CodeUnavailable, Message: fmt.Sprintf("store %s: %v", op, err), Temporary: true, Err: err}
}

// History classifies a failure reading the history of branch id: a
// branch without history is CodeBranchNotFound, anything else as Classify
// says.
func History(id string, err error) error {
	if errors.Is(err, history.ErrBranchNotFound) {
		return wire.Errorf(wire.CodeBranchNotFound, "branch %q not found", id)
	}
	return Classify("history", err)
}
