package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/budget/budgetkv"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// budgetLong describes the budget commands in their help.
const budgetLong = `The fleet's model budgets, in the KV bucket <prefix>_budgets that every
worker watches (docs/budgets.md). MODEL is a model reference, provider:model.

  set MODEL --requests N --tokens N --in-flight N [--window 1m]
           set the model's limits (each per window; 0 is no limit)
  get MODEL   print the model's limits as JSON
  ls          one line per model with a budget
  rm MODEL    remove the model's budget (it is no longer limited)`

// budgetSet is ` + "`publisher budget set MODEL`" + `.
func (a *app) budgetSet(fs *flag.FlagSet) func([]string) int {
	var l wire.BudgetLimits
	fs.IntVar(&l.Requests, "requests", 0, "calls per window (0: no limit)")
	fs.IntVar(&l.Tokens, "tokens", 0, "tokens (input + output) per window (0: no limit)")
	fs.IntVar(&l.InFlight, "in-flight", 0, "calls at once over the fleet (0: no limit)")
	window := fs.Duration("window", wire.DefaultBudgetWindow, "the window of --requests and --tokens")
	return func(args []string) int {
		if *window <= 0 {
			return usageError(a.stderr, fmt.Errorf("--window must be positive, got %s", *window))
		}
		l.WindowMS = window.Milliseconds()
		return a.withBudgets("set", args, func(ctx context.Context, kv jetstream.KeyValue, model string) error {
			if err := budgetkv.Set(ctx, kv, model, l); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s: requests=%d tokens=%d in_flight=%d window=%s\n", model, l.Requests, l.Tokens, l.InFlight, l.Window())
			return nil
		})
	}
}

// budgetCmd is `publisher budget get|ls|rm`.
func (a *app) budgetCmd(sub string) func(*flag.FlagSet) func([]string) int {
	return func(*flag.FlagSet) func([]string) int {
		return func(args []string) int {
			return a.withBudgets(sub, args, func(ctx context.Context, kv jetstream.KeyValue, model string) error {
				switch sub {
				case "get":
					l, err := budgetkv.Get(ctx, kv, model)
					if errors.Is(err, jetstream.ErrKeyNotFound) {
						return fmt.Errorf("%s has no budget", model)
					}
					if err != nil {
						return err
					}
					return printJSON(a.stdout, l)
				case "rm":
					if err := budgetkv.Delete(ctx, kv, model); err != nil {
						return err
					}
					fmt.Fprintf(a.stdout, "%s: budget removed\n", model)
					return nil
				}
				all, err := budgetkv.List(ctx, kv)
				if err != nil {
					return err
				}
				for _, k := range slices.Sorted(maps.Keys(all)) {
					l := all[k]
					fmt.Fprintf(a.stdout, "%s\trequests=%d tokens=%d in_flight=%d window=%s\n", k, l.Requests, l.Tokens, l.InFlight, l.Window())
				}
				return nil
			})
		}
	}
}

func printJSON(w io.Writer, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", raw)
	return err
}

// withBudgets checks args (a model reference, except for ls), connects,
// opens the budgets bucket and runs do.
func (a *app) withBudgets(sub string, args []string, do func(context.Context, jetstream.KeyValue, string) error) int {
	want := 1
	if sub == "ls" {
		want = 0
	}
	if len(args) != want {
		return usageError(a.stderr, fmt.Errorf("budget %s takes %d argument(s), got %d", sub, want, len(args)))
	}
	model := ""
	if want == 1 {
		if _, err := wire.ParseModelRef(args[0]); err != nil {
			return usageError(a.stderr, err)
		}
		model = args[0]
	}
	ctx, cancel := context.WithTimeout(a.ctx, a.o.Timeout)
	defer cancel()
	_, nc, code := connect(ctx, a.o, a.stderr)
	if nc == nil {
		return code
	}
	defer nc.Close()
	var opts []jetstream.JetStreamOpt
	if a.o.APIPrefix != "" {
		js, err := jetstream.NewWithAPIPrefix(nc, a.o.APIPrefix)
		if err != nil {
			return usageError(a.stderr, err)
		}
		return a.budgetRun(ctx, js, sub, model, do)
	}
	js, err := jetstream.New(nc, opts...)
	if err != nil {
		return usageError(a.stderr, err)
	}
	return a.budgetRun(ctx, js, sub, model, do)
}

func (a *app) budgetRun(ctx context.Context, js jetstream.JetStream, sub, model string, do func(context.Context, jetstream.KeyValue, string) error) int {
	bucket := protocol.Subjects{Prefix: a.o.Prefix}.BudgetsBucket()
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		fmt.Fprintf(a.stderr, "publisher: budget %s: bucket %s: %v (has a worker provisioned the prefix?)\n", sub, bucket, err)
		return exitNoAnswer
	}
	if err := do(ctx, kv, model); err != nil {
		fmt.Fprintf(a.stderr, "publisher: budget %s: %v\n", sub, err)
		return exitFailed
	}
	return exitOK
}
