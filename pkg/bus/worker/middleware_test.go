package worker_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

func TestWorker_middleware_wraps_the_handler_first_outermost(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	var mu sync.Mutex
	var trace []string
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		trace = append(trace, s)
	}
	named := func(name string) worker.Middleware {
		return func(next worker.Handler) worker.Handler {
			return worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
				note(name + ">")
				defer note("<" + name)
				return next.Do(ctx, req)
			})
		}
	}
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		note("handler")
		return &ops.Result{Value: req.Data}, nil
	})
	b.StartWorker(t, nil, h, nil, worker.Config{Middleware: []worker.Middleware{named("a"), named("b")}})
	bustest.MustResult(t, b.Do(t, "op.echo", "", map[string]any{"x": 1}), nil)
	mu.Lock()
	defer mu.Unlock()
	if got, want := strings.Join(trace, " "), "a> b> handler <b <a"; got != want {
		t.Fatalf("ran %q, want %q", got, want)
	}
}

func TestNew_refuses_a_middleware_returning_no_handler(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	none := func(worker.Handler) worker.Handler { return nil }
	_, err := worker.New(b.NC, b.Res, b.Codec, echoHandler(), worker.Config{Middleware: []worker.Middleware{none}})
	if !errors.Is(err, worker.ErrInvalidConfig) {
		t.Fatalf("New = %v, want ErrInvalidConfig", err)
	}
}
