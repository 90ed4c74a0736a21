package worker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/internal/jserr"
	"github.com/lionbus/lionbus/pkg/bus/internal/retry"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
)

// Lease timing (see leaser).
const (
	// leaseLinger is how long a worker keeps a branch's lease after the
	// branch's last request here ended, so that the next one (a client
	// sending in sequence) needs no new lease. A worker waiting for the
	// lease asks for it (see wantLease), which ends the linger at once.
	leaseLinger = 2 * time.Millisecond
	// maxHandovers is how many requests in a row a worker runs on one
	// lease while more of the branch's requests wait here; then it lets
	// the lease go, so that other workers' requests of the branch get
	// their turn.
	maxHandovers = 16
	// Backoff of a worker waiting for another worker's lease.
	leasePollFirst = 500 * time.Microsecond
	leasePollMax   = 20 * time.Millisecond
)

// errLeaseLost is logged when a lease could not be renewed.
var errLeaseLost = errors.New("worker: branch lease lost")

// leaser pins a branch to one worker at a time, across workers: a
// worker runs a branch's requests only while it holds the branch's lease,
// the one message on the branch's lease subject in the leases stream.
//
// Acquiring publishes that message expecting the subject to be empty, so
// one worker wins; the stream sequence of the message is the lease's
// fencing token. The holder renews it (publishing again, expecting its own
// last sequence) every third of the stream's age limit; a worker that dies
// stops renewing, and the server ages its lease out. Releasing purges the
// subject up to the lease's own sequence, so it never removes a newer
// lease of another worker. The history's optimistic concurrency still
// guards every append: a worker that lost its lease unawares (paused past
// the age limit) cannot overwrite anything.
//
// A worker that lets a lease go because another asked for it says so on
// the branch's LeaseFree subject; a waiting worker tries again as soon as
// it hears that, and polls only in case the notice is lost or never comes
// (a holder that died).
type leaser struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
	subj   protocol.Subjects
	ttl    time.Duration
	owner  string
	log    zerolog.Logger

	pollFirst, pollMax time.Duration // backoff of a waiting acquire

	mu      sync.Mutex
	waiting map[string][]chan struct{} // by branch: acquires waiting for it
}

// acquire waits until the branch's lease is free and takes it, returning
// its sequence. While another worker holds it, acquire asks the holder for
// it and tries again when the holder says it let the lease go (see freed),
// polling with backoff in case no such notice comes.
func (l *leaser) acquire(ctx context.Context, branch string) (uint64, error) {
	poll := retry.Backoff{First: l.pollFirst, Max: l.pollMax}
	woken := make(chan struct{}, 1)
	defer l.await(branch, woken)()
	for try := 0; ; try++ {
		seq, err := l.publish(ctx, branch, 0)
		if err == nil {
			return seq, nil
		}
		if !jserr.WrongLastSequence(err) {
			return 0, err
		}
		if try%8 == 0 {
			// Ask the holder to let it go when its requests here are
			// done, instead of keeping it for more of its own.
			_ = l.nc.Publish(l.subj.LeaseWant(branch), nil)
		}
		t := time.NewTimer(poll.Next())
		select {
		case <-t.C:
		case <-woken:
			// Let go by its holder: try again at once.
			t.Stop()
			poll.Reset()
		case <-ctx.Done():
			t.Stop()
			return 0, context.Cause(ctx)
		}
	}
}

// await registers woken to be signalled when branch's lease is let go
// (see freed), until the returned function is called.
func (l *leaser) await(branch string, woken chan struct{}) (done func()) {
	l.mu.Lock()
	l.waiting[branch] = append(l.waiting[branch], woken)
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		ws := slices.DeleteFunc(l.waiting[branch], func(c chan struct{}) bool { return c == woken })
		if len(ws) == 0 {
			delete(l.waiting, branch)
		} else {
			l.waiting[branch] = ws
		}
	}
}

