package connloss_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/internal/connloss"
)

// A request outstanding when the server goes away fails at once with
// ErrLost, not after its timeout; the disconnect handler the connection
// had is still called; a call bounded after the loss is not cut short;
// and one that completed is unaffected.
func TestBound_cuts_short_what_was_outstanding_when_the_connection_was_lost(t *testing.T) {
	t.Parallel()
	srv := bustest.NewCoreServer(t)
	var disconnects atomic.Int32
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
		nats.DisconnectErrHandler(func(*nats.Conn, error) { disconnects.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// Heard, never answered.
	if _, err := nc.Subscribe("silent", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	done, cancelDone := connloss.Bound(context.Background(), nc, time.Minute)
	cancelDone()
	if err := connloss.Err(done, context.Canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("a call that completed: %v, want its own error", err)
	}

	ctx, cancel := connloss.Bound(context.Background(), nc, time.Minute)
	defer cancel()
	failed := make(chan error, 1)
	go func() {
		_, err := nc.RequestWithContext(ctx, "silent", nil)
		failed <- connloss.Err(ctx, err)
	}()
	time.Sleep(50 * time.Millisecond) // the request is out
	start := time.Now()
	srv.Shutdown()
	select {
	case err := <-failed:
		if !errors.Is(err, connloss.ErrLost) {
			t.Fatalf("outstanding request failed with %v, want ErrLost", err)
		}
		t.Logf("cut short %s after the server went away", time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("the outstanding request was not cut short when the connection was lost")
	}
	bustest.WaitFor(t, 5*time.Second, "the connection's own disconnect handler", func() bool { return disconnects.Load() == 1 })

	later, cancelLater := connloss.Bound(context.Background(), nc, 200*time.Millisecond)
	defer cancelLater()
	<-later.Done()
	if err := connloss.Err(later, context.DeadlineExceeded); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a call bounded after the loss: %v, want its own timeout", err)
	}
}
