package ops

import (
	"context"
	"errors"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/storeerr"
)

// asError turns any failure into an *Error with a stable code.
func asError(ctx context.Context, err error) *Error {
	var oe *Error
	if errors.As(err, &oe) {
		return oe
	}
	var pe *ProviderError
	switch {
	case errors.As(err, &pe):
		return &Error{Code: CodeProvider, Message: pe.Error(), Temporary: pe.Temporary, Err: err}
	case errors.Is(err, history.ErrBranchNotFound):
		return &Error{Code: CodeBranchNotFound, Message: err.Error(), Err: err}
	case errors.Is(err, history.ErrBranchExists):
		return &Error{Code: CodeBranchExists, Message: err.Error(), Err: err}
	case errors.Is(err, ErrUnknownProvider):
		return &Error{Code: CodeInvalidRequest, Message: err.Error(), Err: err}
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &Error{Code: CodeTimeout, Message: err.Error(), Temporary: true, Err: err}
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		// Cancelled by its client, the request is over; cancelled by
		// anything else (its worker stopping), it runs again elsewhere:
		// temporary, so that this attempt emits no terminal signal.
		byClient := errors.Is(err, ErrCanceledByClient) || errors.Is(context.Cause(ctx), ErrCanceledByClient)
		return &Error{Code: CodeCanceled, Message: err.Error(), Temporary: !byClient, Err: err}
	}
	return &Error{Code: CodeInternal, Message: err.Error(), Err: err}
}

// storeErr classifies a Store failure ([storeerr.Classify]).
func storeErr(op string, err error) error { return storeerr.Classify(op, err) }

// historyErr classifies a failure reading the history of branch id
// ([storeerr.History]).
func historyErr(id string, err error) error { return storeerr.History(id, err) }
