package main

import (
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/budget"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	opsbudget "github.com/lionbus/lionbus/pkg/ops/budget"
)

func TestPublisher_budget_set_get_ls_rm(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	url := b.Srv.ClientURL()
	// A worker's ledger watching the bucket sees what publisher writes.
	ledger := opsbudget.NewLedger()
	f, err := budget.Start(bustest.Ctx(t), b.NC, b.Res, ledger, budget.Config{Member: "w"})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop(bustest.Ctx(t))
	steps := []step{
		{name: "set", args: []string{"budget", "set", "openai:gpt-x", "--requests", "500", "--tokens", "2000", "--in-flight", "8", "--nats", url},
			wantOut: []string{"openai:gpt-x: requests=500 tokens=2000 in_flight=8 window=1m0s"}},
		{name: "set another", args: []string{"budget", "set", "ollama:llama3:8b", "--requests", "5", "--window", "1s", "--nats", url}},
		{name: "get", args: []string{"budget", "get", "openai:gpt-x", "--nats", url}, wantOut: []string{`{"requests":500,"tokens":2000,"in_flight":8,"window_ms":60000}`}},
		{name: "ls", args: []string{"budget", "ls", "--nats", url}, wantOut: []string{"ollama:llama3:8b\trequests=5", "openai:gpt-x\trequests=500"}},
		{name: "bad model", args: []string{"budget", "get", "gpt-x", "--nats", url}, wantCode: exitUsage, wantErr: []string{"provider:model"}},
		{name: "negative", args: []string{"budget", "set", "openai:gpt-x", "--requests", "-1", "--nats", url}, wantCode: exitFailed, wantErr: []string{"negative"}},
		{name: "bad subcommand", args: []string{"budget", "purge", "--nats", url}, wantCode: exitUsage, wantErr: []string{"unknown budget subcommand"}},
		{name: "rm", args: []string{"budget", "rm", "openai:gpt-x", "--nats", url}, wantOut: []string{"budget removed"}},
		{name: "get removed", args: []string{"budget", "get", "openai:gpt-x", "--nats", url}, wantCode: exitFailed, wantErr: []string{"has no budget"}},
	}
	for _, s := range steps {
		code, out, errOut := call(t, "", s.args...)
		s.check(t, code, out, errOut)
		if s.name == "set" {
			bustest.WaitFor(t, 5*time.Second, "the worker's ledger to apply the budget", func() bool {
				l, ok := ledger.Limits("openai:gpt-x")
				return ok && l.Requests == 500 && l.InFlight == 8
			})
		}
	}
	bustest.WaitFor(t, 5*time.Second, "the worker's ledger to drop the removed budget", func() bool {
		_, ok := ledger.Limits("openai:gpt-x")
		return !ok
	})
}
