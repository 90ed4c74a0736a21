package ops

import (
	"encoding/json"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Request is one decoded operation request, independent of how it arrived.
type Request struct {
	// ID is the request id (the CloudEvent id). It is the idempotency key.
	ID string
	// Verb is the operation: "communicate", "branch.create", "op.NAME", ...
	Verb string
	// BranchID names the branch for branch-scoped verbs.
	BranchID string
	// Data is the request's JSON data, already validated against its schema.
	Data json.RawMessage
	// TraceParent is the W3C traceparent to propagate, if any.
	TraceParent string
	// Source is the request's CloudEvents source (who sent it, as the
	// sender names itself), "" when the transport has none. A tombstone
	// records it.
	Source string
	// Attempt is the delivery attempt of the request, 1 for the first
	// delivery (0 is read as 1). Stages and model calls carry it on; the
	// transport's metrics, traces and chunk streams label redeliveries
	// with it, and the scripted provider's temporary errors fail the first
	// N attempts.
	Attempt int
	// LastAttempt is set on the last delivery the transport will make:
	// a temporary failure is then answered instead of retried. The
	// lifecycle signals use it to emit exactly one terminal event per
	// request (see Signal).
	LastAttempt bool
	// Resume is the approval whose decision resumes this request (it was
	// parked, see [ErrParked]); "" for a request that was not. A resumed
	// request is run as a redelivery (Attempt at least 2), so that its
	// completed model and tool calls are answered from the journal.
	Resume string
}

// Usage counts the tokens a request used ([wire.Usage]).
type Usage = wire.Usage

// Result is the outcome of a successful request ([wire.Result]).
type Result = wire.Result
