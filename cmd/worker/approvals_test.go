package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/wire"
	"github.com/lionbus/lionbus/schemas"
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
	if raw, _ := json.Marshal(got); schemas.Validate(wire.ApprovalPendingType, raw) != nil {
		t.Fatalf("the approval does not match its schema: %v\n%s", schemas.Validate(wire.ApprovalPendingType, raw), raw)
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
	// The branch's history records the parked call once, before the
	// messages the resumed request committed.
	calls, messages := f.parkedCalls(ctx, "b-double")
	if len(calls) != 1 || calls[0].RequestID != "double" || calls[0].Seq >= messages {
		t.Fatalf("parked calls in the history: %+v (last branch.messages at seq %d)", calls, messages)
	}
	if c := calls[0].Approval; c == nil || c.ID != ap.ID || c.Tool != "refund" || c.ArgumentsDigest != ap.ArgumentsDigest ||
		!c.Deadline.Equal(ap.Deadline) || c.OnDeadline != ap.OnDeadline || c.Approvers != ap.Approvers || c.Arguments["amount"] != float64(10) {
		t.Fatalf("the recorded call %+v, want the approval %+v", c, ap)
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

// Issue 26 acceptance: 100 parked approvals hold no worker slot — a
// worker with --concurrency 1 keeps answering other requests while they
// wait — and nothing of them stays in the worker or the ops stream (each
// is one record in the approvals bucket, docs/bounds.md); approved, each
// request is answered, each model call paid once.
func TestApprovals_100_parked_hold_no_worker_slot(t *testing.T) {
	const n = 100
	f := newApprovalFleet(t)
	f.start("w1", "--concurrency", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("p%03d", i)
	}
	f.submitReacts(ctx, ids...)
	parked := f.parked(ctx, n)
	for i := range 5 {
		r, err := f.b.Client.Do(ctx, "chat", "b-p000", map[string]any{"instruction": fmt.Sprintf("quick %d", i)}, client.WithID(fmt.Sprintf("quick-%d", i)))
		if err != nil {
			t.Fatalf("quick request %d while %d approvals are parked: %v", i, n, err)
		}
		if _, err := r.Result(); err != nil {
			t.Fatalf("quick request %d: %v", i, err)
		}
	}
	// The last quick answer is published just before its request is
	// acknowledged: wait for that; a parked request held unacknowledged
	// would keep the count above 0 for good.
	waitFor(t, time.Minute, "every request acknowledged", func() bool {
		info, err := f.b.Res.Workers.Info(ctx)
		if err != nil {
			return false
		}
		ops, err := f.b.Res.Ops.Info(ctx)
		if err != nil {
			return false
		}
		return info.NumAckPending == 0 && ops.State.Msgs == 0
	})
	// What they cost is their records: the call and the request each,
	// well under the bound of one record (docs/bounds.md).
	kv, err := f.b.JS.KeyValue(ctx, "lion_approvals")
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Values() != n || st.Bytes() > n*8<<10 {
		t.Fatalf("the approvals bucket holds %d records in %d bytes, want %d of at most 8 KiB each", st.Values(), st.Bytes(), n)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, id := range ids {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if _, err := f.b.Client.AnswerApproval(ctx, parked[id].ID, client.Answer{Approve: true, User: "alice"}); err != nil {
				t.Errorf("approve %s: %v", id, err)
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		if got := f.answer(ctx, id); got != `"refunded"` {
			t.Fatalf("react %s answered %s", id, got)
		}
		if c := f.callsOf(id); c != 2 {
			t.Errorf("request %s paid %d model calls, want 2", id, c)
		}
	}
	if twice := f.paidTwice(); len(twice) != 0 {
		t.Fatalf("model calls paid twice: %v", twice)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.refunds) != n {
		t.Fatalf("the tool ran %d times, want %d", len(f.refunds), n)
	}
}

// Issue 26 acceptance: every worker SIGKILLed with 60 approvals parked,
// 50 answered during the outage (25 approved, 25 denied; the answers are
// stored, no worker reads them); after a restart those 50 resume and are
// answered, the other 10 stay parked, nothing is lost (answered in turn,
// they resume too), and no model call is paid twice.
func TestApprovals_survive_every_worker_killed_and_answers_during_the_outage(t *testing.T) {
	const n, answered = 60, 50
	f := newApprovalFleet(t)
	w1, w2 := f.start("w1"), f.start("w2")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("k%02d", i)
	}
	f.submitReacts(ctx, ids...)
	parked := f.parked(ctx, n)
	w1.kill()
	w2.kill()
	for i, id := range ids[:answered] {
		_, err := f.b.Client.AnswerApproval(ctx, parked[id].ID, client.Answer{Approve: i%2 == 0, User: "alice", Reason: "outage", Wait: 50 * time.Millisecond})
		if !errors.Is(err, client.ErrAnswerQueued) {
			t.Fatalf("answer %s with no worker running: %v, want ErrAnswerQueued", id, err)
		}
	}
	f.start("w3")
	for i, id := range ids[:answered] {
		want := `"refunded"`
		if i%2 == 1 {
			want = `"denied"`
		}
		if got := f.answer(ctx, id); got != want {
			t.Fatalf("react %s answered %s, want %s", id, got, want)
		}
	}
	pending, err := f.b.Client.Approvals(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != n-answered {
		t.Fatalf("%d approvals still pending, want %d", len(pending), n-answered)
	}
	for _, ap := range pending {
		if !ap.Parked || ap.RequestID < ids[answered] {
			t.Fatalf("still pending: %+v", ap)
		}
		if _, err := f.b.Client.AnswerApproval(ctx, ap.ID, client.Answer{Approve: true, User: "alice"}); err != nil {
			t.Fatalf("approve %s after the restart: %v", ap.RequestID, err)
		}
	}
	for _, id := range ids[answered:] {
		if got := f.answer(ctx, id); got != `"refunded"` {
			t.Fatalf("react %s answered %s", id, got)
		}
	}
	if twice := f.paidTwice(); len(twice) != 0 {
		t.Fatalf("model calls paid twice: %v", twice)
	}
	for _, id := range ids {
		if calls, _ := f.parkedCalls(ctx, "b-"+id); len(calls) != 1 || calls[0].Approval == nil || calls[0].Approval.ID != parked[id].ID {
			t.Fatalf("branch b-%s records its parked call %d times, want once: %+v", id, len(calls), calls)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.refunds) != answered/2+n-answered {
		t.Fatalf("the tool ran %d times, want %d", len(f.refunds), answered/2+n-answered)
	}
}

// Issue 26 acceptance: an approval's deadline decides it (deny, or
// approve with --approval-on-deadline approve) even when no worker runs
// as it passes: the next worker to start finds it and resumes the
// request.
func TestApprovals_deadline_acts_with_no_worker_running(t *testing.T) {
	for _, tt := range []struct {
		onDeadline, state, answer string
		refunds                   int
	}{
		{"deny", wire.ApprovalDenied, `"denied"`, 0},
		{"approve", wire.ApprovalApproved, `"refunded"`, 1},
	} {
		t.Run(tt.onDeadline, func(t *testing.T) {
			f := newApprovalFleet(t)
			flags := []string{"--approval-deadline", "2s", "--approval-on-deadline", tt.onDeadline}
			// The first worker sweeps only when it starts, before the
			// approval exists: it never acts on the deadline.
			w1 := f.start("w1", append(flags, "--approval-sweep", "1h")...)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			f.submitReacts(ctx, "late")
			ap := f.parked(ctx, 1)["late"]
			w1.kill()
			time.Sleep(time.Until(ap.Deadline) + 200*time.Millisecond) // no worker runs as it passes
			if still, err := f.b.Client.Approval(ctx, ap.ID); err != nil || still.State != wire.ApprovalPending {
				t.Fatalf("past its deadline with no worker: %+v, %v", still, err)
			}
			f.start("w2", flags...)
			if got := f.answer(ctx, "late"); got != tt.answer {
				t.Fatalf("react answered %s, want %s", got, tt.answer)
			}
			got, err := f.b.Client.Approval(ctx, ap.ID)
			if err != nil || got.State != tt.state || got.Decision == nil || got.Decision.AnswerID != "deadline" {
				t.Fatalf("decided approval %+v (%v)", got, err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.refunds) != tt.refunds {
				t.Fatalf("the tool ran %d times, want %d", len(f.refunds), tt.refunds)
			}
		})
	}
}

// The act verb parks as react does: its call waits for the answer, and
// the resumed act runs it (approved) or records the denial (denied);
// of the parked attempt only the parked call is recorded.
func TestApprovals_act_parks_and_resumes(t *testing.T) {
	f := newApprovalFleet(t)
	f.start("w1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tt := range []struct {
		id      string
		approve bool
		want    string
	}{
		{"act-yes", true, ""},
		{"act-no", false, "denied"},
	} {
		if _, err := f.b.Client.Do(ctx, "branch.create", "", map[string]any{"branch_id": "b-" + tt.id, "tools": []string{"refund"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.b.Client.Submit(ctx, "act", "b-"+tt.id, map[string]any{"action_requests": []map[string]any{
			{"function": "refund", "arguments": map[string]any{"amount": 3}}}}, client.WithID(tt.id)); err != nil {
			t.Fatal(err)
		}
		ap := f.parked(ctx, 1)[tt.id]
		h, err := f.b.Client.BranchHistory(ctx, "b-"+tt.id, wire.BranchHistoryRequest{})
		if err != nil || len(h.Value.Events) != 2 || h.Value.Events[0].Type != wire.EventCreated ||
			h.Value.Events[1].Type != wire.EventApprovalRequested || h.Value.Events[1].Approval == nil || h.Value.Events[1].Approval.ID != ap.ID {
			t.Fatalf("history of the parked act's branch: %+v (%v), want the creation and the parked call only", h.Value.Events, err)
		}
		if _, err := f.b.Client.AnswerApproval(ctx, ap.ID, client.Answer{Approve: tt.approve, User: "alice", Reason: "no"}); err != nil {
			t.Fatal(err)
		}
		got := f.answer(ctx, tt.id)
		if tt.want == "" && (!strings.Contains(got, `"refunded":3`) || strings.Contains(got, "denied")) ||
			tt.want != "" && !strings.Contains(got, "denied by alice: no") {
			t.Fatalf("act %s answered %s", tt.id, got)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.refunds) != 1 {
		t.Fatalf("refunds %v, want one", f.refunds)
	}
}

// --approval-mode wait keeps the synchronous approver: the worker asks on
// <prefix>.approve.<tool> and waits for its answer, parking nothing.
func TestApprovals_wait_mode_asks_the_synchronous_approver(t *testing.T) {
	f := newApprovalFleet(t)
	var asked atomic.Int32
	sub, err := f.b.NC.Subscribe("lion.approve.>", func(m *nats.Msg) {
		asked.Add(1)
		_ = m.Respond([]byte(`{"allow": true}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	f.start("w1", "--approval-mode", "wait")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f.submitReacts(ctx, "sync")
	if got := f.answer(ctx, "sync"); got != `"refunded"` {
		t.Fatalf("react answered %s", got)
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("the approver was asked %d times, want 1", n)
	}
	if list, err := f.b.Client.Approvals(ctx, false); err == nil && len(list) != 0 {
		t.Fatalf("wait mode parked %d approvals", len(list))
	}
}
