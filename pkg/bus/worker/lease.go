package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/internal/connloss"
	"github.com/lionbus/lionbus/pkg/bus/internal/jserr"
	"github.com/lionbus/lionbus/pkg/bus/internal/retry"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
)

// Lease timing (see leaser).
const (
	// A worker keeps a branch's lease for a while after the branch's
	// last request here ended (leaser.linger: one renewal interval, a
	// fifth of the lease TTL, 1 s by default), so that the next one (a
	// client sending in sequence, its request queued behind others')
	// needs no new lease: taking and letting go of a lease costs a
	// publish, a delete and the delete's advisory, more than the
	// request's own history append. A worker waiting for the lease asks
	// for it (see wanted), which ends the linger at once. Each lingering
	// lane is one small entry of lanes.m: there are never more than the
	// branches that had a request here within the linger.
	// maxHandovers is how many requests in a row a worker runs on one
	// lease while more of the branch's requests wait here; then it lets
	// the lease go, so that other workers' requests of the branch get
	// their turn.
	maxHandovers = 16
	// Backoff of a worker waiting for another worker's lease.
	leasePollFirst = 500 * time.Microsecond
	leasePollMax   = 20 * time.Millisecond
	// Backoff of a worker whose lease publishes fail (the leases stream
	// missing, JetStream not answering), and how long an acquire keeps
	// trying before its request is handed back.
	leaseRetryFirst     = 50 * time.Millisecond
	leaseRetryMax       = time.Second
	leaseUnavailableMax = 30 * time.Second
	// leaseRequestTimeout bounds one publish of an acquire: one lost
	// with a server that restarted is sent again after it.
	leaseRequestTimeout = 2 * time.Second
)

// Lease renewal, in fractions of the lease TTL: a holder renews every
// fifth; one that could not renew for three fifths lets the lease go and
// stops the request it runs under it, before the server ages the lease
// out (the whole TTL after its last renewal), and before the grace of a
// leases stream created again ends (provision.LeaseGrace, four fifths).
const (
	leaseRenewDiv = 5
	leaseHoldNum  = 3
)

var (
	// errLeaseLost is the cause of the context of a request whose branch
	// lease was lost while it ran: it is stopped and handed back.
	errLeaseLost = errors.New("worker: branch lease lost")
	// errLeaseTaken means another worker holds the lease now.
	errLeaseTaken = errors.New("another worker holds the lease")
	// errLeaseUnconfirmed means the lease could not be renewed in time.
	errLeaseUnconfirmed = errors.New("the lease could not be renewed in time")
)

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
//
// The leases stream may be lost (deleted, or in memory and the servers
// restarted) and created again empty, its sequences starting higher than
// before (see provision.LeaseGraceEnd). A holder keeps its lease across
// such a loss: the renewal that finds its subject empty takes the lease
// again at once. A new lease from a stream created a moment ago is not
// used before the stream's grace ends, by which time every holder of the
// lost stream has either taken its lease back or, unable to renew for
// three fifths of the TTL, let it go and stopped the request it ran: so
// two workers never run one branch's requests at the same time.
type leaser struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
	subj   protocol.Subjects
	ttl    time.Duration
	owner  string
	log    zerolog.Logger

	pollFirst, pollMax time.Duration // backoff of a waiting acquire
	linger             time.Duration // how long an idle lane keeps its lease
	health             *health

	mu      sync.Mutex
	waiting map[string][]chan struct{} // by branch: acquires waiting for it
	// stale holds, by branch, a lease of this worker that it no longer
	// uses but may still be in the stream (not renewed in time, or its
	// release failed): nobody else can hold the branch while it is there,
	// so this worker takes it over, and lets it go when another asks.
	stale map[string]uint64
}

