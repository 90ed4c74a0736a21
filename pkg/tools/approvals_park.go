package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Authorize is the parking gate: a call of a Denied tool is denied; a call
// whose approval was decided (a resumed request runs it again) gets that
// decision; any other call records a pending approval, publishes a
// lionbus.approval.pending event and parks the request (wire.Park, which
// ops.Park is). A
// redelivery of a request whose approval is pending parks it again without
// recording anything.
func (a *Approvals) Authorize(ctx context.Context, call wire.ToolInvocation) (wire.Decision, error) {
	if slices.Contains(a.cfg.Denied, call.Function) {
		return wire.Decision{Reason: fmt.Sprintf("tool %q is denied by the worker's policy", call.Function)}, nil
	}
	if wire.ParkedBy(ctx) != nil {
		// Another call of the same round parked the request: it runs
		// again, and this call is asked about then.
		return wire.Decision{Reason: "the request is parked"}, wire.Park(ctx, nil)
	}
	id := wire.ApprovalID(call.RequestID, call.IdempotencyKey)
	for {
		r, _, err := a.get(ctx, id)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			created, err := a.create(ctx, id, call)
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue // another delivery of the request came first
			}
			if err != nil {
				return wire.Decision{}, err
			}
			return wire.Decision{Reason: "waiting for approval " + id}, wire.Park(ctx, &wire.ParkedError{ApprovalID: id, Tool: call.Function, Approval: created.Approval.AsRequest()})
		case err != nil:
			return wire.Decision{}, fmt.Errorf("approval %s: %w", id, err)
		case r.State == wire.ApprovalPending:
			return wire.Decision{Reason: "waiting for approval " + id}, wire.Park(ctx, &wire.ParkedError{ApprovalID: id, Tool: call.Function, Approval: r.Approval.AsRequest()})
		}
		if r.Decision != nil && r.Decision.Allow && r.Decision.Arguments != nil {
			a.remember(id, r.Decision.Arguments)
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
// ones when Authorize just found its approval approved with edits (a
// resumed request), else its own.
func (a *Approvals) Arguments(call wire.ToolInvocation) map[string]any {
	id := wire.ApprovalID(call.RequestID, call.IdempotencyKey)
	a.mu.Lock()
	defer a.mu.Unlock()
	if args, ok := a.edited[id]; ok {
		delete(a.edited, id)
		return args
	}
	return call.Arguments
}

// remember keeps the edited arguments of approval id for the invocation
// that follows its authorization (Arguments), at most maxEdited of them:
// past that, the oldest is dropped (its call would run with its own
// arguments, so none is dropped while calls are invoked as they are
// authorized).
func (a *Approvals) remember(id string, args map[string]any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.edited == nil {
		a.edited = map[string]map[string]any{}
	}
	if _, ok := a.edited[id]; !ok {
		a.order = append(a.order, id)
	}
	a.edited[id] = args
	for len(a.edited) > maxEdited && len(a.order) > 0 {
		delete(a.edited, a.order[0])
		a.order = a.order[1:]
	}
	if len(a.order) > 2*maxEdited {
		kept := a.order[:0]
		for _, k := range a.order {
			if _, ok := a.edited[k]; ok {
				kept = append(kept, k)
			}
		}
		a.order = kept
	}
}
