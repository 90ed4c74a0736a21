package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// ErrNoApproval is what Approval returns for an id the approvals bucket
// does not hold.
var ErrNoApproval = errors.New("client: no such approval")

// ErrAnswerQueued is what AnswerApproval returns when its answer was
// stored but no worker said within the wait what became of it (none is
// running, say): a worker reads it when one runs.
var ErrAnswerQueued = errors.New("client: answer stored; no worker has read it yet")

// Answer is an approver's answer to a parked approval (see
// AnswerApproval).
type Answer struct {
	// Approve approves the call; false denies it.
	Approve bool
	// Arguments, with Approve, are edited arguments the call runs with
	// instead of its own.
	Arguments map[string]any
	// Reason says why (a denial's reason reaches the model).
	Reason string
	// User is the NATS user the answer is published as: the last token of
	// its subject, which the server's permissions must allow this
	// connection (docs/approvals.md).
	User string
	// Wait is how long to wait for a worker to say what became of the
	// answer; 0 means the client's Timeout.
	Wait time.Duration
}

// approvals opens the approvals bucket.
func (c *Client) approvals(ctx context.Context) (jetstream.KeyValue, error) {
	kv, err := c.js.KeyValue(ctx, c.subj.ApprovalsBucket())
	if err != nil {
		return nil, fmt.Errorf("client: approvals bucket %s: %w", c.subj.ApprovalsBucket(), err)
	}
	return kv, nil
}

// Approvals lists the approvals in the bucket: only the pending ones when
// pendingOnly.
func (c *Client) Approvals(ctx context.Context, pendingOnly bool) ([]wire.Approval, error) {
	ctx, cancel := c.withTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	kv, err := c.approvals(ctx)
	if err != nil {
		return nil, err
	}
	lister, err := kv.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("client: approvals: %w", err)
	}
	defer func() { _ = lister.Stop() }()
	var out []wire.Approval
	for key := range lister.Keys() {
		a, err := readApproval(ctx, kv, key)
		if err != nil {
			continue // deleted meanwhile
		}
		if !pendingOnly || a.State == wire.ApprovalPending {
			out = append(out, *a)
		}
	}
	return out, nil
}

// Approval returns the approval id, or ErrNoApproval.
func (c *Client) Approval(ctx context.Context, id string) (*wire.Approval, error) {
	if !protocol.ValidToken(id) {
		return nil, fmt.Errorf("%w: approval id %q is not a valid token", ErrInvalidOption, wire.Truncate(id, 80))
	}
	ctx, cancel := c.withTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	kv, err := c.approvals(ctx)
	if err != nil {
		return nil, err
	}
	return readApproval(ctx, kv, id)
}

func readApproval(ctx context.Context, kv jetstream.KeyValue, id string) (*wire.Approval, error) {
	e, err := kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNoApproval, id)
	}
	if err != nil {
		return nil, fmt.Errorf("client: approval %s: %w", id, err)
	}
	var a wire.Approval
	if err := json.Unmarshal(e.Value(), &a); err != nil {
		return nil, fmt.Errorf("client: approval %s: %w", id, err)
	}
	return &a, nil
}

// AnswerApproval answers the approval id, which it reads first for its
// tool and its arguments digest: it publishes a lionbus.approval.answer
// event on the approval's answer subject (stored in the answers stream
// until a worker reads it) and waits for the worker's outcome. A refused
// answer (answered before, digest mismatch) is an
// *wire.ApprovalRefusedError; ErrAnswerQueued means it was stored but no
// worker read it within a.Wait. It returns the answer's event id.
func (c *Client) AnswerApproval(ctx context.Context, id string, a Answer) (string, error) {
	ap, err := c.Approval(ctx, id)
	if err != nil {
		return "", err
	}
	return c.AnswerApprovalDigest(ctx, ap.Tool, id, ap.ArgumentsDigest, a)
}

// AnswerApprovalDigest answers the approval id of tool for the arguments
// of digest, without reading the approval (an approver that only has the
// pending event, or one without read access to the bucket).
func (c *Client) AnswerApprovalDigest(ctx context.Context, tool, id, digest string, a Answer) (string, error) {
	if !protocol.ValidToken(a.User) {
		return "", fmt.Errorf("%w: approver user %q is not a valid subject token", ErrInvalidOption, wire.Truncate(a.User, 80))
	}
	if !protocol.ValidToken(tool) || !protocol.ValidToken(id) {
		return "", fmt.Errorf("%w: tool %q or approval id %q is not a valid token", ErrInvalidOption, wire.Truncate(tool, 80), wire.Truncate(id, 80))
	}
	data := wire.ApprovalAnswer{Decision: wire.DecisionDeny, ArgumentsDigest: digest, Reason: a.Reason}
	if a.Approve {
		data.Decision, data.Arguments = wire.DecisionApprove, a.Arguments
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return "", fmt.Errorf("client: answer: %w", err)
	}
	ev := event.New(event.CloudEventsVersionV1)
	ev.SetID(uuid.NewString())
	ev.SetSource(c.cfg.Source)
	ev.SetType(wire.ApprovalAnswerType)
	ev.SetTime(time.Now().UTC())
	ev.SetDataContentType(protocol.ContentTypeJSON)
	ev.DataEncoded = raw
	msg, err := protocol.Encode(c.subj.ApprovalAnswer(tool, id, a.User), &ev, protocol.Structured)
	if err != nil {
		return "", fmt.Errorf("client: answer: %w", err)
	}
	msg.Header.Set(jetstream.MsgIDHeader, ev.ID())
	outcomes := make(chan *nats.Msg, 8)
	sub, err := c.nc.ChanSubscribe(c.subj.ApprovalOutcome(id), outcomes)
	if err != nil {
		return "", fmt.Errorf("client: answer: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	pctx, cancel := c.withTimeout(ctx, c.cfg.Timeout)
	_, err = c.js.PublishMsg(pctx, msg, jetstream.WithExpectStream(c.subj.ApprovalsStream()))
	cancel()
	if err != nil {
		return "", fmt.Errorf("client: answer approval %s: %w", id, err)
	}
	wait := a.Wait
	if wait <= 0 {
		wait = c.cfg.Timeout
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ev.ID(), ctx.Err()
		case <-timer.C:
			return ev.ID(), fmt.Errorf("%w (approval %s, answer %s)", ErrAnswerQueued, id, ev.ID())
		case m := <-outcomes:
			got, err := c.codec.DecodeEvent(m.Header, m.Data)
			if err != nil {
				continue
			}
			var out wire.ApprovalOutcome
			if json.Unmarshal(got.Data(), &out) != nil || out.AnswerID != ev.ID() {
				continue
			}
			return ev.ID(), out.Err()
		}
	}
}
