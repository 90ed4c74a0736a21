package tools_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Parked approvals: the gate records a pending approval and parks the
// call (inside an operation, the engine then stops it and the worker
// keeps the request); an approver answers with the Go client; the worker
// reading answers (Serve) decides the approval, and a second answer is
// refused.
func ExampleApprovals() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, nc, err := startExampleServer(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Shutdown()
	defer nc.Close()
	js, _ := jetstream.New(nc)
	approvals, err := tools.OpenApprovals(ctx, nc, js, tools.ApprovalsConfig{Deadline: time.Hour})
	if err != nil {
		fmt.Println(err)
		return
	}
	serveCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = approvals.Serve(serveCtx) }()
	defer func() { stop(); <-done }()

	_, err = approvals.Authorize(ctx, ops.ToolInvocation{Function: "refund", Arguments: map[string]any{"amount": 10},
		RequestID: "r1", IdempotencyKey: ops.ToolCallKey("r1", 0)})
	var parked *ops.ParkedError
	fmt.Println(errors.As(err, &parked), errors.Is(err, ops.ErrParked))

	cl, _ := client.New(nc, client.Config{})
	pending, _ := cl.Approvals(ctx, true)
	fmt.Println(len(pending), pending[0].Tool, pending[0].State)
	_, err = cl.AnswerApproval(ctx, parked.ApprovalID, client.Answer{Approve: true, User: "alice", Reason: "checked"})
	fmt.Println(err)
	_, err = cl.AnswerApproval(ctx, parked.ApprovalID, client.Answer{Approve: false, User: "bob"})
	var refused *wire.ApprovalRefusedError
	fmt.Println(errors.As(err, &refused), refused.Code)
	a, _ := cl.Approval(ctx, parked.ApprovalID)
	fmt.Println(a.State, a.Decision.By.User, a.Decision.Reason)
	// Output:
	// true true
	// 1 refund pending
	// <nil>
	// true approval_already_answered
	// approved alice checked
}
