package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/wire"
)

// approvalWorkerEnv, when set, makes the test binary run as a worker
// process with the model provider "approval" (see approvalModel) and the
// worker command's tools, journal and approvals (approvalWorkerMain).
const approvalWorkerEnv = "WORKER_TEST_APPROVAL_ARGS"

// approvalModel answers a react's first round with one call of the tool
// refund (amount 10), and its answer with "denied" when the branch tells
// of a denial, else "refunded"; any other call with "quick". It writes
// "call <stage>" on its stdout for every call it answers, so that the
// parent counts the calls paid.
type approvalModel struct {
	mu  sync.Mutex
	out io.Writer
}

func (m *approvalModel) Complete(_ context.Context, call ops.Call) (*ops.Completion, error) {
	m.mu.Lock()
	fmt.Fprintf(m.out, "call %s\n", call.RequestID)
	m.mu.Unlock()
	switch {
	case strings.Contains(call.RequestID, "/react/0/"):
		return &ops.Completion{Text: `{"analysis":"A refund.","extension_needed":false,"action_required":true,"action_requests":[{"function":"refund","arguments":{"amount":10}}]}`}, nil
	case strings.Contains(call.RequestID, "/react/answer"):
		for _, msg := range call.Messages.All() {
			if strings.Contains(msg.Content, "denied by") {
				return &ops.Completion{Text: "denied"}, nil
			}
		}
		return &ops.Completion{Text: "refunded"}, nil
	}
	return &ops.Completion{Text: "quick"}, nil
}

// approvalWorkerMain runs a worker configured by the JSON-encoded
// arguments raw with the approval model, journaled, and the worker
// command's tools and approvals, until the process is killed.
func approvalWorkerMain(raw string) int {
	cfg, log, bc, code := childWorkerConfig("approval worker", raw)
	if code != exitOK {
		return code
	}
	bc.Providers = ops.NewProviders(map[string]ops.Provider{"approval": &approvalModel{out: os.Stdout}})
	wj := &workerJournal{log: log}
	if err := wj.wrap(bc.Providers, "approval"); err != nil {
		fmt.Fprintf(os.Stderr, "approval worker: %v\n", err)
		return exitFailure
	}
	wt := newWorkerTools(cfg)
	wt.configure(&bc, wj)
	return serveJournaledChild("approval worker", bc, wj, wt, log)
}

// approvalFleet is a server, the refund tool served by the test, and the
// approval worker processes started on it, with the model calls they
// made (counted by stage, across processes).
type approvalFleet struct {
	t  *testing.T
	b  *bustest.Bus
	mu sync.Mutex
	// calls counts the model calls by stage; refunds lists the amounts
	// the tool ran with.
	calls   map[string]int
	refunds []float64
}

func newApprovalFleet(t *testing.T) *approvalFleet {
	t.Helper()
	f := &approvalFleet{t: t, b: bustest.New(t, provision.Config{}), calls: map[string]int{}}
	svc, err := tools.Serve(bustest.Ctx(t), f.b.NC, tools.ServiceConfig{Name: "payments", Version: "1.0.0",
		Tools: []tools.Tool{{Name: "refund", Description: "Refunds an amount.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`),
			Handler: func(_ context.Context, args map[string]any) (any, error) {
				amount, _ := args["amount"].(float64)
				f.mu.Lock()
				f.refunds = append(f.refunds, amount)
				f.mu.Unlock()
				return map[string]any{"refunded": amount}, nil
			}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	return f
}

// start starts an approval worker process with --tools-approve and extra
// flags, and waits until it serves.
func (f *approvalFleet) start(name string, extra ...string) *childWorker {
	f.t.Helper()
	args := append([]string{"--nats", f.b.Srv.ClientURL(), "--name", name, "--log-format", "json",
		"--log-level", "warn", "--tools-approve", "--approval-sweep", "200ms"}, extra...)
	return startChildWorker(f.t, "approval worker", approvalWorkerEnv, args, func(line string, _ io.Writer) {
		if id, ok := strings.CutPrefix(line, "call "); ok {
			f.mu.Lock()
			f.calls[id]++
			f.mu.Unlock()
		}
	})
}

// submitReacts creates a branch per id (its react's model is the
// approval model, its tool refund) and submits a react of that id on it.
func (f *approvalFleet) submitReacts(ctx context.Context, ids ...string) {
	f.t.Helper()
	for _, id := range ids {
		if _, err := f.b.Client.Do(ctx, "branch.create", "", map[string]any{"branch_id": "b-" + id, "tools": []string{"refund"}, "chat_model": "approval:m"}); err != nil {
			f.t.Fatal(err)
		}
		if _, err := f.b.Client.Submit(ctx, "react", "b-"+id, map[string]any{"instruction": "Refund the customer."}, client.WithID(id)); err != nil {
			f.t.Fatal(err)
		}
	}
}

// parkedCalls returns the branch.approval_requested events in the history
// of branch, and the sequence of its last branch.messages.
func (f *approvalFleet) parkedCalls(ctx context.Context, branch string) (calls []wire.Event, lastMessages uint64) {
	f.t.Helper()
	page, err := f.b.Client.BranchHistory(ctx, branch, wire.BranchHistoryRequest{Limit: 1000})
	if err != nil {
		f.t.Fatalf("history of %s: %v", branch, err)
	}
	for _, ev := range page.Value.Events {
		switch ev.Type {
		case wire.EventApprovalRequested:
			calls = append(calls, ev)
		case wire.EventMessages:
			lastMessages = ev.Seq
		}
	}
	return calls, lastMessages
}

// parked waits until n approvals are pending with their request kept,
// and returns them by request id.
func (f *approvalFleet) parked(ctx context.Context, n int) map[string]wire.Approval {
	f.t.Helper()
	var byRequest map[string]wire.Approval
	waitFor(f.t, 2*time.Minute, fmt.Sprintf("%d parked approvals", n), func() bool {
		list, err := f.b.Client.Approvals(ctx, true)
		if err != nil {
			return false
		}
		byRequest = map[string]wire.Approval{}
		for _, a := range list {
			if a.Parked {
				byRequest[a.RequestID] = a
			}
		}
		return len(byRequest) >= n
	})
	return byRequest
}

// answer awaits request id's react and returns its answer (the value, a
// JSON string).
func (f *approvalFleet) answer(ctx context.Context, id string) string {
	f.t.Helper()
	r, err := f.b.Client.Await(ctx, id)
	if err != nil {
		f.t.Fatalf("await %s: %v", id, err)
	}
	res, err := r.Result()
	if err != nil {
		f.t.Fatalf("react %s: %v", id, err)
	}
	return string(res.Value)
}

// paidTwice returns the stages whose model call was paid more than once.
func (f *approvalFleet) paidTwice() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for stage, n := range f.calls {
		if n > 1 {
			out[stage] = n
		}
	}
	return out
}

// callsOf counts the model calls paid for request id.
func (f *approvalFleet) callsOf(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for stage, c := range f.calls {
		if strings.HasPrefix(stage, id+"/") {
			n += c
		}
	}
	return n
}
