package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
)

// TestService_stop_convention checks that a Service's Stop, and Close after
// it, may be called again ("Stopping and logging" in docs/architecture.md):
// a later Stop returns nil once the worker has stopped, or ctx's error when
// ctx ends first; a Service that holds no worker stops at once.
func TestService_stop_convention(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name  string
		calls []func(*bus.Service) error // after the service started
		want  []error
	}{
		{
			name:  "stop twice",
			calls: []func(*bus.Service) error{stopWith(context.Background()), stopWith(context.Background())},
			want:  []error{nil, nil},
		},
		{
			name:  "stop, close, close, stop",
			calls: []func(*bus.Service) error{stopWith(context.Background()), closeIt, closeIt, stopWith(context.Background())},
			want:  []error{nil, nil, nil, nil},
		},
		{
			name:  "a later stop with its ctx ended, once stopped",
			calls: []func(*bus.Service) error{stopWith(context.Background()), stopWith(canceled)},
			want:  []error{nil, nil},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := bustest.New(t, provision.Config{})
			svc := b.StartService(t, nil, nil, nil, worker.Config{})
			for i, call := range tt.calls {
				if err := call(svc); !errors.Is(err, tt.want[i]) {
					t.Fatalf("call %d = %v, want %v", i+1, err, tt.want[i])
				}
			}
			select {
			case <-svc.Worker().Stopped():
			case <-time.After(10 * time.Second):
				t.Fatal("the worker did not stop")
			}
		})
	}
	t.Run("no worker", func(t *testing.T) {
		t.Parallel()
		var s bus.Service
		for i := range 2 {
			if err := s.Stop(context.Background()); err != nil {
				t.Fatalf("Stop %d on a Service without a worker = %v", i+1, err)
			}
		}
	})
}

func stopWith(ctx context.Context) func(*bus.Service) error {
	return func(s *bus.Service) error { return s.Stop(ctx) }
}

func closeIt(s *bus.Service) error {
	s.Close()
	return nil
}
