package tools_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/wire"
)

// openApprovals opens approvals on a connection of its own, as a worker
// process would.
func openApprovals(t *testing.T, b *testBundle, cfg tools.ApprovalsConfig) *tools.Approvals {
	t.Helper()
	nc := b.conn(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	a, err := tools.OpenApprovals(bustest.Ctx(t), nc, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// serve runs a.Serve until the test ends.
func serve(t *testing.T, a *tools.Approvals) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
}

// park records a parked call of request id with gate and keeps a request
// for it, as a worker does; it returns the approval id.
func park(t *testing.T, gate *tools.Approvals, id string) string {
	t.Helper()
	ctx := bustest.Ctx(t)
	_, err := gate.Authorize(ctx, wire.ToolInvocation{Function: "refund", Arguments: map[string]any{"amount": 1}, RequestID: id, IdempotencyKey: wire.ToolCallKey(id, 0)})
	var parked *ops.ParkedError
	if !errors.As(err, &parked) {
		t.Fatalf("authorize %s: %v", id, err)
	}
	if err := gate.Keep(ctx, parked.ApprovalID, id, "lion.ops.act", nats.Header{}, []byte(`{"id":"`+id+`"}`)); err != nil {
		t.Fatalf("keep %s: %v", id, err)
	}
	return parked.ApprovalID
}

// Two workers read answers and sweep deadlines at the same time: every
// approval is decided once, by the first of two conflicting answers
// (the other is refused with approval_already_answered) or by its
// deadline, and its request is published again once.
func TestApprovals_concurrent_workers_decide_and_resume_once(t *testing.T) {
	const n = 20
	b := setup(t)
	ctx := bustest.Ctx(t)
	resumed, err := b.js.CreateStream(ctx, jetstream.StreamConfig{Name: "RESUMED", Subjects: []string{"lion.ops.>"}, Duplicates: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// The pending events, as the events stream of a provisioned server.
	if _, err := b.js.CreateStream(ctx, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"lion.events.>"}}); err != nil {
		t.Fatal(err)
	}
	answered := openApprovals(t, b, tools.ApprovalsConfig{Deadline: time.Hour})
	expiring := openApprovals(t, b, tools.ApprovalsConfig{Deadline: time.Nanosecond})
	var toAnswer, toExpire []string
	for i := range n {
		toAnswer = append(toAnswer, park(t, answered, fmt.Sprintf("a%02d", i)))
		toExpire = append(toExpire, park(t, expiring, fmt.Sprintf("e%02d", i)))
	}
	for range 2 {
		serve(t, openApprovals(t, b, tools.ApprovalsConfig{Sweep: 10 * time.Millisecond}))
	}
	cl, err := client.New(b.nc, client.Config{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([][2]error, n)
	for i, id := range toAnswer {
		for j, user := range []string{"alice", "bob"} {
			wg.Go(func() {
				_, errs[i][j] = cl.AnswerApproval(ctx, id, client.Answer{Approve: j == 0, User: user})
			})
		}
	}
	wg.Wait()
	for i, id := range toAnswer {
		accepted := -1
		for j, err := range errs[i] {
			var refused *wire.ApprovalRefusedError
			switch {
			case err == nil && accepted < 0:
				accepted = j
			case errors.As(err, &refused) && refused.Code == wire.CodeApprovalAnswered:
			default:
				t.Fatalf("approval %s: answers %v; want one accepted, one refused", id, errs[i])
			}
		}
		a, err := answered.Get(ctx, id)
		if accepted < 0 || err != nil || a.Decision == nil || a.Decision.By.User != []string{"alice", "bob"}[accepted] {
			t.Fatalf("approval %s decided %+v (%v), answers %v", id, a, err, errs[i])
		}
	}
	bustest.WaitFor(t, 30*time.Second, "every request resumed", func() bool {
		info, err := resumed.Info(ctx)
		return err == nil && info.State.Msgs >= 2*n
	})
	for _, id := range toExpire {
		a, err := expiring.Get(ctx, id)
		if err != nil || a.State != wire.ApprovalDenied || a.Decision == nil || a.Decision.AnswerID != "deadline" {
			t.Fatalf("expired approval %s: %+v (%v)", id, a, err)
		}
	}
	// Each request was published once, with the resume header.
	seen := map[string]bool{}
	for seq := uint64(1); seq <= 2*n; seq++ {
		m, err := resumed.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		id := m.Header.Get(protocol.ResumeHeader)
		if id == "" || seen[id] {
			t.Fatalf("message %d resumes %q (seen before: %v)", seq, id, seen[id])
		}
		seen[id] = true
	}
	if info, _ := resumed.Info(ctx); info.State.Msgs != 2*n {
		t.Fatalf("%d requests resumed, want %d", info.State.Msgs, 2*n)
	}
}
