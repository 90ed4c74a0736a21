package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Event types of the approval protocol.
const (
	// ApprovalRequestType is the type of the event asking an approver
	// whether a tool call may run; its data is the invocation.
	ApprovalRequestType = "lionbus.tool.approval.request"
	// ApprovalResultType is the type of an approver's answer; its data is
	// an [Approval].
	ApprovalResultType = "lionbus.tool.approval.result"
)

// DefaultApprovalTimeout is how long a [Policy] waits for its approver.
const DefaultApprovalTimeout = 5 * time.Second

// Approval is an approver's answer: data of a lionbus.tool.approval.result
// event, or the whole body of a plain JSON reply.
type Approval struct {
	// Allow is true when the call may run.
	Allow bool `json:"allow"`
	// Reason says why, above all when the call is denied.
	Reason string `json:"reason,omitempty"`
}

// ApprovalSubject returns the subject on which the approver of tool name
// is asked: "<prefix>.approve.<name>". An approver for every tool
// subscribes to "<prefix>.approve.>".
func ApprovalSubject(prefix, name string) string { return prefix + ".approve." + name }

// Policy is the worker's governance gate for tool calls, an ops.Authorizer
// (act applies it after the branch's own list of tools): calls of a Denied
// tool are refused, and, when Approve is set, every other call is asked of
// a remote approver by request/reply on ApprovalSubject. An approver that
// does not answer within ApprovalTimeout, answers something unreadable or
// is not there denies the call (fail closed). A denied call never reaches
// the tool: act records it as an error-valued action response.
type Policy struct {
	// Approve turns the remote approver on.
	Approve bool
	// ApprovalTimeout bounds the wait for the approver; never past the
	// request's own deadline. 0 means DefaultApprovalTimeout.
	ApprovalTimeout time.Duration
	// Conn is the connection the approver is asked on; required with
	// Approve.
	Conn *nats.Conn
	// Denied are tools no branch may call.
	Denied []string
	// Prefix is the subject prefix. "" means DefaultPrefix.
	Prefix string
}

// Authorize decides about call: denied tools first, then the approver.
func (p *Policy) Authorize(ctx context.Context, call wire.ToolInvocation) (wire.Decision, error) {
	if slices.Contains(p.Denied, call.Function) {
		return wire.Decision{Reason: fmt.Sprintf("tool %q is denied by the worker's policy", call.Function)}, nil
	}
	if !p.Approve {
		return wire.Decision{Allow: true}, nil
	}
	if p.Conn == nil {
		return wire.Decision{Reason: "no connection to ask the approver on"}, nil
	}
	prefix := p.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	wait := p.ApprovalTimeout
	if wait <= 0 {
		wait = DefaultApprovalTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	trace, _ := protocol.TraceParentFromContext(ctx)
	subject := ApprovalSubject(prefix, call.Function)
	msg, err := encodeMsg(subject, "/lionbus/worker", ApprovalRequestType, trace, call)
	if err != nil {
		return wire.Decision{}, err
	}
	reply, err := p.Conn.RequestMsgWithContext(ctx, msg)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return wire.Decision{Reason: "no approver answers " + subject}, nil
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return wire.Decision{Reason: fmt.Sprintf("the approver did not answer within %s", wait)}, nil
	case err != nil:
		return wire.Decision{Reason: "asking the approver failed: " + err.Error()}, nil
	}
	a, err := readApproval(reply)
	if err != nil {
		return wire.Decision{Reason: "the approver's answer is unreadable: " + err.Error()}, nil
	}
	if !a.Allow {
		reason := "denied by the approver"
		if a.Reason != "" {
			reason += ": " + wire.Truncate(a.Reason, 1024)
		}
		return wire.Decision{Reason: reason}, nil
	}
	return wire.Decision{Allow: true}, nil
}

// readApproval reads an approval result event, or a plain JSON Approval.
func readApproval(m *nats.Msg) (Approval, error) {
	var a Approval
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(m.Data, &probe); err != nil {
		return a, err
	}
	body := m.Data
	if _, ce := probe["specversion"]; ce {
		if t := string(probe["type"]); t != `"`+ApprovalResultType+`"` {
			return a, fmt.Errorf("type is %s, want %s", wire.Truncate(t, 80), ApprovalResultType)
		}
		body = probe["data"]
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return a, err
	}
	return a, nil
}