// acquire waits until the branch's lease is free and takes it, returning
// its sequence and when the publish that took it was sent. While another
// worker holds it, acquire asks the holder for it and tries again when the
// holder says it let the lease go (see freed), polling with backoff in
// case no such notice comes. While the lease cannot be published at all
// (the leases stream missing, JetStream not answering), it makes the
// worker check its health (which creates a missing stream again) and
// tries again, for at most leaseUnavailableMax.
func (l *leaser) acquire(ctx context.Context, branch string) (uint64, time.Time, error) {
	poll := retry.Backoff{First: l.pollFirst, Max: l.pollMax}
	var unavailable retry.Backoff
	var failingSince time.Time
	woken := make(chan struct{}, 1)
	defer l.await(branch, woken)()
	for try := 0; ; try++ {
		sent := time.Now()
		seq, took, err := l.takeOver(ctx, branch)
		if !took {
			pctx, cancel := connloss.Bound(ctx, l.nc, leaseRequestTimeout)
			seq, err = l.publish(pctx, branch, 0)
			cancel()
		}
		if err == nil {
			return seq, sent, nil
		}
		if ctx.Err() != nil {
			return 0, time.Time{}, context.Cause(ctx)
		}
		if !took && outcomeUnknown(err) {
			// The publish may have landed all the same (sent again once
			// the connection was back, its acknowledgement lost): a
			// lease of this worker may be in the way now.
			l.keepStaleIfNone(branch, 0)
		}
		if !jserr.WrongLastSequence(err) && !errors.Is(err, errLeaseTaken) {
			if failingSince.IsZero() {
				failingSince = sent
				unavailable = retry.Backoff{First: leaseRetryFirst, Max: leaseRetryMax}
			}
			if time.Since(failingSince) > leaseUnavailableMax {
				return 0, time.Time{}, err
			}
			l.health.poke()
			if err := l.pauseUnavailable(ctx, unavailable.Next()); err != nil {
				return 0, time.Time{}, err
			}
			continue
		}
		failingSince = time.Time{}
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
			return 0, time.Time{}, context.Cause(ctx)
		}
	}
}

// takeOver takes a stale lease of this worker on branch (see
// leaser.stale) over, renewing it as its holder would (see renew: it may
// stand at a later sequence than the one kept, or be gone), which saves
// waiting for it to age out. tried reports whether there was one; err is
// why it could not be taken over: errLeaseTaken when another worker holds
// the branch now, and the stale lease is forgotten.
func (l *leaser) takeOver(ctx context.Context, branch string) (next uint64, tried bool, err error) {
	l.mu.Lock()
	seq, ok := l.stale[branch]
	l.mu.Unlock()
	if !ok {
		return 0, false, nil
	}
	pctx, cancel := connloss.Bound(ctx, l.nc, leaseRequestTimeout)
	next, err = l.renew(pctx, branch, seq)
	err = connloss.Err(pctx, err)
	cancel()
	if err == nil || errors.Is(err, errLeaseTaken) {
		l.forget(branch, seq)
	}
	return next, true, err
}

// outcomeUnknown reports whether a publish that failed with err may have
// been stored all the same: it timed out, or the connection was lost
// while it was outstanding (not refused, nor unheard).
func outcomeUnknown(err error) bool {
	var apiErr *jetstream.APIError
	return !errors.As(err, &apiErr) && !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, jetstream.ErrNoStreamResponse)
}

// keepStaleIfNone records a possible lease of this worker on branch, at
// a sequence it does not know (0), unless one is kept already.
func (l *leaser) keepStaleIfNone(branch string, seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.stale[branch]; !ok {
		l.stale[branch] = seq
	}
}

// keepStale records seq as a stale lease of this worker on branch.
func (l *leaser) keepStale(branch string, seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stale[branch] = seq
}

// forget drops the stale lease seq of branch, if that is the one kept.
func (l *leaser) forget(branch string, seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stale[branch] == seq {
		delete(l.stale, branch)
	}
}

