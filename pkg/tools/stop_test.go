package tools_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/tools"
)

// TestService_stop_convention checks what a Stop after the first does (see
// Service.Stop and "Stopping and logging" in docs/architecture.md): nothing
// more than wait for the service to stop, then return nil, or ctx's error
// when ctx ends first; it never cuts the first stop's drain short.
func TestService_stop_convention(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		whileRun bool // the later Stop comes while the first waits for a running handler
		canceled bool // the later Stop's ctx is cancelled
		want     error
	}{
		{name: "after the first returned", want: nil},
		{name: "after the first returned, its ctx ended", canceled: true, want: nil},
		{name: "during the first", whileRun: true, want: nil},
		{name: "during the first, its ctx ending first", whileRun: true, canceled: true, want: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			started := make(chan struct{})
			release := make(chan struct{})
			handlerCtx := make(chan error, 1)
			svc := b.serve(t, tools.ServiceConfig{Name: "slow", Tools: []tools.Tool{{Name: "hold", Timeout: time.Minute,
				Handler: func(ctx context.Context, _ map[string]any) (any, error) {
					close(started)
					select {
					case <-release:
					case <-ctx.Done():
					}
					handlerCtx <- ctx.Err()
					return "done", nil
				}}}})
			inv := b.invoker(t, nil)
			answered := make(chan error, 1)
			go func() {
				out, err := inv.Invoke(bustest.Ctx(t), call("hold", nil, "stop/1"))
				if err == nil && out.Error != nil {
					err = out.Error
				}
				answered <- err
			}()
			waitChan(t, started, 10*time.Second, "the handler to start")
			first := make(chan error, 1)
			go func() { first <- svc.Stop(context.Background()) }()
			bustest.WaitFor(t, 10*time.Second, "the first Stop to begin", svc.Stopping)

			if !tt.whileRun {
				close(release)
				if err := waitChan(t, first, 10*time.Second, "the first Stop"); err != nil {
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
			go func() { later <- svc.Stop(ctx) }()
			if tt.whileRun && !tt.canceled {
				select {
				case err := <-later:
					t.Fatalf("the later Stop returned %v while the first waited for the handler", err)
				case <-time.After(200 * time.Millisecond):
				}
			}
			if tt.whileRun {
				if tt.canceled {
					if err := waitChan(t, later, 10*time.Second, "the later Stop"); !errors.Is(err, tt.want) {
						t.Fatalf("later Stop = %v, want %v", err, tt.want)
					}
				}
				close(release)
				if err := waitChan(t, first, 10*time.Second, "the first Stop"); err != nil {
					t.Fatalf("first Stop = %v", err)
				}
			}
			if !tt.whileRun || !tt.canceled {
				if err := waitChan(t, later, 10*time.Second, "the later Stop"); !errors.Is(err, tt.want) {
					t.Fatalf("later Stop = %v, want %v", err, tt.want)
				}
			}
			select {
			case <-svc.Stopped():
			default:
				t.Fatal("a Stop returned before the service stopped")
			}
			if err := waitChan(t, handlerCtx, 10*time.Second, "the handler"); err != nil {
				t.Fatalf("the running handler's context ended (%v): a Stop stopped it hard", err)
			}
			if err := waitChan(t, answered, 10*time.Second, "the answer"); err != nil {
				t.Fatalf("the running invocation was not answered: %v", err)
			}
		})
	}
}
