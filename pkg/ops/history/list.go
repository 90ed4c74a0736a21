package history

import (
	"context"
	"errors"

	"github.com/lionbus/lionbus/pkg/wire"
)

// MaxBranchPage is the most branches one [Lister.Branches] call returns,
// and the page a lister returns when asked for limit <= 0 or more
// ([wire.MaxBranchPage], the largest page of branch.list).
const MaxBranchPage = wire.MaxBranchPage

// Summary is one branch as a [Lister] lists it ([wire.BranchSummary]).
type Summary = wire.BranchSummary

// ErrListUnsupported is returned by a store that cannot list its
// branches (it implements no [Lister]).
var ErrListUnsupported = errors.New("history: the store cannot list branches")

// Lister is a [Store] that can list its branches. It is apart from Store
// so that a store without a cheap listing still serves every other verb.
type Lister interface {
	// Branches returns the branches with history that are not deleted,
	// whose id sorts after after, sorted by id, at most limit of them
	// (limit <= 0 or above MaxBranchPage means MaxBranchPage), and
	// whether there may be more.
	Branches(ctx context.Context, after string, limit int) (list []Summary, more bool, err error)
}

// ListBranches lists the branches of st through its [Lister] (an empty
// list is not nil), or returns ErrListUnsupported.
func ListBranches(ctx context.Context, st Store, after string, limit int) ([]Summary, bool, error) {
	l, ok := st.(Lister)
	if !ok {
		return nil, false, ErrListUnsupported
	}
	if limit <= 0 || limit > MaxBranchPage {
		limit = MaxBranchPage
	}
	list, more, err := l.Branches(ctx, after, limit)
	if err == nil && list == nil {
		list = []Summary{}
	}
	return list, more, err
}
