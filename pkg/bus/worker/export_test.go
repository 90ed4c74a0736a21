package worker

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/provision"
)

// Leaser exposes a worker's branch leases to the external tests.
type Leaser struct{ l *leaser }

// NewLeaserForTest returns the leaser a worker named owner would use.
func NewLeaserForTest(js jetstream.JetStream, res *provision.Resources, owner string) Leaser {
	h := newHealth(js.Conn(), res, DefaultHealthInterval, zerolog.Nop())
	return Leaser{lanesFor(InOrder, js, res, Config{Name: owner}, h).leaser}
}

func (l Leaser) Acquire(ctx context.Context, branch string) (uint64, error) {
	seq, _, err := l.l.acquire(ctx, branch)
	return seq, err
}

func (l Leaser) Renew(ctx context.Context, branch string, seq uint64) (uint64, error) {
	return l.l.renew(ctx, branch, seq)
}

func (l Leaser) Release(branch string, seq uint64) { l.l.release(branch, seq) }

func (l Leaser) TTL() time.Duration { return l.l.ttl }

// Owner is what the leaser's lease messages hold.
func (l Leaser) Owner() string { return l.l.owner }

// Fetches returns how many fetch requests w sent.
func (w *Worker) Fetches() int64 { return w.fetches.Load() }

// LeasePollForTest returns c with the worker's lease poll interval set to
// d, first and longest.
func LeasePollForTest(c Config, d time.Duration) Config {
	c.leasePoll = d
	return c
}

// Stopping reports whether Stop was called on w.
func (w *Worker) Stopping() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopping
}