// releaseStale lets a stale lease of this worker on branch go, when it
// keeps one, saying so to the workers waiting for it, and reports whether
// it had one.
func (l *leaser) releaseStale(branch string) bool {
	l.mu.Lock()
	seq, ok := l.stale[branch]
	l.mu.Unlock()
	if !ok {
		return false
	}
	go func() {
		at := seq
		if at == 0 {
			// A lease this worker may hold, at a sequence it does not
			// know: look.
			ctx, cancel := connloss.Bound(context.Background(), l.nc, leaseRequestTimeout)
			m, err := l.stream.GetLastMsgForSubject(ctx, l.subj.Lease(branch))
			cancel()
			switch {
			case err == nil && string(m.Data) == l.owner:
				at = m.Sequence
			case err == nil || errors.Is(err, jetstream.ErrMsgNotFound):
				l.forget(branch, seq) // not this worker's
				return
			default:
				return
			}
		}
		if l.release(branch, at) {
			l.forget(branch, seq)
			_ = l.nc.Publish(l.subj.LeaseFree(branch), nil)
		}
	}()
	return true
}

// pauseUnavailable waits d after a lease publish failed, or less when the
// worker can serve again (its health check created the leases stream
// again, say).
func (l *leaser) pauseUnavailable(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.health.servingAgain():
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return nil
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
// When the subject no longer holds seq, it looks at what is there: nothing
// (the leases stream was created again, or the message deleted) and it takes the lease
// back, as its holder; its own newer lease (a renewal whose
// acknowledgement was lost) and it renews that one; another worker's lease
// and it returns errLeaseTaken. Any other error means the lease could not
// be renewed now (the stream missing, JetStream not answering).
func (l *leaser) renew(ctx context.Context, branch string, seq uint64) (uint64, error) {
	next, err := l.publish(ctx, branch, seq)
	if err == nil || !jserr.WrongLastSequence(err) {
		return next, err
	}
	m, err := l.stream.GetLastMsgForSubject(ctx, l.subj.Lease(branch))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		next, err = l.publish(ctx, branch, 0)
	case err != nil:
		return 0, err
	case string(m.Data) == l.owner && m.Sequence > seq:
		next, err = l.publish(ctx, branch, m.Sequence)
	default:
		return 0, errLeaseTaken
	}
	if jserr.WrongLastSequence(err) {
		return 0, errLeaseTaken
	}
	return next, err
}

// release removes the lease message of sequence seq, and nothing else (a
// newer lease is another message), and reports whether it is gone; when
// it could not, the lease is kept as stale (see leaser.stale) until it
// ages out. (The leases stream refuses purges, so that nobody takes every
// lease from under its holders; a message is deleted by its sequence.)
func (l *leaser) release(branch string, seq uint64) bool {
	ctx, cancel := connloss.Bound(context.Background(), l.nc, publishTimeout)
	defer cancel()
	err := l.stream.DeleteMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return true // gone already: aged out, or the stream created again
	}
	if err != nil {
		l.log.Debug().Err(err).Str("branch", branch).Msg("release branch lease; it ages out")
		l.keepStale(branch, seq)
		return false
	}
	return true
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
	seq, sent, err := l.leaser.acquire(ctx, t.branch)
	if err != nil {
		return err
	}
	l.mu.Lock()
	ln.lease, ln.confirmed = seq, sent
	ln.stopRenew = make(chan struct{})
	go l.renew(t.branch, ln, ln.stopRenew)
	l.mu.Unlock()
	// A lease from a leases stream created a moment ago is used once the
	// stream's grace has ended: holders of the stream it replaced may
	// still run requests until then. It is renewed meanwhile.
	if wait := time.Until(provision.LeaseGraceEnd(seq)); wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// renew renews ln's lease until stop is closed: every fifth of the TTL,
