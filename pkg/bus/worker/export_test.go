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

// Lanes exposes a worker's lanes, leases included, to the external tests.
type Lanes struct{ l *lanes }

// NewLanesForTest returns the lanes a worker named owner would use.
func NewLanesForTest(js jetstream.JetStream, res *provision.Resources, owner string) Lanes {
	h := newHealth(js.Conn(), res, DefaultHealthInterval, zerolog.Nop())
	return Lanes{lanesFor(InOrder, js, res, Config{Name: owner}, h)}
}

// Ticket is a request's place in its lane.
type Ticket struct{ t *ticket }

// Enter queues a request of branch at seq; it runs at once on an idle lane.
func (l Lanes) Enter(branch string, seq uint64) Ticket { return Ticket{l.l.enter(branch, seq)} }

// Hold takes the lane's lease for t's request, as a running request does.
func (l Lanes) Hold(ctx context.Context, t Ticket) error { return l.l.hold(ctx, t.t) }

// Wanted is another worker's ask for branch's lease arriving.
func (l Lanes) Wanted(branch string) { l.l.wanted(branch) }

// Leave is t's request leaving its lane.
func (l Lanes) Leave(t Ticket) { l.l.leave(t.t) }
