package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Authorize is the parking gate: a call of a Denied tool is denied; a call
// whose approval was decided (a resumed request runs it again) gets that
// decision; any other call records a pending approval, publishes a
// lionbus.approval.pending event and parks the request (ops.Park). A
// redelivery of a request whose approval is pending parks it again without
// recording anything.
func (a *Approvals) Authorize(ctx context.Context, call wire.ToolInvocation) (wire.Decision, error) {
	if slices.Contains(a.cfg.Denied, call.Function) {
		return wire.Decision{Reason: fmt.Sprintf("tool %q is denied by the worker's policy", call.Function)}, nil
	}
	if ops.Parked(ctx) {
		// Another call of the same round parked the request: it runs
		// again, and this call is asked about then.
		return wire.Decision{Reason: "the request is parked"}, ops.Park(ctx, nil)
	}
	id := wire.ApprovalID(call.RequestID, call.IdempotencyKey)
	for {
		r, _, err := a.get(ctx, id)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			_, err := a.create(ctx, id, call)
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue // another delivery of the request came first
			}
			if err != nil {
				return wire.Decision{}, err
			}
			return wire.Decision{Reason: "waiting for approval " + id}, ops.Park(ctx, &ops.ParkedError{ApprovalID: id, Tool: call.Function})
		case err != nil:
			return wire.Decision{}, fmt.Errorf("approval %s: %w", id, err)
		case r.State == wire.ApprovalPending:
			return wire.Decision{Reason: "waiting for approval " + id}, ops.Park(ctx, &ops.ParkedError{ApprovalID: id, Tool: call.Function})
		}
		return decisionOf(r), nil
	}
}

// decisionOf is the decision a decided approval gives its call.
func decisionOf(r *approvalRecord) wire.Decision {
	d := r.Decision
	if d == nil {
		return wire.Decision{Reason: "approval " + r.ID + " has no decision"}
	}
	if d.Allow {
		return wire.Decision{Allow: true}
	}
	who := "the approver"
	switch {
	case d.AnswerID == deadlineAnswer:
		who = "its deadline"
	case d.By.User != "":
		who = d.By.User
	}
	reason := "denied by " + who
	if d.Reason != "" {
		reason += ": " + wire.Truncate(d.Reason, 1024)
	}
	return wire.Decision{Reason: reason}
}

// create records a pending approval of call under id.
func (a *Approvals) create(ctx context.Context, id string, call wire.ToolInvocation) (*approvalRecord, error) {
	now := a.cfg.Now().UTC()
	r := &approvalRecord{Approval: wire.Approval{
		ID: id, RequestID: call.RequestID, BranchID: call.BranchID, Tool: call.Function,
		IdempotencyKey: call.IdempotencyKey, Arguments: call.Arguments, ArgumentsDigest: wire.ArgumentsDigest(call.Arguments),
		State: wire.ApprovalPending, CreatedAt: now, Deadline: now.Add(a.cfg.Deadline), OnDeadline: a.cfg.OnDeadline,
		AnswerSubject: a.subj.ApprovalAnswer(call.Function, id, "<user>"),
		Approvers:     a.subj.ApprovalAnswer(call.Function, "*", "<user>"),
	}}
	if r.Arguments == nil {
		r.Arguments = map[string]any{}
	}
	if _, err := a.update(ctx, r, 0); err != nil {
		return nil, err
	}
	return r, nil
}

// publishPending publishes the lionbus.approval.pending event of r on the
// events stream (subject <prefix>.events.<branch>.lionbus.approval.pending);
// a failure is only logged: the bucket is the record, `approvals list`
// reads it.
func (a *Approvals) publishPending(ctx context.Context, r *approvalRecord) {
	branch := r.BranchID
	if branch == "" {
		branch = "_"
	}
	trace, _ := protocol.TraceParentFromContext(ctx)
	msg, err := encodeMsg(a.subj.Events(branch, wire.ApprovalPendingType), a.cfg.Source, wire.ApprovalPendingType, trace, r.Approval)
	if err == nil {
		msg.Header.Set(jetstream.MsgIDHeader, "approval.pending."+r.ID)
		_, err = a.js.PublishMsg(ctx, msg)
	}
	if err != nil {
		a.log.Warn().Err(err).Str("approval", r.ID).Msg("approval pending event not published")
	}
}

// Arguments returns the arguments call runs with: the approver's edited
// ones when its approval was approved with edits, else its own. Only a
// resumed request (ops.Attempt above 1) can have a decided approval.
func (a *Approvals) Arguments(ctx context.Context, call wire.ToolInvocation) map[string]any {
	if ops.Attempt(ctx) < 2 {
		return call.Arguments
	}
	r, _, err := a.get(ctx, wire.ApprovalID(call.RequestID, call.IdempotencyKey))
	if err != nil || r.Decision == nil || !r.Decision.Allow || r.Decision.Arguments == nil {
		return call.Arguments
	}
	return r.Decision.Arguments
}
