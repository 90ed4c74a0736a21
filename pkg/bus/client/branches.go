package client

import (
	"context"
	"fmt"

	"github.com/lionbus/lionbus/pkg/wire"
)

// MaxBranches bounds how many branches Branches lists.
const MaxBranches = 100_000

// BranchInfo is one branch as Branches lists it.
type BranchInfo = wire.BranchSummary

// BranchList answers one page of the branches the workers keep, by id
// (the branch.list verb): the user's workers answer it, so a user sees
// the branches of the prefix and account it may reach, whatever it may
// read of the streams.
func (c *Client) BranchList(ctx context.Context, req wire.BranchListRequest, opts ...SubmitOption) (*wire.BranchListResult, error) {
	return call[wire.BranchListResult](ctx, c, wire.VerbBranchList, "", req, opts)
}

// Branches lists the branches that have history and are not deleted,
// sorted by id, at most MaxBranches: the pages of [Client.BranchList],
// one after the other.
func (c *Client) Branches(ctx context.Context) ([]BranchInfo, error) {
	var out []BranchInfo
	after := ""
	for len(out) < MaxBranches {
		res, err := c.BranchList(ctx, wire.BranchListRequest{After: after})
		if err != nil {
			return nil, fmt.Errorf("client: list branches: %w", err)
		}
		out = append(out, res.Value.Branches...)
		if !res.Value.More || res.Value.Next == after {
			break
		}
		after = res.Value.Next
	}
	if len(out) > MaxBranches {
		out = out[:MaxBranches]
	}
	return out, nil
}
