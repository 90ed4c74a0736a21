package ops

import (
	"context"
	"errors"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/wire"
)

// branchList answers one page of the store's branches, by id: at most
// data.limit (0 or above MaxBranchPage: MaxBranchPage) after data.after.
// The request names no branch.
func (e *Engine) branchList(ctx context.Context, req Request) (*Result, error) {
	if req.BranchID != "" {
		return nil, Errorf(CodeInvalidRequest, "branch.list names no branch, got branch id %q", Truncate(req.BranchID, 140))
	}
	var d wire.BranchListRequest
	if err := decodeData(req.Data, &d); err != nil {
		return nil, err
	}
	if d.Limit < 0 {
		return nil, Errorf(CodeInvalidRequest, "data.limit must not be negative, got %d", d.Limit)
	}
	if d.After != "" {
		if err := checkID("data.after", d.After); err != nil {
			return nil, err
		}
	}
	list, more, err := history.ListBranches(ctx, e.forks.Store, d.After, d.Limit)
	switch {
	case errors.Is(err, history.ErrListUnsupported):
		return nil, Errorf(CodeInternal, "this worker's store cannot list branches")
	case err != nil:
		return nil, storeErr("list branches", err)
	}
	page := wire.BranchPage{Branches: list, Next: d.After, More: more}
	if n := len(list); n > 0 {
		page.Next = list[n-1].ID
	}
	v, err := marshalValue(page)
	if err != nil {
		return nil, err
	}
	return &Result{Value: v}, nil
}
