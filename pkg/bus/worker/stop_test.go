package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

// TestWorker_stop_convention checks what a Stop after the first does (see
// Worker.Stop and "Stopping and logging" in docs/architecture.md): nothing
// more than wait for the worker to stop, then return nil, or ctx's error
// when ctx ends first; it never cuts the first stop's drain short.
func TestWorker_stop_convention(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		started  bool // the worker was started and runs a request when Stop is called
		whileRun bool // the later Stop comes while the first drains that request
		canceled bool // the later Stop's ctx is cancelled
		want     error
	}{
		{name: "never started", want: nil},
		{name: "after the first returned", started: true, want: nil},
		{name: "after the first returned, its ctx ended", started: true, canceled: true, want: nil},
		{name: "during the first", started: true, whileRun: true, want: nil},
		{name: "during the first, its ctx ending first", started: true, whileRun: true, canceled: true, want: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := bustest.New(t, provision.Config{})
			if !tt.started {
				w, err := worker.New(b.NC, b.Res, b.Codec, echoHandler(), worker.Config{})
				if err != nil {
					t.Fatal(err)
				}
				for i := range 2 {
					if err := w.Stop(bustest.Ctx(t)); err != nil {
						t.Fatalf("Stop %d = %v, want nil", i+1, err)
					}
				}
				<-w.Stopped()
				if err := w.Start(bustest.Ctx(t)); !errors.Is(err, worker.ErrWorkerStarted) {
					t.Fatalf("Start after Stop = %v, want ErrWorkerStarted", err)
				}
				return
			}

			started := make(chan struct{}, 1)
			release := make(chan struct{})
			handlerCtx := make(chan error, 1)
			h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
				started <- struct{}{}
				select {
				case <-release:
					handlerCtx <- ctx.Err()
				case <-ctx.Done():
					handlerCtx <- ctx.Err()
				}
				return &ops.Result{Value: json.RawMessage(`"finished"`)}, nil
			})
			w := b.StartWorker(t, nil, h, nil, worker.Config{DrainTimeout: time.Minute})
			id, err := b.Client.Submit(bustest.Ctx(t), "op.drain", "", nil)
			if err != nil {
				t.Fatal(err)
			}
			<-started
			first := make(chan error, 1)
			go func() { first <- w.Stop(context.Background()) }()
			bustest.WaitFor(t, 10*time.Second, "the first Stop to begin", w.Stopping)

			if !tt.whileRun {
				close(release)
				if err := <-first; err != nil {
					t.Fatalf("first Stop = %v", err)
				}
			}
			ctx := bustest.Ctx(t)
			if tt.canceled {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				cancel()
			}
			later := make(chan error, 1)
			go func() { later <- w.Stop(ctx) }()
			if tt.whileRun && !tt.canceled {
				select {
				case err := <-later:
					t.Fatalf("the later Stop returned %v while the first drained", err)
				case <-time.After(200 * time.Millisecond):
				}
			}
			if tt.whileRun {
				if tt.canceled {
					if err := <-later; !errors.Is(err, tt.want) {
						t.Fatalf("later Stop = %v, want %v", err, tt.want)
					}
				}
				close(release)
				if err := <-first; err != nil {
					t.Fatalf("first Stop = %v, want nil: the later one cut its drain short", err)
				}
			}
			if !tt.whileRun || !tt.canceled {
				if err := <-later; !errors.Is(err, tt.want) {
					t.Fatalf("later Stop = %v, want %v", err, tt.want)
				}
			}
			select {
			case <-w.Stopped():
			default:
				t.Fatal("a Stop returned before the worker stopped")
			}
			if err := <-handlerCtx; err != nil {
				t.Fatalf("the drained request's context ended (%v): a Stop stopped it hard", err)
			}
			bustest.MustResult(t, b.Await(t, id), nil)
		})
	}
}
