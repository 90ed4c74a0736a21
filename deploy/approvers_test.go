package deploy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Issue 26: who may answer a parked approval is the server's decision.
// With nats/approvers.conf, alice answers the approvals of refund as
// alice, and the worker records her as the approver; she cannot answer
// as someone else or for another tool, and a client cannot answer at
// all: the server refuses those publishes, and the approvals stay
// pending.
func TestApprovers_only_the_granted_user_answers(t *testing.T) {
	vars := []string{"LIONBUS_WORKER_PASSWORD", "LIONBUS_APPROVER_ALICE_PASSWORD", "LIONBUS_CLIENT_PASSWORD"}
	s := startConfServer(t, "nats/approvers.conf", vars)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	approvals := serveApprovals(t, ctx, s.ClientURL(), "worker", "LIONBUS_WORKER_PASSWORD", "")
	// Two parked calls, as the worker's gate records them.
	park := func(tool string) string {
		t.Helper()
		_, err := approvals.Authorize(ctx, wire.ToolInvocation{Function: tool, Arguments: map[string]any{"amount": 10},
			RequestID: "r-" + tool, IdempotencyKey: wire.ToolCallKey("r-"+tool, 0)})
		var parked *ops.ParkedError
		if !errors.As(err, &parked) {
			t.Fatalf("authorize %s: %v, want it parked", tool, err)
		}
		return parked.ApprovalID
	}
	refund, transfer := park("refund"), park("wire_transfer")
	subj := protocol.Subjects{Prefix: "lion"}

	alice := connectProbe(t, s, "alice", "LIONBUS_APPROVER_ALICE_PASSWORD", "_INBOX.alice")
	alice.cannotPublish(subj.ApprovalAnswer("refund", refund, "bob"))
	alice.cannotPublish(subj.ApprovalAnswer("wire_transfer", transfer, "alice"))
	other := connectProbe(t, s, "client", "LIONBUS_CLIENT_PASSWORD", "_INBOX.client")
	other.cannotPublish(subj.ApprovalAnswer("refund", refund, "client"))
	for _, id := range []string{refund, transfer} {
		if a, err := approvals.Get(ctx, id); err != nil || a.State != wire.ApprovalPending {
			t.Fatalf("approval %s after refused answers: %+v, %v", id, a, err)
		}
	}

	cl, err := client.New(alice.nc, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.AnswerApproval(ctx, refund, client.Answer{Approve: true, User: "alice", Reason: "checked"}); err != nil {
		t.Fatalf("alice approves refund: %v", err)
	}
	a, err := approvals.Get(ctx, refund)
	if err != nil || a.State != wire.ApprovalApproved || a.Decision == nil || a.Decision.By.User != "alice" || a.Decision.Reason != "checked" {
		t.Fatalf("approved by alice: %+v (%v)", a, err)
	}
	if a, err := approvals.Get(ctx, transfer); err != nil || a.State != wire.ApprovalPending {
		t.Fatalf("the other approval: %+v, %v", a, err)
	}
}

// In tenants.conf, acme's alice answers acme's refund approvals from her
// tenant's account (the answer subject, the outcomes and the bucket reads
// are exported to it), as alice only; carol may not answer.
func TestTenants_approvers(t *testing.T) {
	s := startConfServer(t, "nats/tenants.conf", tenantPasswords)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	approvals := serveApprovals(t, ctx, s.ClientURL(), "worker-acme", "LIONBUS_WORKER_ACME_PASSWORD", "acme")
	_, err := approvals.Authorize(ctx, wire.ToolInvocation{Function: "refund", Arguments: map[string]any{"amount": 10},
		RequestID: "r1", IdempotencyKey: wire.ToolCallKey("r1", 0)})
	var parked *ops.ParkedError
	if !errors.As(err, &parked) {
		t.Fatalf("authorize: %v", err)
	}
	id := parked.ApprovalID
	subj := protocol.Subjects{Prefix: "acme"}

	carol := connectProbe(t, s, "carol", "ACME_CAROL_PASSWORD", "_INBOX.carol")
	carol.cannotPublish(subj.ApprovalAnswer("refund", id, "carol"))
	aliceProbe := connectProbe(t, s, "alice", "ACME_ALICE_PASSWORD", "_INBOX.alice")
	aliceProbe.cannotPublish(subj.ApprovalAnswer("refund", id, "bob"))
	if a, err := approvals.Get(ctx, id); err != nil || a.State != wire.ApprovalPending {
		t.Fatalf("after refused answers: %+v, %v", a, err)
	}
	alice, _ := tenantClient(t, s, "alice", "ACME_ALICE_PASSWORD", "acme")
	if _, err := alice.AnswerApproval(ctx, id, client.Answer{Approve: true, User: "alice"}); err != nil {
		t.Fatalf("alice approves from acme's account: %v", err)
	}
	if a, err := approvals.Get(ctx, id); err != nil || a.State != wire.ApprovalApproved || a.Decision.By.User != "alice" {
		t.Fatalf("approved: %+v, %v", a, err)
	}
}

// serveApprovals connects as the worker user (its password in the
// variable pwVar) and serves the approvals of prefix ("" for the default)
// as a worker does, until the test ends.
func serveApprovals(t *testing.T, ctx context.Context, url, user, pwVar, prefix string) *tools.Approvals {
	t.Helper()
	nc, err := client.Connect(ctx, client.ConnectConfig{
		URL: url, User: user, Password: password(pwVar), InboxPrefix: "_INBOX_" + strings.ReplaceAll(user, "-", "_"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	approvals, err := tools.OpenApprovals(ctx, nc, js, tools.ApprovalsConfig{Prefix: prefix, Sweep: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stopServe := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- approvals.Serve(serveCtx) }()
	t.Cleanup(func() {
		stopServe()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return approvals
}
