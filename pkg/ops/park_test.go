package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/wire"
)

// parkingGate parks every call of a request until its decision is set,
// and records the attempt it saw each call under.
type parkingGate struct {
	mu       sync.Mutex
	decided  map[string]ops.Decision // by idempotency key
	attempts []int
}

func (g *parkingGate) Authorize(ctx context.Context, call ops.ToolInvocation) (ops.Decision, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.attempts = append(g.attempts, ops.Attempt(ctx))
	if d, ok := g.decided[call.IdempotencyKey]; ok {
		return d, nil
	}
	id := "ap-" + call.Function
	return ops.Decision{}, ops.Park(ctx, &ops.ParkedError{ApprovalID: id, Tool: call.Function, Approval: &wire.ApprovalRequest{
		ID: id, Tool: call.Function, IdempotencyKey: call.IdempotencyKey, Arguments: call.Arguments,
		ArgumentsDigest: wire.ArgumentsDigest(call.Arguments), OnDeadline: "deny", Approvers: "lion.approval.answer." + call.Function + ".*.<user>",
	}})
}

// approvalEvents returns the branch.approval_requested events of branch.
func (a *actBundle) approvalEvents(t *testing.T, branch string) []history.Event {
	t.Helper()
	evs, err := a.store.History(context.Background(), branch, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []history.Event
	for _, ev := range evs {
		if ev.Type == history.EventApprovalRequested {
			out = append(out, ev)
		}
	}
	return out
}

// A gate that parks a call ends the operation as parked: Do returns a
// *ParkedError (ErrParked), no tool runs and nothing of the operation is
// committed — the branch's history records only the parked call (one
// branch.approval_requested, however often the request parks on it);
// the request resumed (Request.Resume) runs as a redelivery (attempt 2)
// and, the call decided, finishes: approved it runs, denied it is
// recorded.
func TestDo_a_parked_request_commits_nothing_and_resumes(t *testing.T) {
	for _, tt := range []struct {
		name     string
		decision ops.Decision
		ran      int
	}{
		{"approved", ops.Decision{Allow: true}, 1},
		{"denied", ops.Decision{Reason: "denied by alice"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gate := &parkingGate{decided: map[string]ops.Decision{}}
			a := newActBundle(t, ops.Config{Authorizer: gate})
			a.branchWith(t, "b", "add")
			before := a.lastEvent(t, "b").Seq
			data := `{"action_requests":[{"function":"add","arguments":{"x":1,"y":2}},{"function":"add","arguments":{"x":3,"y":4}}]}`
			_, _, err := a.act(t, "r", "b", data)
			var parked *ops.ParkedError
			if !errors.As(err, &parked) || !errors.Is(err, ops.ErrParked) || parked.ApprovalID != "ap-add" || parked.Approval == nil {
				t.Fatalf("act: %v, want it parked", err)
			}
			// The two calls are authorized concurrently and both park;
			// the first Park wins, so either call's approval may be the
			// one recorded, and it is the one Do returned.
			first := parked.Approval.ArgumentsDigest
			if first != wire.ArgumentsDigest(map[string]any{"x": 1, "y": 2}) && first != wire.ArgumentsDigest(map[string]any{"x": 3, "y": 4}) {
				t.Fatalf("the parked approval's digest %s is neither call's", first)
			}
			// Parked twice (a redelivery before the answer): recorded once.
			if _, _, err := a.act(t, "r", "b", data); !errors.As(err, &parked) {
				t.Fatalf("act delivered again: %v, want it parked", err)
			}
			last := a.lastEvent(t, "b")
			if last.Type != history.EventApprovalRequested || last.RequestID != "r" || last.Approval == nil ||
				last.Approval.ID != "ap-add" || last.Approval.Tool != "add" || last.Approval.ArgumentsDigest != first {
				t.Fatalf("the branch's last event after the park: %+v %+v, want the approval of digest %s", last, last.Approval, first)
			}
			if evs := a.approvalEvents(t, "b"); len(evs) != 1 || evs[0].Seq <= before {
				t.Fatalf("the parked call is recorded %d times, want once after seq %d: %+v", len(evs), before, evs)
			}
			if b, err := a.store.Load(context.Background(), "b"); err != nil || len(b.Messages) != 0 || b.Seq != last.Seq {
				t.Fatalf("a parked act committed messages: %+v (%v)", b, err)
			}
			if n := a.tools.Calls(ops.ToolCallKey("r", 0)) + a.tools.Calls(ops.ToolCallKey("r", 1)); n != 0 {
				t.Fatalf("tools ran %d times for a parked request", n)
			}
			gate.mu.Lock()
			gate.decided[ops.ToolCallKey("r", 0)] = tt.decision
			gate.decided[ops.ToolCallKey("r", 1)] = ops.Decision{Allow: true}
			gate.attempts = nil
			gate.mu.Unlock()
			res, err := a.eng.Do(context.Background(), ops.Request{ID: "r", Verb: "act", BranchID: "b", Data: json.RawMessage(data), Attempt: 1, Resume: "ap-add"})
			if err != nil {
				t.Fatalf("resumed act: %v", err)
			}
			var out []ops.ActionResponse
			if err := json.Unmarshal(res.Value, &out); err != nil || len(out) != 2 {
				t.Fatalf("resumed act answered %s (%v)", res.Value, err)
			}
			if (out[0].Error == nil) != tt.decision.Allow || a.tools.Calls(ops.ToolCallKey("r", 0)) != tt.ran || a.tools.Calls(ops.ToolCallKey("r", 1)) != 1 {
				t.Fatalf("resumed act: %+v; the first call ran %d times", out, a.tools.Calls(ops.ToolCallKey("r", 0)))
			}
			for _, n := range gate.attempts {
				if n != 2 {
					t.Fatalf("the resumed request's calls were authorized under attempts %v, want 2", gate.attempts)
				}
			}
			if evs := a.approvalEvents(t, "b"); len(evs) != 1 {
				t.Fatalf("after the resume the parked call is recorded %d times, want once", len(evs))
			}
		})
	}
}
