package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Issue 26, parked approvals: an approved call runs and its request is
// answered under its own id; a second answer is refused with
// approval_already_answered and changes nothing; the approver is
// recorded; no model call is paid twice.
func TestApprovals_a_second_answer_is_refused(t *testing.T) {
	f := newApprovalFleet(t)
	f.start("w1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f.submitReacts(ctx, "double")
	ap := f.parked(ctx, 1)["double"]
	if ap.Tool != "refund" || ap.Arguments["amount"] != float64(10) || ap.ArgumentsDigest != wire.ArgumentsDigest(map[string]any{"amount": 10}) {
		t.Fatalf("pending approval %+v", ap)
	}
	if _, err := f.b.Client.AnswerApproval(ctx, ap.ID, client.Answer{Approve: true, User: "alice", Reason: "ok"}); err != nil {
		t.Fatalf("first answer: %v", err)
	}
	_, err := f.b.Client.AnswerApproval(ctx, ap.ID, client.Answer{Approve: false, User: "bob"})
	var refused *wire.ApprovalRefusedError
	if !errors.As(err, &refused) || refused.Code != wire.CodeApprovalAnswered || !errors.Is(err, wire.ErrApprovalRefused) {
		t.Fatalf("second answer: %v, want %s", err, wire.CodeApprovalAnswered)
	}
	if got := f.answer(ctx, "double"); got != `"refunded"` {
		t.Fatalf("react answered %s, want \"refunded\"", got)
	}
	got, err := f.b.Client.Approval(ctx, ap.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != wire.ApprovalApproved || got.Decision == nil || got.Decision.By.User != "alice" || got.Decision.By.Source != client.DefaultSource || !got.Resumed {
		t.Fatalf("approval after the answers: %+v %+v", got, got.Decision)
	}
	if len(f.refunds) != 1 || f.refunds[0] != 10 {
		t.Fatalf("refunds %v, want [10]", f.refunds)
	}
	if twice := f.paidTwice(); len(twice) != 0 || f.callsOf("double") != 2 {
		t.Fatalf("model calls paid twice: %v; %d calls for the request, want 2", twice, f.callsOf("double"))
	}
}

// An approver may approve with edited arguments: the tool runs with them;
// an answer naming another digest than the pending call's is refused
// with approval_digest_mismatch and decides nothing.
func TestApprovals_edited_arguments_run_and_a_mismatching_digest_is_refused(t *testing.T) {
	f := newApprovalFleet(t)
	f.start("w1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f.submitReacts(ctx, "edit")
	ap := f.parked(ctx, 1)["edit"]
	_, err := f.b.Client.AnswerApprovalDigest(ctx, ap.Tool, ap.ID, wire.ArgumentsDigest(map[string]any{"amount": 11}), client.Answer{Approve: true, User: "alice"})
	var refused *wire.ApprovalRefusedError
	if !errors.As(err, &refused) || refused.Code != wire.CodeApprovalDigestMismatch {
		t.Fatalf("answer for other arguments: %v, want %s", err, wire.CodeApprovalDigestMismatch)
	}
	if still, err := f.b.Client.Approval(ctx, ap.ID); err != nil || still.State != wire.ApprovalPending {
		t.Fatalf("after a refused answer: %+v, %v", still, err)
	}
	if _, err := f.b.Client.AnswerApproval(ctx, ap.ID, client.Answer{Approve: true, User: "alice", Arguments: map[string]any{"amount": 5}}); err != nil {
		t.Fatalf("approve with edits: %v", err)
	}
	if got := f.answer(ctx, "edit"); got != `"refunded"` {
		t.Fatalf("react answered %s", got)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.refunds) != 1 || f.refunds[0] != 5 {
		t.Fatalf("refunds %v, want [5] (the edited amount)", f.refunds)
	}
}
