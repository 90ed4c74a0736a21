package embedded_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus/embedded"
)

// TestServer_shutdown_convention checks that Shutdown, the embedded server's
// Stop ("Stopping and logging" in docs/architecture.md), may be called
// again, after it returned or at the same time: every call returns once the
// server is down and its temporary store gone, and none fails.
func TestServer_shutdown_convention(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		concurrent int // calls made at once after the first returned (0) or with it
	}{
		{name: "after the first returned"},
		{name: "at the same time", concurrent: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := embedded.Start(context.Background(), embedded.Config{Port: embedded.RandomPort})
			if err != nil {
				t.Fatal(err)
			}
			dir := s.NATSServer().JetStreamConfig().StoreDir
			url := s.ClientURL()
			down := func() {
				if s.NATSServer().Running() {
					t.Error("Shutdown returned with the server running")
				}
				if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("Shutdown returned with the store dir there (%v)", err)
				}
			}
			if tt.concurrent == 0 {
				s.Shutdown()
				down()
				s.Shutdown()
				down()
			} else {
				var wg sync.WaitGroup
				for range tt.concurrent {
					wg.Go(func() {
						s.Shutdown()
						down()
					})
				}
				wg.Wait()
			}
			if nc, err := nats.Connect(url, nats.NoReconnect()); err == nil {
				nc.Close()
				t.Fatal("connected to a server shut down")
			}
		})
	}
}
