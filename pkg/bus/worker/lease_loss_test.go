package worker_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

// What a renewal does when the lease's subject no longer holds the lease
// it renews: it takes the lease back when the subject is empty (its
// message deleted, or the leases stream created again, whose sequences
// are all higher), renews its own newer lease (a renewal whose
// acknowledgement was lost), and fails when another worker holds the
// branch. The leases stream refuses a purge, which would take every lease
// from under its holders.
func TestLease_renewal_after_the_lease_vanished(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// vanish does something to the lease of seq held by one.
		vanish func(t *testing.T, b *bustest.Bus, one worker.Leaser, seq uint64)
		// taken: the renewal must fail, another worker holds the lease.
		taken bool
	}{
		{name: "purge refused", vanish: func(t *testing.T, b *bustest.Bus, one worker.Leaser, seq uint64) {
			if err := b.Res.Leases.Purge(bustest.Ctx(t)); err == nil {
				t.Fatal("the leases stream let its leases be purged")
			}
		}},
		{name: "message deleted", vanish: func(t *testing.T, b *bustest.Bus, one worker.Leaser, seq uint64) {
			if err := b.Res.Leases.DeleteMsg(bustest.Ctx(t), seq); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "leases stream deleted and created again", vanish: func(t *testing.T, b *bustest.Bus, one worker.Leaser, seq uint64) {
			if err := b.JS.DeleteStream(bustest.Ctx(t), b.Res.Subjects.LeasesStream()); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Res.Repair(bustest.Ctx(t), []provision.Resource{{Kind: provision.KindStream, Name: b.Res.Subjects.LeasesStream()}}, time.Now()); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "renewed, its acknowledgement lost", vanish: func(t *testing.T, b *bustest.Bus, one worker.Leaser, seq uint64) {
			m := nats.NewMsg(b.Res.Subjects.Lease("br"))
			m.Data = []byte(one.Owner())
			if _, err := b.JS.PublishMsg(bustest.Ctx(t), m, jetstream.WithExpectLastSequencePerSubject(seq)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "taken by another worker", taken: true, vanish: func(t *testing.T, b *bustest.Bus, one worker.Leaser, seq uint64) {
			if err := b.Res.Leases.DeleteMsg(bustest.Ctx(t), seq); err != nil {
				t.Fatal(err)
			}
			two := worker.NewLeaserForTest(b.JS, b.Res, "two")
			if _, err := two.Acquire(bustest.Ctx(t), "br"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := bustest.New(t, provision.Config{LeaseTTL: 5 * time.Second})
			_, js, res := b.Conn(t)
			one := worker.NewLeaserForTest(js, res, "one")
			ctx := bustest.Ctx(t)
			seq, err := one.Acquire(ctx, "br")
			if err != nil {
				t.Fatal(err)
			}
			tt.vanish(t, b, one, seq)
			next, err := one.Renew(ctx, "br", seq)
			if tt.taken {
				if err == nil || !strings.Contains(err.Error(), "another worker holds the lease") {
					t.Fatalf("renew of a lease another worker took: %d, %v; want it refused", next, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("renew: %v", err)
			}
			if next <= seq {
				t.Errorf("renewed to sequence %d, not above %d", next, seq)
			}
			// Held again: nobody else takes it.
			short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			if _, err := worker.NewLeaserForTest(b.JS, b.Res, "two").Acquire(short, "br"); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("another worker's acquire: %v, want to wait for the lease held", err)
			}
		})
	}
}

// concurrency counts the handlers running per branch at once, and the
// most ever seen.
type concurrency struct {
	mu      sync.Mutex
	running map[string]int
	max     int
	runs    int
}

func (c *concurrency) enter(branch string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running[branch]++
	c.runs++
	c.max = max(c.max, c.running[branch])
}

func (c *concurrency) leave(branch string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running[branch]--
}

// The leases stream is deleted while a worker runs a branch's request
// under its lease, and created again at once: the holder takes its lease
// back at its next renewal and goes on; a request of the branch that
// reaches another worker then waits for the lease, so the two never run
// at once, and all are answered, none run twice. A request of another
// branch, on the stream created again, runs only once the stream's grace
// has passed.
func TestLease_stream_deleted_under_a_holder_never_runs_a_branch_twice(t *testing.T) {
	t.Parallel()
	const ttl = 2 * time.Second
	b := bustest.New(t, provision.Config{LeaseTTL: ttl})
	c := &concurrency{running: map[string]int{}}
	release := make(chan struct{})
	var mu sync.Mutex
	startedAt := map[string]time.Time{}
	holding := make(chan struct{})
	var holdOnce sync.Once
	h := worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		c.enter(req.BranchID)
		defer c.leave(req.BranchID)
		mu.Lock()
		startedAt[string(req.Data)] = time.Now()
		mu.Unlock()
		if strings.Contains(string(req.Data), "hold") {
			holdOnce.Do(func() { close(holding) })
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return &ops.Result{}, nil
	})
	cfg := worker.Config{MaxInFlight: 1, HealthInterval: time.Hour}
	for range 2 {
		b.StartWorker(t, nil, h, nil, cfg)
	}
	ctx := bustest.Ctx(t)
	first, err := b.Client.Submit(ctx, "op.x", "br", map[string]any{"hold": true})
	if err != nil {
		t.Fatal(err)
	}
	<-holding
	if err := b.JS.DeleteStream(ctx, b.Res.Subjects.LeasesStream()); err != nil {
		t.Fatal(err)
	}
	recreated := time.Now()
	if _, err := b.Res.Repair(ctx, []provision.Resource{{Kind: provision.KindStream, Name: b.Res.Subjects.LeasesStream()}}, recreated); err != nil {
		t.Fatal(err)
	}
	// The other worker gets it (the holder's one slot is taken).
	other, err := b.Client.Submit(ctx, "op.x", "other", map[string]any{"other": true})
	if err != nil {
		t.Fatal(err)
	}
	// Past the holder's next renewal (every fifth of the TTL), which
	// finds the subject empty and takes the lease back.
	time.Sleep(ttl / 2)
	second, err := b.Client.Submit(ctx, "op.x", "br", map[string]any{"after": true})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl)
	close(release)
	for _, id := range []string{first, second, other} {
		bustest.MustResult(t, b.Await(t, id), nil)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.max != 1 {
		t.Errorf("%d requests of one branch ran at once, want 1", c.max)
	}
	if c.runs != 3 {
		t.Errorf("%d runs, want 3: the holder kept its lease, nothing was stopped and run again", c.runs)
	}
	mu.Lock()
	defer mu.Unlock()
	graceEnd := recreated.Add(provision.LeaseGrace(ttl)).Truncate(time.Millisecond)
	if at := startedAt[`{"other":true}`]; at.Before(graceEnd) {
		t.Errorf("a new lease was used %s after the leases stream was created again, before its grace (%s) ended",
			at.Sub(recreated), provision.LeaseGrace(ttl))
	}
}
