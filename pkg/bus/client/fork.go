package client

import (
	"context"
	"fmt"

	"github.com/lionbus/lionbus/pkg/wire"
)

// BranchFork makes a fork of the branch: a new branch, req.BranchID or
// an id derived from the request id, that starts as the branch was at
// req.AtSeq (0: its head) or just before the exchange of
// req.BeforeMessage, and refers to that prefix instead of copying it.
// The answer names the fork, its parent and the sequence, without the
// fork's messages (BranchGet reads them).
func (c *Client) BranchFork(ctx context.Context, branchID string, req wire.BranchForkRequest, opts ...SubmitOption) (*wire.BranchForkResult, error) {
	return call[wire.BranchForkResult](ctx, c, wire.VerbBranchFork, branchID, req, opts)
}

// BranchForks answers the forks made of the branch recorded in one page
// of its history (req.After, req.Limit); continue with After set to the
// answer's Next while it says More.
func (c *Client) BranchForks(ctx context.Context, branchID string, req wire.BranchForksRequest, opts ...SubmitOption) (*wire.BranchForksResult, error) {
	return call[wire.BranchForksResult](ctx, c, wire.VerbBranchForks, branchID, req, opts)
}

// AllForks answers every fork made of the branch, reading its history
// page by page.
func (c *Client) AllForks(ctx context.Context, branchID string, opts ...SubmitOption) ([]wire.Fork, error) {
	var all []wire.Fork
	var after uint64
	for {
		res, err := c.BranchForks(ctx, branchID, wire.BranchForksRequest{After: after}, opts...)
		if err != nil {
			return nil, err
		}
		all = append(all, res.Value.Forks...)
		if !res.Value.More || res.Value.Next == after {
			return all, nil
		}
		after = res.Value.Next
	}
}

// BranchAncestry answers the lineage of the branch: its parent and the
// sequence it was forked at, that parent's parent, and so on up to a
// branch that is no fork (an empty answer for a branch that is none),
// at most [wire.MaxForkDepth] of them.
func (c *Client) BranchAncestry(ctx context.Context, branchID string, opts ...SubmitOption) ([]wire.ForkPoint, error) {
	var line []wire.ForkPoint
	for id := branchID; ; {
		b, err := c.BranchGet(ctx, id, opts...)
		if err != nil {
			return nil, err
		}
		if b.Value.Fork == nil {
			return line, nil
		}
		if len(line) == wire.MaxForkDepth {
			return nil, fmt.Errorf("client: branch %q has more than %d ancestors", branchID, wire.MaxForkDepth)
		}
		line = append(line, *b.Value.Fork)
		id = b.Value.Fork.BranchID
	}
}

// EditAndResend replaces an exchange of the branch with another one on
// a fork: it forks the branch just before the exchange whose instruction
// is message messageID (into forkID, or an id derived from the request
// id when ""), then sends req on the fork. The branch is left as it
// was. It answers the fork's id and the communicate's result. opts
// apply to both requests, so they must not name a request id (WithID).
func (c *Client) EditAndResend(ctx context.Context, branchID, messageID, forkID string, req wire.CommunicateRequest, opts ...SubmitOption) (string, *wire.CommunicateResult, error) {
	fork, err := c.BranchFork(ctx, branchID, wire.BranchForkRequest{BranchID: forkID, BeforeMessage: messageID}, opts...)
	if err != nil {
		return "", nil, err
	}
	res, err := c.Communicate(ctx, fork.Value.BranchID, req, opts...)
	return fork.Value.BranchID, res, err
}
