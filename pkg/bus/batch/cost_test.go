package batch_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/budget"
	"github.com/lionbus/lionbus/pkg/wire"
)

// metered reports a usage for each answer of the counted model: as many
// input tokens as the instruction has bytes, as many output tokens as
// the answer has, so that items cost different amounts.
type metered struct{ *countedModel }

func (m metered) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	comp, err := m.countedModel.Complete(ctx, call)
	if err != nil {
		return nil, err
	}
	in, out := len(call.Instruction), 3*len(comp.Text)
	comp.Usage = &ops.Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
	return comp, nil
}

// price is the price table of the cost tests.
var price = budget.Price{Input: 2.5, Output: 10}

// startPricedBus runs one worker whose counted model reports usage and is
// priced by the table above, as the worker's --budgets file prices a
// model.
func startPricedBus(t *testing.T, model *countedModel) *bustest.Bus {
	t.Helper()
	b := bustest.New(t, provision.Config{})
	priced := budget.Wrap(metered{model}, budget.Config{Ledger: budget.NewLedger(), Prices: budget.Prices{"counted:echo": price}})
	b.StartService(t, nil, nil, map[string]ops.Provider{"counted": priced}, worker.Config{MaxInFlight: 64})
	return b
}

// itemCost is what the item with instruction instr costs by the price
// table: the echo answers the instruction itself.
func itemCost(instr string) float64 {
	return price.Cost(ops.Usage{InputTokens: len(instr), OutputTokens: 3 * len(instr)})
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// A batch reports what it cost (issue 24: "a request, a branch and a
// batch report what they cost"): every result's usage is the price
// table's cost of what the model reported, and the batch's usage is their
// sum, over the retry round too.
func TestBatch_cost_is_the_sum_of_its_items_by_the_price_table(t *testing.T) {
	model := newCounted()
	b := startPricedBus(t, model)
	const n = 120
	instr := func(i int) string {
		if i%40 == 5 {
			return fmt.Sprintf("fail %d", i) // fails once, succeeds on the retry
		}
		return fmt.Sprintf("echo %d %s", i, strings.Repeat("x", i))
	}
	submit(t, b.Client, client.BatchSpec{ID: "priced", Concurrency: 16}, jsonl(n, instr))
	end := waitEnded(t, b.Client, "priced")
	var want wire.Usage
	for i := range n {
		if !strings.HasPrefix(instr(i), "fail") {
			in := len(instr(i))
			want = wire.Usage{InputTokens: want.InputTokens + in, OutputTokens: want.OutputTokens + 3*in,
				TotalTokens: want.TotalTokens + 4*in, CostUSD: want.CostUSD + itemCost(instr(i))}
		}
	}
	if end.Counts.Failed != 3 || !sameUsage(end.Usage, want) {
		t.Fatalf("first round: counts %+v, usage %+v; want 3 failed and usage %+v", end.Counts, end.Usage, want)
	}
	for id, r := range results(t, b.Client, "priced") {
		if r.Status != wire.ItemSucceeded {
			continue
		}
		var i int
		fmt.Sscanf(id, "item-%d", &i)
		if r.Usage == nil || !near(r.Usage.CostUSD, itemCost(instr(i))) || r.TotalUsage == nil || *r.TotalUsage != *r.Usage {
			t.Fatalf("%s: usage %+v, total %+v; want cost %v", id, r.Usage, r.TotalUsage, itemCost(instr(i)))
		}
	}

	// The retry runs the three failed items; the batch's usage grows by
	// exactly what they cost.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := b.Client.RetryBatch(ctx, "priced"); err != nil {
		t.Fatal(err)
	}
	waitRound := func(bt *wire.Batch) bool { return bt.Round == 2 && wire.BatchFinal(bt.State) }
	end = waitFor(t, b.Client, "priced", waitRound)
	for i := range n {
		if strings.HasPrefix(instr(i), "fail") {
			in := len(instr(i))
			want = wire.Usage{InputTokens: want.InputTokens + in, OutputTokens: want.OutputTokens + 3*in,
				TotalTokens: want.TotalTokens + 4*in, CostUSD: want.CostUSD + itemCost(instr(i))}
		}
	}
	if end.Counts.Succeeded != n || !sameUsage(end.Usage, want) {
		t.Fatalf("after the retry: counts %+v, usage %+v; want %d succeeded and usage %+v", end.Counts, end.Usage, n, want)
	}
}

