package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
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
	return ops.Decision{}, ops.Park(ctx, &ops.ParkedError{ApprovalID: "ap-" + call.Function, Tool: call.Function})
}

// A gate that parks a call ends the operation as parked: Do returns a
// *ParkedError (ErrParked), no tool runs and nothing is committed; the
// request resumed (Request.Resume) runs as a redelivery (attempt 2) and,
// the call decided, finishes: approved it runs, denied it is recorded.
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
			if !errors.As(err, &parked) || !errors.Is(err, ops.ErrParked) || parked.ApprovalID != "ap-add" {
				t.Fatalf("act: %v, want it parked", err)
			}
			if seq := a.lastEvent(t, "b").Seq; seq != before {
				t.Fatalf("a parked act committed (last seq %d, was %d)", seq, before)
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
		})
	}
}
