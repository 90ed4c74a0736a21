package client

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lionbus/lionbus/pkg/wire"
)

// The typed verbs: one method per verb, taking the verb's request and
// returning its result as the types of package wire. A lionbus.error answer
// is returned as a *RemoteError (errors.Is matches wire.ErrBranchNotFound,
// wire.ErrBranchExists and protocol.ErrBadEvent as its code says); [Client.Do]
// remains for the generic case (named operations, raw JSON).

// Communicate calls the chat model with branchID's history and the
// instruction, records the exchange and answers the parsed response.
func (c *Client) Communicate(ctx context.Context, branchID string, req wire.CommunicateRequest, opts ...SubmitOption) (*wire.CommunicateResult, error) {
	return call[wire.CommunicateResult](ctx, c, wire.VerbCommunicate, branchID, req, opts)
}

// Chat calls the chat model with branchID's history and the instruction;
// nothing is recorded. With branchID "" the chat is stateless: it runs on
// no branch, and req must name its ChatModel.
func (c *Client) Chat(ctx context.Context, branchID string, req wire.ChatRequest, opts ...SubmitOption) (*wire.ChatResult, error) {
	return call[wire.ChatResult](ctx, c, wire.VerbChat, branchID, req, opts)
}

// ChatAndRecord is Chat with the instruction and the response recorded.
func (c *Client) ChatAndRecord(ctx context.Context, branchID string, req wire.ChatAndRecordRequest, opts ...SubmitOption) (*wire.ChatAndRecordResult, error) {
	return call[wire.ChatAndRecordResult](ctx, c, wire.VerbChatAndRecord, branchID, req, opts)
}

// Operate makes a structured exchange through a middle, then runs the
// actions the answer asks for.
func (c *Client) Operate(ctx context.Context, branchID string, req wire.OperateRequest, opts ...SubmitOption) (*wire.OperateResult, error) {
	return call[wire.OperateResult](ctx, c, wire.VerbOperate, branchID, req, opts)
}

// React runs analysis rounds with actions, then a final answer.
func (c *Client) React(ctx context.Context, branchID string, req wire.ReactRequest, opts ...SubmitOption) (*wire.ReactResult, error) {
	return call[wire.ReactResult](ctx, c, wire.VerbReact, branchID, req, opts)
}

// Parse extracts a value matching req.ResponseFormat from req.Text.
func (c *Client) Parse(ctx context.Context, branchID string, req wire.ParseRequest, opts ...SubmitOption) (*wire.ParseResult, error) {
	return call[wire.ParseResult](ctx, c, wire.VerbParse, branchID, req, opts)
}

// Interpret rewrites req.Text into a clearer prompt.
func (c *Client) Interpret(ctx context.Context, branchID string, req wire.InterpretRequest, opts ...SubmitOption) (*wire.InterpretResult, error) {
	return call[wire.InterpretResult](ctx, c, wire.VerbInterpret, branchID, req, opts)
}

// Act runs the tool calls of req with branchID's tools.
func (c *Client) Act(ctx context.Context, branchID string, req wire.ActRequest, opts ...SubmitOption) (*wire.ActResult, error) {
	return call[wire.ActResult](ctx, c, wire.VerbAct, branchID, req, opts)
}

// Run runs a turn with a CLI model on branchID and passes each chunk of
// its answer to fn as it arrives, in order (see [Client.Follow]); it
// returns the result once every chunk was delivered. An error from fn
// stops following and is returned. fn may be nil.
func (c *Client) Run(ctx context.Context, branchID string, req wire.RunRequest, fn func(wire.Chunk) error, opts ...SubmitOption) (*wire.RunResult, error) {
	if fn == nil {
		fn = func(wire.Chunk) error { return nil }
	}
	_, reply, err := c.Stream(ctx, wire.VerbRun, branchID, req, fn, opts...)
	if err != nil {
		return nil, err
	}
	if reply == nil {
		return nil, ErrStopFollowing
	}
	return decodeResult[wire.RunResult](wire.VerbRun, reply)
}

