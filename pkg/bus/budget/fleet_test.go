package budget_test

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/budget"
	"github.com/lionbus/lionbus/pkg/bus/budget/budgetkv"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	opsbudget "github.com/lionbus/lionbus/pkg/ops/budget"
)

// Two workers' fleets over one server: the bucket's limits reach both
// ledgers, each admits half, a pause broadcast by one pauses the other,
// and one leaving gives the other the whole budget.
func TestFleetSharesLimitsMembersAndPauses(t *testing.T) {
	srv := bustest.NewServer(t)
	nc, js := bustest.Connect(t, srv)
	res := bustest.Provision(t, js, provision.Config{Prefix: "bf"})
	ctx := bustest.Ctx(t)
	const model = "openai:m"
	initial := map[string]opsbudget.Limits{model: {Requests: 100, InFlight: 8}}
	la, lb := opsbudget.NewLedger(), opsbudget.NewLedger()
	fa, err := budget.Start(ctx, nc, res, la, budget.Config{Member: "a", Initial: initial, Heartbeat: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Stop(ctx)
	// b's file says otherwise: the bucket's value, written first, wins.
	fb, err := budget.Start(ctx, nc, res, lb, budget.Config{Member: "b",
		Initial: map[string]opsbudget.Limits{model: {Requests: 1}}, Heartbeat: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	bustest.WaitFor(t, 5*time.Second, "both ledgers split in two", func() bool {
		return la.Stats(model).Share.Requests == 50 && lb.Stats(model).Share.Requests == 50
	})
	if err := budgetkv.Set(ctx, res.Budgets, model, opsbudget.Limits{Requests: 10}); err != nil {
		t.Fatal(err)
	}
	bustest.WaitFor(t, 5*time.Second, "the new limits on both", func() bool {
		return la.Stats(model).Share.Requests == 5 && lb.Stats(model).Share.Requests == 5
	})
	all, err := budgetkv.List(ctx, res.Budgets)
	if err != nil || len(all) != 1 || all[model].Requests != 10 {
		t.Fatalf("List: %v %v", all, err)
	}
	fa.Broadcast(model, opsbudget.Signal{Status: 429, RetryAfter: 2 * time.Second, RemainingRequests: -1, RemainingTokens: -1})
	bustest.WaitFor(t, 5*time.Second, "b paused by a's signal", func() bool {
		return !lb.Stats(model).PausedUntil.IsZero()
	})
	if err := fb.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	bustest.WaitFor(t, 5*time.Second, "a's share whole again", func() bool {
		return la.Stats(model).Share.Requests == 10
	})
	if err := budgetkv.Delete(ctx, res.Budgets, model); err != nil {
		t.Fatal(err)
	}
	bustest.WaitFor(t, 5*time.Second, "the model unlimited again", func() bool {
		_, ok := la.Limits(model)
		return !ok
	})
	if _, err := budgetkv.Get(ctx, res.Budgets, model); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
}