// freed wakes the acquires waiting for branch's lease: its holder let it
// go.
func (l *leaser) freed(branch string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.waiting[branch] {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// renew extends the lease of sequence seq and returns its new sequence.
func (l *leaser) renew(ctx context.Context, branch string, seq uint64) (uint64, error) {
	return l.publish(ctx, branch, seq)
}

// release removes the lease of sequence seq, and nothing newer.
func (l *leaser) release(branch string, seq uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	err := l.stream.Purge(ctx, jetstream.WithPurgeSubject(l.subj.Lease(branch)), jetstream.WithPurgeSequence(seq+1))
	if err != nil {
		l.log.Debug().Err(err).Str("branch", branch).Msg("release branch lease; it ages out")
	}
}

// publish writes the lease message of branch, expecting last to be the
// subject's last sequence.
func (l *leaser) publish(ctx context.Context, branch string, last uint64) (uint64, error) {
	m := nats.NewMsg(l.subj.Lease(branch))
	m.Data = []byte(l.owner)
	ack, err := l.js.PublishMsg(ctx, m, jetstream.WithExpectStream(l.subj.LeasesStream()),
		jetstream.WithExpectLastSequencePerSubject(last))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// hold makes sure the lane of t, which is running, holds its branch's
// lease, acquiring it if needed.
func (l *lanes) hold(ctx context.Context, t *ticket) error {
	l.mu.Lock()
	ln := l.m[t.branch]
	if ln == nil || ln.running != t {
		l.mu.Unlock()
		return errors.New("worker: lease asked for by a request that is not running")
	}
	if ln.lease != 0 {
		l.mu.Unlock()
		return nil
	}
	l.mu.Unlock()
	seq, err := l.leaser.acquire(ctx, t.branch)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ln.lease = seq
	ln.stopRenew = make(chan struct{})
	go l.renew(t.branch, ln, ln.stopRenew)
	return nil
}

// renew renews ln's lease until stop is closed. A failed renewal drops
// the lease (the next request of the lane acquires one again).
func (l *lanes) renew(branch string, ln *lane, stop chan struct{}) {
	tick := time.NewTicker(l.leaser.ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		l.mu.Lock()
		seq := ln.lease
		l.mu.Unlock()
		if seq == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.leaser.ttl/3)
		next, err := l.leaser.renew(ctx, branch, seq)
		cancel()
		l.mu.Lock()
		if ln.lease == seq {
			if err != nil {
				l.leaser.log.Warn().Err(errors.Join(errLeaseLost, err)).Str("branch", branch).Msg("renew branch lease")
				ln.lease = 0
			} else {
				ln.lease = next
			}
		}
		l.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// dropLeaseLocked lets ln's lease go (in the background); when another
// worker asked for it, it says so once the lease is gone. l.mu is held.
func (l *lanes) dropLeaseLocked(branch string, ln *lane) {
	if ln.lease == 0 {
		return
	}
	seq, asked := ln.lease, ln.wanted
	ln.lease, ln.handovers, ln.wanted = 0, 0, false
	close(ln.stopRenew)
	go func() {
		l.leaser.release(branch, seq)
		if asked {
			if err := l.leaser.nc.Publish(l.leaser.subj.LeaseFree(branch), nil); err != nil {
				l.leaser.log.Debug().Err(err).Str("branch", branch).Msg("announce a released lease; waiting workers poll")
			}
		}
	}()
}

// linger keeps ln's lease for leaseLinger after its last request, then
// lets it go unless a request entered meanwhile. l.mu is held.
func (l *lanes) lingerLocked(branch string, ln *lane) {
	ln.handovers = 0
	ln.linger = time.AfterFunc(leaseLinger, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.m[branch] != ln || ln.running != nil || len(ln.waiting) > 0 {
			return
		}
		delete(l.m, branch)
		l.dropLeaseLocked(branch, ln)
	})
}

// wanted handles another worker's request for branch's lease: an idle
// lane lets it go at once; a busy one lets it go when its running request
// leaves, instead of handing it to the next one here or keeping it.
func (l *lanes) wanted(branch string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.m[branch]
	if ln == nil || ln.lease == 0 {
		return
	}
	ln.wanted = true
	if ln.running == nil && len(ln.waiting) == 0 {
		if ln.linger != nil {
			ln.linger.Stop()
		}
		delete(l.m, branch)
		l.dropLeaseLocked(branch, ln)
	}
}

// releaseAll lets every lease go, for a stopping worker.
func (l *lanes) releaseAll() {
	if l == nil || l.leaser == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for branch, ln := range l.m {
		if ln.linger != nil {
			ln.linger.Stop()
		}
		if ln.running == nil && len(ln.waiting) == 0 {
			delete(l.m, branch)
		}
		l.dropLeaseLocked(branch, ln)
	}
}
