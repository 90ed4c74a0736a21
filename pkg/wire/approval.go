package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"
)

// Event types of parked approvals (docs/approvals.md).
const (
	// ApprovalPendingType is the type of the event a worker publishes when
	// a tool call waits for an approver; its data is an [Approval].
	ApprovalPendingType = "lionbus.approval.pending"
	// ApprovalAnswerType is the type of an approver's answer; its data is
	// an [ApprovalAnswer].
	ApprovalAnswerType = "lionbus.approval.answer"
	// ApprovalOutcomeType is the type of the event that says what became
	// of an answer; its data is an [ApprovalOutcome].
	ApprovalOutcomeType = "lionbus.approval.outcome"
)

// States of an [Approval].
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
)

// Decisions of an [ApprovalAnswer].
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"
)

// Codes an answer is refused with ([ApprovalOutcome].Code).
const (
	// CodeApprovalNotFound: no approval has the answer's id.
	CodeApprovalNotFound Code = "approval_not_found"
	// CodeApprovalAnswered: the approval was answered before (or its
	// deadline decided it); the first answer stands.
	CodeApprovalAnswered Code = "approval_already_answered"
	// CodeApprovalDigestMismatch: the answer's digest is not the digest of
	// the pending call's arguments (the call changed, or the answer is for
	// another one).
	CodeApprovalDigestMismatch Code = "approval_digest_mismatch"
	// CodeApprovalInvalid: the answer could not be read, or says neither
	// approve nor deny.
	CodeApprovalInvalid Code = "approval_invalid_answer"
)

// ErrApprovalRefused is what [ApprovalOutcome.Err] of a refused answer
// wraps; errors.As gives the *ApprovalRefusedError with its code.
var ErrApprovalRefused = errors.New("approval answer refused")

// ApprovalRefusedError is an answer refused by the worker that read it.
type ApprovalRefusedError struct {
	Code    Code
	Message string
}

// Error says the code and why.
func (e *ApprovalRefusedError) Error() string {
	return "approval answer refused: " + string(e.Code) + ": " + e.Message
}

// Unwrap makes errors.Is(err, ErrApprovalRefused) true.
func (e *ApprovalRefusedError) Unwrap() error { return ErrApprovalRefused }

// Approver is who answered an approval: the answer's CloudEvents source
// and the NATS user its subject names (which the server's permissions
// make an authenticated identity, docs/approvals.md).
type Approver struct {
	Source string `json:"source,omitempty"`
	User   string `json:"user,omitempty"`
}

// ApprovalDecision is what decided an approval: an answer, or its
// deadline.
type ApprovalDecision struct {
	// Allow is true when the call may run.
	Allow bool `json:"allow"`
	// Reason says why.
	Reason string `json:"reason,omitempty"`
	// Arguments, when set, are the arguments the approver edited: the
	// call runs with them instead.
	Arguments map[string]any `json:"arguments,omitempty"`
	// ArgumentsDigest is the digest of Arguments, when set.
	ArgumentsDigest string `json:"arguments_digest,omitempty"`
	// By is who answered; empty when the deadline decided.
	By Approver `json:"by,omitzero"`
	// AnswerID is the CloudEvent id of the answer; "deadline" when the
	// deadline decided.
	AnswerID string `json:"answer_id"`
	// At is when the decision was taken.
	At time.Time `json:"at"`
}

// Approval is a tool call waiting for (or decided by) an approver: the
// record kept in the approvals bucket, and the data of a
// lionbus.approval.pending event.
type Approval struct {
	// ID identifies the approval: a digest of the request id and the
	// call's idempotency key, so that a re-run of the request finds it.
	ID string `json:"id"`
	// RequestID is the request the call belongs to (the id its client
	// awaits); its answer comes when the approval is decided and the
	// request resumed.
	RequestID string `json:"request_id"`
	// Parked is true once the worker kept the request aside: from then on
	// a decision resumes it on any worker.
	Parked bool `json:"parked"`
	// BranchID is the branch the call is made for.
	BranchID string `json:"branch_id,omitempty"`
	// Tool is the tool's name.
	Tool string `json:"tool"`
	// IdempotencyKey is the call's key.
	IdempotencyKey string `json:"idempotency_key"`
	// Arguments are the call's arguments.
	Arguments map[string]any `json:"arguments"`
	// ArgumentsDigest is [ArgumentsDigest] of Arguments: an answer names
	// it, so that it approves exactly these arguments.
	ArgumentsDigest string `json:"arguments_digest"`
	// State is pending, approved or denied.
	State string `json:"state"`
	// CreatedAt is when the call was parked.
	CreatedAt time.Time `json:"created_at"`
	// Deadline is when the approval decides itself (OnDeadline).
	Deadline time.Time `json:"deadline"`
	// OnDeadline is what the deadline decides: "deny" or "approve".
	OnDeadline string `json:"on_deadline"`
	// AnswerSubject is the subject an answer is published on, its last
	// token the approver's user name; Approvers is the subject pattern a
	// user may be granted to answer it (docs/approvals.md).
	AnswerSubject string `json:"answer_subject"`
	Approvers     string `json:"approvers"`
	// Decision is set once the approval is decided.
	Decision *ApprovalDecision `json:"decision,omitempty"`
	// Resumed is set once the request was published again to resume.
	Resumed bool `json:"resumed,omitempty"`
}

// ApprovalAnswer is the data of a lionbus.approval.answer event.
type ApprovalAnswer struct {
	// Decision is "approve" or "deny".
	Decision string `json:"decision"`
	// ArgumentsDigest must be the pending approval's digest.
	ArgumentsDigest string `json:"arguments_digest"`
	// Arguments, with approve, replace the call's arguments.
	Arguments map[string]any `json:"arguments,omitempty"`
	// Reason says why (shown to the model with a denial).
	Reason string `json:"reason,omitempty"`
}

// ApprovalOutcome is the data of a lionbus.approval.outcome event: what
// became of one answer.
type ApprovalOutcome struct {
	ApprovalID string `json:"approval_id"`
	AnswerID   string `json:"answer_id"`
	// Accepted is true when this answer decided the approval.
	Accepted bool   `json:"accepted"`
	Code     Code   `json:"code,omitempty"`
	Message  string `json:"message,omitempty"`
	// State is the approval's state after the answer.
	State string `json:"state,omitempty"`
}

// Err is nil for an accepted answer, else an *ApprovalRefusedError.
func (o ApprovalOutcome) Err() error {
	if o.Accepted {
		return nil
	}
	return &ApprovalRefusedError{Code: o.Code, Message: o.Message}
}

// ArgumentsDigest is the SHA-256, in hex, of args encoded as JSON with
// sorted keys (nil as {}): what an answer names to approve exactly them.
func ArgumentsDigest(args map[string]any) string {
	if args == nil {
		args = map[string]any{}
	}
	b, _ := json.Marshal(args)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ApprovalID is the id of the approval of the call with idempotency key
// key of request requestID: 32 hex digits of a SHA-256 over both.
func ApprovalID(requestID, key string) string {
	sum := sha256.Sum256([]byte(requestID + "\x00" + key))
	return hex.EncodeToString(sum[:16])
}