// A cost ceiling: once the finished items cost MaxCostUSD no new item
// starts; the others are canceled with code cost_ceiling, the batch ends
// canceled with cost_ceiling_reached, and its cost passes the ceiling by
// at most the items that were in flight. Raising the ceiling and retrying
// the canceled items finishes the batch, no item run twice.
func TestBatch_cost_ceiling_starts_no_new_item(t *testing.T) {
	model := newCounted()
	b := startPricedBus(t, model)
	const n, conc = 200, 4
	instr := func(i int) string { return fmt.Sprintf("echo %03d", i) } // every item costs the same
	each := itemCost(instr(0))
	ceiling := 50 * each
	submit(t, b.Client, client.BatchSpec{ID: "capped", Concurrency: conc, MaxCostUSD: ceiling}, jsonl(n, instr))
	end := waitEnded(t, b.Client, "capped")
	done := end.Counts.Succeeded
	if end.State != wire.BatchCanceled || !end.CostCeilingReached || end.Counts.Canceled != n-done {
		t.Fatalf("ended %s, ceiling reached %v, counts %+v; want canceled by the ceiling", end.State, end.CostCeilingReached, end.Counts)
	}
	if done < 50 || done > 50+conc-1 {
		t.Fatalf("%d items succeeded; want 50 (the ceiling) to %d (with those in flight)", done, 50+conc-1)
	}
	if !near(end.Usage.CostUSD, float64(done)*each) || !near(end.Usage.CostUSD, ceiling) && end.Usage.CostUSD < ceiling {
		t.Fatalf("cost %v for %d items of %v; ceiling %v", end.Usage.CostUSD, done, each, ceiling)
	}
	for id, r := range results(t, b.Client, "capped") {
		if r.Status == wire.ItemCanceled && (r.Error == nil || r.Error.Code != wire.CodeCostCeiling) {
			t.Fatalf("%s: %+v, want canceled with %s", id, r, wire.CodeCostCeiling)
		}
	}
	calls := 0
	for _, c := range model.snapshot() {
		calls += c
	}
	if calls != done {
		t.Fatalf("%d model calls, want %d (one per succeeded item)", calls, done)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := b.Client.SetBatchMaxCost(ctx, "capped", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Client.RetryBatch(ctx, "capped", wire.ItemCanceled); err != nil {
		t.Fatal(err)
	}
	end = waitFor(t, b.Client, "capped", func(bt *wire.Batch) bool { return bt.Round == 2 && wire.BatchFinal(bt.State) })
	if end.State != wire.BatchCompleted || end.CostCeilingReached || end.Counts.Succeeded != n || !near(end.Usage.CostUSD, n*each) {
		t.Fatalf("after the retry: %s, ceiling reached %v, counts %+v, cost %v; want completed, %d succeeded, cost %v",
			end.State, end.CostCeilingReached, end.Counts, end.Usage.CostUSD, n, n*each)
	}
	for k, c := range model.snapshot() {
		if c != 1 {
			t.Fatalf("%q called %d times, want once", k, c)
		}
	}
}

// A ceiling is checked when it is set.
func TestBatch_cost_ceiling_bad_values(t *testing.T) {
	b := startBus(t, newCounted(), 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, usd := range []float64{-1, math.NaN(), math.Inf(1)} {
		_, err := b.Client.SubmitBatch(ctx, client.BatchSpec{ID: "bad", MaxCostUSD: usd}, strings.NewReader(string(jsonl(1, func(int) string { return "x" }))))
		if err == nil || !strings.Contains(err.Error(), "max cost") {
			t.Fatalf("max cost %v: %v, want refused", usd, err)
		}
		if _, err := b.Client.SetBatchMaxCost(ctx, "bad", usd); err == nil {
			t.Fatalf("set max cost %v: accepted", usd)
		}
	}
	if _, err := b.Client.SetBatchMaxCost(ctx, "nope", 1); err == nil || !strings.Contains(err.Error(), "no such batch") {
		t.Fatalf("set max cost of an unknown batch: %v", err)
	}
}

func sameUsage(a, b wire.Usage) bool {
	return a.InputTokens == b.InputTokens && a.OutputTokens == b.OutputTokens && a.TotalTokens == b.TotalTokens && near(a.CostUSD, b.CostUSD)
}

// waitFor watches batch id until ok holds, and returns that record.
func waitFor(t *testing.T, cl *client.Client, id string, ok func(*wire.Batch) bool) *wire.Batch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var got *wire.Batch
	errDone := fmt.Errorf("done")
	err := cl.WatchBatch(ctx, id, func(b *wire.Batch) error {
		if ok(b) {
			got = b
			return errDone
		}
		return nil
	})
	if got == nil {
		t.Fatalf("batch %s: %v", id, err)
	}
	return got
}
