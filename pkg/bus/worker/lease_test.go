package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
)

// TestLease_one_holder_fenced_release_and_age_out: one worker at a time
// holds a branch's lease; the other waits and gets it when it is
// released; a stale release (an older lease) never removes a newer one;
// a lease nobody renews (its worker died) ages out.
func TestLease_one_holder_fenced_release_and_age_out(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{LeaseTTL: time.Second})
	_, js, res := b.Conn(t)
	one := worker.NewLeaserForTest(js, res, "one")
	two := worker.NewLeaserForTest(b.JS, b.Res, "two")
	if one.TTL() != time.Second {
		t.Fatalf("lease TTL %s, want the stream's age limit 1s", one.TTL())
	}
	ctx := bustest.Ctx(t)

	seq1, err := one.Acquire(ctx, "br")
	if err != nil {
		t.Fatal(err)
	}
	// Held: another worker waits.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	if _, err := two.Acquire(short, "br"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second acquire of a held lease: %v, want to wait until its context ends", err)
	}
	cancel()
	// Renewed, it keeps going past its age limit.
	for range 4 {
		time.Sleep(300 * time.Millisecond)
		if seq1, err = one.Renew(ctx, "br", seq1); err != nil {
			t.Fatalf("renew: %v", err)
		}
	}
	// Released: the waiting worker gets it at once.
	got := make(chan uint64, 1)
	go func() {
		s, err := two.Acquire(ctx, "br")
		if err != nil {
			t.Error(err)
		}
		got <- s
	}()
	time.Sleep(20 * time.Millisecond)
	one.Release("br", seq1)
	var seq2 uint64
	select {
	case seq2 = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting worker did not get the released lease")
	}
	// A stale release of the old lease leaves the new one in place, and
	// the old holder cannot renew it.
	one.Release("br", seq1)
	if _, err := one.Renew(ctx, "br", seq1); err == nil {
		t.Fatal("the old holder renewed a lease it no longer holds")
	}
	short, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
	if _, err := one.Acquire(short, "br"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire after a stale release: %v, want the new lease still held", err)
	}
	cancel()
	// The holder dies (stops renewing): the lease ages out.
	start := time.Now()
	if _, err := one.Acquire(ctx, "br"); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("an abandoned lease took %s to age out", waited)
	}
	_ = seq2
}