// and again soon after a renewal that failed for want of the stream or an
// answer. The lease is lost when another worker holds it, or when it could
// not be renewed for three fifths of the TTL (see lost).
func (l *lanes) renew(branch string, ln *lane, stop chan struct{}) {
	ttl := l.leaser.ttl
	every, holdFor := ttl/leaseRenewDiv, ttl*leaseHoldNum/leaseRenewDiv
	retryIn := retry.Backoff{First: leaseRetryFirst, Max: every}
	timer := time.NewTimer(every)
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		case <-timer.C:
		}
		l.mu.Lock()
		seq, confirmed := ln.lease, ln.confirmed
		l.mu.Unlock()
		if seq == 0 {
			return
		}
		deadline := confirmed.Add(holdFor)
		if !time.Now().Before(deadline) {
			l.lost(branch, ln, seq, errLeaseUnconfirmed)
			return
		}
		ctx, cancel := connloss.Bound(context.Background(), l.leaser.nc, time.Until(deadline))
		sent := time.Now()
		next, err := l.leaser.renew(ctx, branch, seq)
		cancel()
		if errors.Is(err, errLeaseTaken) {
			l.lost(branch, ln, seq, err)
			return
		}
		if err != nil {
			l.leaser.health.poke()
			timer.Reset(retryIn.Next())
			continue
		}
		retryIn.Reset()
		l.mu.Lock()
		if ln.lease == seq {
			ln.lease, ln.confirmed = next, sent
		}
		l.mu.Unlock()
		timer.Reset(every)
	}
}

// lost gives up ln's lease of sequence seq, when it still holds it: the
// request running under it is stopped (its context cancelled with cause
// errLeaseLost) and handed back, since another worker may run the
// branch's requests now; the lane's next request takes a new lease.
func (l *lanes) lost(branch string, ln *lane, seq uint64, why error) {
	l.mu.Lock()
	if ln.lease != seq {
		l.mu.Unlock()
		return
	}
	ln.lease, ln.handovers, ln.wanted = 0, 0, false
	if errors.Is(why, errLeaseUnconfirmed) {
		// Not renewed in time, but perhaps still in the stream.
		l.leaser.keepStale(branch, seq)
	}
	running := ln.running != nil && ln.running.revoke != nil
	if running {
		ln.running.revoke(fmt.Errorf("%w: %w", errLeaseLost, why))
	}
	l.mu.Unlock()
	l.leaser.health.warn(l.leaser.log).Err(why).Str("branch", branch).Bool("request_stopped", running).
		Msg("branch lease lost")
}

// handBack hands a request that failed with err because its lane lost
// its lease (see lanes.lost; the cause of ctx is errLeaseLost) back for
// redelivery, and reports whether it did. A request on its last delivery
// cannot be handed back (it would never come again): its error becomes a
// temporary unavailable one, for it to be answered. Any other failure is
// returned as it is.
func (w *Worker) handBack(ctx context.Context, msg jetstream.Msg, attempt int, log zerolog.Logger, err error) (bool, error) {
	cause := context.Cause(ctx)
	if !errors.Is(cause, errLeaseLost) {
		return false, err
	}
	if w.lastDelivery(attempt) {
		return false, &ops.Error{Code: ops.CodeUnavailable, Temporary: true, Err: cause,
			Message: "the branch lease was lost while the request ran, on its last delivery"}
	}
	log.Debug().Err(cause).Msg("request stopped: its branch lease was lost; handed back")
	if nerr := msg.NakWithDelay(w.cfg.FetchWait); nerr != nil {
		log.Debug().Err(nerr).Msg("nak")
	}
	return true, nil
}

// revocable makes cancel the way to stop t's request when its lane loses
// its lease while t runs (see lost).
func (l *lanes) revocable(t *ticket, cancel context.CancelCauseFunc) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t.revoke = cancel
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

// linger keeps ln's lease for leaser.linger after its last request, then
// lets it go unless a request entered meanwhile. l.mu is held.
func (l *lanes) lingerLocked(branch string, ln *lane) {
	ln.handovers = 0
	ln.linger = time.AfterFunc(l.leaser.linger, func() {
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
	if ln != nil && ln.lease == 0 && ln.running != nil {
		// Its request is taking the lease: the publish that took it
		// reached the stream before this worker recorded it, and the
		// asker saw it. Remember the ask, so that the lease goes (and
		// is announced) when that request leaves; dropped, the asker
		// would wait for its poll.
		ln.wanted = true
		return
	}
	if ln == nil || ln.lease == 0 {
		if ln == nil || ln.running == nil {
			// Perhaps an old lease of this worker stands in the way.
			l.leaser.releaseStale(branch)
		}
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