// RunAndCollect is operate through the run_and_collect middle: the
// exchange is a run with the CLI model of req.ChatModel (persisted when
// req.StreamPersist is true), collected into operate's result. It sets
// req.Middle.
func (c *Client) RunAndCollect(ctx context.Context, branchID string, req wire.OperateRequest, opts ...SubmitOption) (*wire.OperateResult, error) {
	req.Middle = "run_and_collect"
	return c.Operate(ctx, branchID, req, opts...)
}

// BranchCreate creates a branch: req.BranchID, else branchID, else an id
// derived from the request id.
func (c *Client) BranchCreate(ctx context.Context, branchID string, req wire.BranchCreateRequest, opts ...SubmitOption) (*wire.BranchResult, error) {
	return call[wire.BranchResult](ctx, c, wire.VerbBranchCreate, branchID, req, opts)
}

// BranchGet answers the branch as it is.
func (c *Client) BranchGet(ctx context.Context, branchID string, opts ...SubmitOption) (*wire.BranchResult, error) {
	return call[wire.BranchResult](ctx, c, wire.VerbBranchGet, branchID, wire.BranchGetRequest{}, opts)
}

// BranchGetAt answers the branch as it was at req.AtSeq or req.AtTime:
// the fold of its history up to that point, what an operation that ran
// then saw. The zero req asks for the head, as [Client.BranchGet].
func (c *Client) BranchGetAt(ctx context.Context, branchID string, req wire.BranchGetRequest, opts ...SubmitOption) (*wire.BranchResult, error) {
	return call[wire.BranchResult](ctx, c, wire.VerbBranchGet, branchID, req, opts)
}

// BranchClear removes the branch's messages except the system message.
func (c *Client) BranchClear(ctx context.Context, branchID string, opts ...SubmitOption) (*wire.BranchResult, error) {
	return call[wire.BranchResult](ctx, c, wire.VerbBranchClear, branchID, wire.BranchClearRequest{}, opts)
}

// BranchClone copies the branch into a new one, req.BranchID or an id
// derived from the request id.
func (c *Client) BranchClone(ctx context.Context, branchID string, req wire.BranchCloneRequest, opts ...SubmitOption) (*wire.BranchResult, error) {
	return call[wire.BranchResult](ctx, c, wire.VerbBranchClone, branchID, req, opts)
}

// BranchDelete deletes the branch and its history.
func (c *Client) BranchDelete(ctx context.Context, branchID string, opts ...SubmitOption) (*wire.BranchDeleteResult, error) {
	return call[wire.BranchDeleteResult](ctx, c, wire.VerbBranchDelete, branchID, wire.BranchDeleteRequest{}, opts)
}

// BranchHistory answers a page of the branch's history.
func (c *Client) BranchHistory(ctx context.Context, branchID string, req wire.BranchHistoryRequest, opts ...SubmitOption) (*wire.BranchHistoryResult, error) {
	return call[wire.BranchHistoryResult](ctx, c, wire.VerbBranchHistory, branchID, req, opts)
}

// call does a request for verb and decodes its answer as R.
func call[R any](ctx context.Context, c *Client, verb, branchID string, req any, opts []SubmitOption) (*R, error) {
	reply, err := c.Do(ctx, verb, branchID, req, opts...)
	if err != nil {
		return nil, err
	}
	return decodeResult[R](verb, reply)
}

// decodeResult returns the *RemoteError of an error answer, else the
// answer decoded as R.
func decodeResult[R any](verb string, reply *Reply) (*R, error) {
	if err := reply.Err(); err != nil {
		return nil, err
	}
	var r R
	if err := json.Unmarshal(reply.Data, &r); err != nil {
		return nil, fmt.Errorf("client: decode the %s result: %w", verb, err)
	}
	return &r, nil
}
