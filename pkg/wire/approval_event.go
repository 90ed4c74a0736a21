package wire

import "time"

// EventApprovalRequested, in a branch's history, records a tool call a
// request parked for an approver (in Event.Approval: the call, its
// digest, its deadline and who may answer). It changes nothing of the
// branch but its Seq and UpdatedAt; the decision and the approver are in
// the approval's record ([Approval]) and the call's outcome in the
// messages the resumed request commits (docs/approvals.md).
const EventApprovalRequested EventType = "branch.approval_requested"

// ApprovalRequest is what a branch.approval_requested event records of a
// parked tool call: the pending [Approval] without its state.
type ApprovalRequest struct {
	// ID is the approval's id ([ApprovalID]).
	ID string `json:"id" msgpack:"id"`
	// Tool is the tool's name.
	Tool string `json:"tool" msgpack:"tool"`
	// IdempotencyKey is the call's key.
	IdempotencyKey string `json:"idempotency_key" msgpack:"idempotency_key"`
	// Arguments are the call's arguments; ArgumentsDigest is their
	// [ArgumentsDigest], which an answer names.
	Arguments       map[string]any `json:"arguments" msgpack:"arguments"`
	ArgumentsDigest string         `json:"arguments_digest" msgpack:"arguments_digest"`
	// Deadline is when the approval decides itself, as OnDeadline says
	// ("deny" or "approve").
	Deadline   time.Time `json:"deadline" msgpack:"deadline"`
	OnDeadline string    `json:"on_deadline" msgpack:"on_deadline"`
	// Approvers is the subject pattern a user must be allowed to publish
	// on to answer (its last token the user's name).
	Approvers string `json:"approvers" msgpack:"approvers"`
}

// AsRequest returns what a branch's history records of a.
func (a *Approval) AsRequest() *ApprovalRequest {
	return &ApprovalRequest{
		ID: a.ID, Tool: a.Tool, IdempotencyKey: a.IdempotencyKey,
		Arguments: a.Arguments, ArgumentsDigest: a.ArgumentsDigest,
		Deadline: a.Deadline, OnDeadline: a.OnDeadline, Approvers: a.Approvers,
	}
}
