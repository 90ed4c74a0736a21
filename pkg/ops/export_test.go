package ops

import (
	"context"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

// Internals that the external tests of package ops reach.

// CLIProviderName is the provider name of CLI models.
const CLIProviderName = cliProviderName

// LNDLMiddleExchange runs the lndl middle of e once, with cli as its
// run_and_collect middle (nil: the engine has none).
func LNDLMiddleExchange(ctx context.Context, e *Engine, cli Middle, in MiddleInput) (*MiddleResult, error) {
	return lndlMiddle{e: e, cli: cli}.Exchange(ctx, in)
}

// CommitEvent records ev for req on branchID as e's verbs do.
func CommitEvent(ctx context.Context, e *Engine, req Request, branchID string, ev history.Event, res *Result, operr *Error) (*Result, error) {
	return e.commitEvent(ctx, req, branchID, ev, res, operr)
}
