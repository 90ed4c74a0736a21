package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/wire"
)

// publisher approvals list, show, approve and deny against a worker's
// approvals (the gate and the answer reader of pkg/tools): the first
// answer decides and is recorded with its user, a second is refused with
// its code, exit 1.
func TestPublisher_approvals_list_show_approve_deny(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	ctx := bustest.Ctx(t)
	approvals, err := tools.OpenApprovals(ctx, b.NC, b.JS, tools.ApprovalsConfig{Sweep: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = approvals.Serve(serveCtx) }()
	t.Cleanup(func() { stop(); <-done })
	var ids []string
	for _, req := range []string{"r1", "r2"} {
		_, err := approvals.Authorize(ctx, wire.ToolInvocation{Function: "refund", Arguments: map[string]any{"amount": 10}, RequestID: req, IdempotencyKey: wire.ToolCallKey(req, 0)})
		var parked *ops.ParkedError
		if !errors.As(err, &parked) {
			t.Fatalf("authorize: %v", err)
		}
		ids = append(ids, parked.ApprovalID)
	}
	url := b.Srv.ClientURL()
	for _, s := range []step{
		{name: "list", args: []string{"approvals", "list", "--nats", url}, wantOut: []string{ids[0], ids[1], "pending", "refund", `{"amount":10}`}},
		{name: "show", args: []string{"approvals", "show", ids[0], "--nats", url}, wantOut: []string{`"arguments_digest": "` + wire.ArgumentsDigest(map[string]any{"amount": 10}), `"state": "pending"`}},
		{name: "show unknown", args: []string{"approvals", "show", "nope", "--nats", url}, wantCode: exitFailed, wantErr: []string{"no such approval"}},
		{name: "approve without a user", args: []string{"approvals", "approve", ids[0], "--nats", url}, wantCode: exitUsage, wantErr: []string{"--as USER"}},
		{name: "approve", args: []string{"approvals", "approve", ids[0], "--as", "alice", "--nats", url}, wantOut: []string{"approved"}},
		{name: "deny after", args: []string{"approvals", "deny", ids[0], "--as", "bob", "--nats", url}, wantCode: exitFailed, wantErr: []string{string(wire.CodeApprovalAnswered)}},
		{name: "deny", args: []string{"approvals", "deny", ids[1], "--as", "bob", "--reason", "too much", "--nats", url}, wantOut: []string{"denied"}},
		{name: "bad args", args: []string{"approvals", "approve", ids[1], "--as", "a", "--args", "[1]", "--nats", url}, wantCode: exitUsage, wantErr: []string{"JSON object"}},
		{name: "list pending", args: []string{"approvals", "list", "--nats", url}, wantOut: []string{"no approvals"}},
		{name: "list all json", args: []string{"approvals", "list", "--all", "--json", "--nats", url}, wantOut: []string{`"state": "approved"`, `"state": "denied"`, `"user": "alice"`, `"reason": "too much"`}},
	} {
		code, out, errOut := call(t, "", s.args...)
		s.check(t, code, out, errOut)
	}
}
