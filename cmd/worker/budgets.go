package main

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus"
	busbudget "github.com/lionbus/lionbus/pkg/bus/budget"
	"github.com/lionbus/lionbus/pkg/bus/metrics"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/budget"
	"github.com/lionbus/lionbus/pkg/ops/provider/anthropic"
	"github.com/lionbus/lionbus/pkg/ops/provider/openai"
)

// meteredProviders are the providers whose calls go through the budget:
// the HTTP APIs that limit requests and tokens.
var meteredProviders = []string{openai.Name, anthropic.Name}

// workerBudgets is the worker's model budget: a ledger in front of the
// HTTP providers, joined to the fleet's budgets once the service runs.
type workerBudgets struct {
	ledger  *budget.Ledger
	file    budget.File
	fleet   *busbudget.Fleet
	metrics *metrics.BudgetMetrics
	log     zerolog.Logger
}

// newWorkerBudgets reads --budgets (when set).
func newWorkerBudgets(cfg config, log zerolog.Logger) (*workerBudgets, error) {
	wb := &workerBudgets{ledger: budget.NewLedger(), log: log.With().Str("component", "budget").Logger()}
	if cfg.Budgets != "" {
		f, err := budget.ReadFile(cfg.Budgets)
		if err != nil {
			return nil, err
		}
		wb.file = f
	}
	return wb, nil
}

// wrap puts the budget in front of the metered providers registered.
func (wb *workerBudgets) wrap(providers *ops.Providers) error {
	for _, name := range meteredProviders {
		prov, err := providers.Lookup(name)
		if err != nil {
			continue
		}
		wrapped := budget.Wrap(prov, budget.Config{
			Ledger:   wb.ledger,
			Prices:   wb.file.Prices,
			OnSignal: wb.signal,
			OnCall:   wb.call,
		})
		if err := providers.Register(name, wrapped); err != nil {
			return err
		}
	}
	return nil
}

// signal broadcasts a learned pause to the fleet.
func (wb *workerBudgets) signal(key string, s budget.Signal) {
	if wb.metrics != nil {
		wb.metrics.Paused(key)
	}
	if wb.fleet != nil {
		wb.fleet.Broadcast(key, s)
	}
}

// call logs a model call that waited for budget and feeds the metrics.
func (wb *workerBudgets) call(r budget.CallReport) {
	if wb.metrics != nil {
		wb.metrics.Call(r)
	}
	ev := wb.log.Debug()
	if r.Waited >= 100*time.Millisecond {
		ev = wb.log.Info()
	}
	ev.Str("model", r.Key).Str("request_id", r.Call.RequestID).Str("branch_id", r.Call.BranchID).
		Dur("budget_wait", r.Waited).Int("reserved_tokens", r.Reserved).Int("used_tokens", r.Used).
		Float64("cost_usd", r.CostUSD).Msg("model call metered")
}

// members records the fleet's member count in the budget metrics, when
// the worker serves them.
func (wb *workerBudgets) members(n int) {
	if wb.metrics != nil {
		wb.metrics.Members(n)
	}
}

// attach joins the fleet's budgets on svc's connection; it leaves them
// when ctx ends (the worker's shutdown).
func (wb *workerBudgets) attach(ctx context.Context, svc *bus.Service, member string) error {
	f, err := busbudget.Start(ctx, svc.Conn(), svc.Resources(), wb.ledger, busbudget.Config{
		Member: member, Initial: wb.file.Limits, Logger: wb.log, OnMembers: wb.members,
	})
	if err != nil {
		return err
	}
	wb.fleet = f
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = f.Stop(sctx)
	}()
	return nil
}

// annotate is the worker middleware that puts, on each request's log
// line, how long its model calls waited for budget in all (budget_wait_ms;
// absent when they did not wait).
func (wb *workerBudgets) annotate(next worker.Handler) worker.Handler {
	return worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		ctx, tally := budget.WithWaitTally(ctx)
		res, err := next.Do(ctx, req)
		if w := tally.Waited(); w > 0 {
			worker.Annotate(ctx, func(e *zerolog.Event) {
				e.Float64("budget_wait_ms", float64(w.Microseconds())/1000)
			})
		}
		return res, err
	})
}
