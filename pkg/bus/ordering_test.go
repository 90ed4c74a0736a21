package bus_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// promptCounter is a model that records, for each call, how many earlier
// instructions its prompt held, and counts its calls per instruction.
type promptCounter struct {
	delay time.Duration
	mu    sync.Mutex
	seen  map[string]int // instruction -> earlier instructions in its prompt
	calls map[string]int
}

func (p *promptCounter) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	users := 0
	for _, m := range call.Messages.All() {
		if m.Role == history.RoleUser {
			users++
		}
	}
	if p.delay > 0 {
		time.Sleep(p.delay)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[call.Instruction] = users - 1
	p.calls[call.Instruction]++
	return &ops.Completion{Text: "ok"}, nil
}

// TestOrdering_one_operation_at_a_time_per_branch_across_workers: many
// clients at once on one branch, served by two workers: every request is
// answered, runs its model once, and its model call saw every exchange
// recorded before its own — no operation lost an append race and folded
// messages its model never saw.
func TestOrdering_one_operation_at_a_time_per_branch_across_workers(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{LeaseTTL: 3 * time.Second})
	model := &promptCounter{delay: 2 * time.Millisecond, seen: map[string]int{}, calls: map[string]int{}}
	for range 2 {
		b.StartWorker(t, nil, nil, map[string]ops.Provider{"count": model}, worker.Config{MaxInFlight: 16})
	}
	b.CreateBranch(t, "turns")
	const clients, each = 12, 3
	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				text := fmt.Sprintf("c%d-%d", c, i)
				id, err := b.Client.Submit(bustest.Ctx(t), "communicate", "turns", map[string]any{"instruction": text, "chat_model": "count:x"})
				if err != nil {
					errs <- err
					return
				}
				r := b.Await(t, id)
				if _, err := r.Result(); err != nil {
					errs <- fmt.Errorf("%s: %v", text, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	k := 0
	for _, ev := range b.History(t, "turns") {
		if ev.Type != history.EventMessages {
			continue
		}
		text := fmt.Sprint(ev.Messages[0].Content["instruction"])
		model.mu.Lock()
		seen, calls := model.seen[text], model.calls[text]
		model.mu.Unlock()
		if calls != 1 {
			t.Errorf("%s: %d model calls, want 1", text, calls)
		}
		if seen != k {
			t.Errorf("%s is exchange %d of the branch, but its model call saw %d earlier ones", text, k, seen)
		}
		k++
	}
	if k != clients*each {
		t.Fatalf("%d exchanges recorded, want %d", k, clients*each)
	}
}
