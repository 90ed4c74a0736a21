package budget

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/wire"
)

// MaxYieldingWaiters is how many of the calls waiting for one key's
// budget in one ledger give up their request's worker slot while they
// wait (ops.YieldSlot); the later ones wait holding it.
const MaxYieldingWaiters = 4

// DefaultWindow is the window of a [Limits] that sets none: limits are per
// minute, as providers state them.
const DefaultWindow = wire.DefaultBudgetWindow

// MaxWaiters bounds the calls waiting for one key's budget; a call beyond
// it fails at once with ErrTooManyWaiters rather than growing the queue.
const MaxWaiters = 100_000

// Sentinel errors of a [Ledger].
var (
	// ErrTooManyWaiters means MaxWaiters calls already wait for the key.
	ErrTooManyWaiters = errors.New("budget: too many calls waiting")
	// ErrInvalidLimits means a Limits value has a negative field; it is
	// wire.ErrInvalidBudgetLimits.
	ErrInvalidLimits = wire.ErrInvalidBudgetLimits
)

// Limits is the budget of one key (a model reference such as
// "openai:gpt-4.1-mini", or a provider key): at most Requests calls and
// Tokens tokens admitted in any window, and at most InFlight calls at once.
// It is the wire form the budgets bucket holds, [wire.BudgetLimits].
type Limits = wire.BudgetLimits

// unlimited reports whether l admits everything.
func unlimited(l Limits) bool { return l.Requests == 0 && l.Tokens == 0 && l.InFlight == 0 }

// share returns this member's part of l when shares members split it:
// each count divided by shares, rounded down but at least 1.
func share(l Limits, shares int) Limits {
	if shares <= 1 {
		return l
	}
	div := func(n int) int {
		if n == 0 {
			return 0
		}
		return max(1, n/shares)
	}
	return Limits{Requests: div(l.Requests), Tokens: div(l.Tokens), InFlight: div(l.InFlight), WindowMS: l.WindowMS}
}

// Ledger meters calls against per-key [Limits]. Calls wait in arrival
// order (FIFO per key); a key's exhausted budget never holds up another
// key. It is transport-free and safe for concurrent use; package bus/budget
// shares its limits, its fleet share and its pauses across workers.
type Ledger struct {
	mu     sync.Mutex
	now    func() time.Time
	keys   map[string]*account
	shares int
	onWait func(key string, waited time.Duration)
}

// Option configures a [Ledger].
type Option func(*Ledger)

// WithClock makes the ledger read time from now (tests).
func WithClock(now func() time.Time) Option { return func(l *Ledger) { l.now = now } }

// WithWaitObserver makes the ledger tell f how long each admitted call
// waited (0 for a call admitted at once), for a per-key metric.
func WithWaitObserver(f func(key string, waited time.Duration)) Option {
	return func(l *Ledger) { l.onWait = f }
}

// NewLedger returns an empty ledger: every key is unlimited until
// [Ledger.SetLimits].
func NewLedger(opts ...Option) *Ledger {
	l := &Ledger{now: time.Now, keys: make(map[string]*account), shares: 1}
	for _, o := range opts {
		o(l)
	}
	return l
}

// account is one key's state.
type account struct {
	key    string
	limits Limits       // as configured for the fleet
	eff    Limits       // this ledger's share
	log    []*admission // finished calls in the window, by finish time
	tokens int          // sum of log's tokens
	// open and openTokens count the metered calls still running and their
	// reserved tokens: they count toward the window until they finish.
	open, openTokens int
	inFlight         int
	paused           time.Time
	waiters          []*waiter
	timer            *time.Timer
	wakeAt           time.Time
}

// admission is one metered call: running (open), then in the window's
// log from the moment it finished (at) until a window has passed.
type admission struct {
	at     time.Time
	tokens int
	open   bool
	inLog  bool
}

type waiter struct {
	tokens int
	since  time.Time
	ready  chan struct{}
	res    *Reservation
}

// Reservation is an admitted call's hold on its key's budget. Release it
// with [Reservation.Done] exactly once; further calls do nothing.
type Reservation struct {
	l      *Ledger
	acc    *account
	adm    *admission
	waited time.Duration
	done   bool
	// Tokens is the estimate reserved.
	Tokens int
}

// Waited returns how long the call waited for budget.
func (r *Reservation) Waited() time.Duration { return r.waited }

// Done releases the call's in-flight slot and reconciles its tokens with
// used, the tokens the provider reported (input + output); a negative used
// keeps the estimate. The call still counts toward the requests and tokens
// of the window until a whole window has passed since Done: the provider
// counted it at some moment between the call's start and its answer, and
// counting it from the answer on is the only reckoning that never frees
// budget before the provider does.
func (r *Reservation) Done(used int) {
	if r == nil || r.l == nil {
		return
	}
	l := r.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.done {
		return
	}
	r.done = true
	a := r.acc
	if a.inFlight > 0 {
		a.inFlight--
	}
	if adm := r.adm; adm != nil && adm.open {
		adm.open = false
		a.open--
		a.openTokens -= adm.tokens
		if used >= 0 {
			adm.tokens = used
		}
		adm.at = l.now()
		adm.inLog = true
		a.log = append(a.log, adm)
		a.tokens += adm.tokens
	}
	l.pump(a)
}

// Refund releases the call like Done and takes it out of its window
// altogether: the provider refused it (a 429), so it counts toward neither
// the requests nor the tokens of the window.
func (r *Reservation) Refund() {
	if r == nil || r.l == nil {
		return
	}
	l := r.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.done {
		return
	}
	r.done = true
	a := r.acc
	if a.inFlight > 0 {
		a.inFlight--
	}
	if adm := r.adm; adm != nil && adm.open {
		adm.open = false
		a.open--
		a.openTokens -= adm.tokens
	} else if r.adm != nil && r.adm.inLog {
		if i := slices.Index(a.log, r.adm); i >= 0 {
			a.log = slices.Delete(a.log, i, i+1)
			a.tokens -= r.adm.tokens
		}
		r.adm.inLog = false
	}
	l.pump(a)
}

func (l *Ledger) account(key string) *account {
	a, ok := l.keys[key]
	if !ok {
		a = &account{key: key}
		l.keys[key] = a
	}
	return a
}

// SetLimits sets key's fleet limits; the zero Limits makes it unlimited.
// Calls waiting for key are admitted at once if the new limits allow.
func (l *Ledger) SetLimits(key string, lim Limits) error {
	if err := lim.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.account(key)
	a.limits = lim
	a.eff = share(lim, l.shares)
	l.pump(a)
	return nil
}

// Limits returns key's fleet limits and whether any are set.
func (l *Ledger) Limits(key string) (Limits, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.keys[key]
	if !ok || unlimited(a.limits) {
		return Limits{}, false
	}
	return a.limits, true
}

// SetShares says how many members split every key's limits (the live
// workers of the fleet); this ledger admits 1/shares of each, rounded down
// but at least 1. shares below 1 counts as 1.
func (l *Ledger) SetShares(shares int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	shares = max(shares, 1)
	if shares == l.shares {
		return
	}
	l.shares = shares
	for _, a := range l.keys {
		a.eff = share(a.limits, shares)
		l.pump(a)
	}
}

// Shares returns the members splitting the limits.
func (l *Ledger) Shares() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.shares
}

// Pause admits no call for key before until (a provider's Retry-After or
// rate-limit reset); a pause ending earlier than one in force is ignored.
func (l *Ledger) Pause(key string, until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.account(key)
	if until.After(a.paused) {
		a.paused = until
	}
	l.pump(a)
}

// Stats is a snapshot of one key's account.
type Stats struct {
	// Limits are the fleet limits, Share this ledger's part of them.
	Limits, Share Limits
	// InFlight, Waiting, Requests and Tokens count the calls running, the
	// calls waiting, and the calls and tokens admitted in the current
	// window.
	InFlight, Waiting, Requests, Tokens int
	// PausedUntil is the end of a pause, zero when none.
	PausedUntil time.Time
}

// Stats returns key's account as it is now.
func (l *Ledger) Stats(key string) Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.keys[key]
	if !ok {
		return Stats{}
	}
	now := l.now()
	a.prune(now)
	s := Stats{Limits: a.limits, Share: a.eff, InFlight: a.inFlight, Waiting: len(a.waiters),
		Requests: len(a.log) + a.open, Tokens: a.tokens + a.openTokens}
	if a.paused.After(now) {
		s.PausedUntil = a.paused
	}
	return s
}

// Acquire waits until key's budget admits a call of tokens tokens, in
// arrival order behind the calls already waiting for key, and returns its
// reservation. It returns ctx's error (wrapped) when ctx ends first, having
// taken nothing. An estimate above the key's whole token budget is cut to
// it, so that the call can ever be admitted.
func (l *Ledger) Acquire(ctx context.Context, key string, tokens int) (*Reservation, error) {
	tokens = max(tokens, 1)
	l.mu.Lock()
	a := l.account(key)
	if a.eff.Tokens > 0 && tokens > a.eff.Tokens {
		tokens = a.eff.Tokens
	}
	now := l.now()
	if len(a.waiters) == 0 && a.admits(now, tokens) {
		r := l.admit(a, now, tokens, now)
		l.mu.Unlock()
		return r, nil
	}
	if len(a.waiters) >= MaxWaiters {
		l.mu.Unlock()
		return nil, fmt.Errorf("%w for %s (%d)", ErrTooManyWaiters, key, MaxWaiters)
	}
	w := &waiter{tokens: tokens, since: now, ready: make(chan struct{})}
	a.waiters = append(a.waiters, w)
	yield := len(a.waiters) <= MaxYieldingWaiters
	l.schedule(a, now)
	l.mu.Unlock()
	// The wait is not work: the request's worker slot serves others
	// meanwhile, and is taken again (when one is free) once it ends. Only
	// the first waiters of a key give theirs up, so that a worker does not
	// take in more of a spent model's requests than it soon can send
	// while the other workers' shares go unused (the split is static).
	if yield {
		if resume := ops.YieldSlot(ctx); resume != nil {
			defer resume()
		}
	}
	select {
	case <-w.ready:
		return w.res, nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	if w.res != nil { // admitted while ctx ended: the call never ran
		l.mu.Unlock()
		w.res.Refund()
	} else {
		if i := slices.Index(a.waiters, w); i >= 0 {
			a.waiters = slices.Delete(a.waiters, i, i+1)
		}
		l.pump(a)
		l.mu.Unlock()
	}
	return nil, fmt.Errorf("budget: waiting for %s: %w", key, context.Cause(ctx))
}

// admit records an admitted call; l.mu is held.
func (l *Ledger) admit(a *account, now time.Time, tokens int, since time.Time) *Reservation {
	r := &Reservation{l: l, acc: a, Tokens: tokens, waited: now.Sub(since)}
	a.inFlight++
	if a.eff.Requests > 0 || a.eff.Tokens > 0 {
		r.adm = &admission{at: now, tokens: tokens, open: true}
		a.open++
		a.openTokens += tokens
	}
	if l.onWait != nil {
		l.onWait(a.key, r.waited)
	}
	return r
}

// prune drops the admissions older than the window.
func (a *account) prune(now time.Time) {
	cut := now.Add(-a.eff.Window())
	i := 0
	for i < len(a.log) && !a.log[i].at.After(cut) {
		a.tokens -= a.log[i].tokens
		a.log[i].inLog = false
		i++
	}
	if i > 0 {
		a.log = slices.Delete(a.log, 0, i)
	}
	if len(a.log) == 0 {
		a.tokens = 0
	}
}

// admits reports whether a call of tokens fits now.
func (a *account) admits(now time.Time, tokens int) bool {
	if now.Before(a.paused) {
		return false
	}
	if unlimited(a.eff) {
		return true
	}
	a.prune(now)
	if a.eff.InFlight > 0 && a.inFlight >= a.eff.InFlight {
		return false
	}
	if a.eff.Requests > 0 && len(a.log)+a.open >= a.eff.Requests {
		return false
	}
	if a.eff.Tokens > 0 && a.tokens+a.openTokens+min(tokens, a.eff.Tokens) > a.eff.Tokens {
		return false
	}
	return true
}

// pump admits waiters from the head while they fit, then schedules the
// next look; l.mu is held.
func (l *Ledger) pump(a *account) {
	now := l.now()
	for len(a.waiters) > 0 {
		w := a.waiters[0]
		if !a.admits(now, w.tokens) {
			break
		}
		a.waiters = a.waiters[1:]
		w.res = l.admit(a, now, w.tokens, w.since)
		close(w.ready)
	}
	if len(a.waiters) == 0 {
		a.waiters = nil
	}
	l.schedule(a, now)
}

// schedule sets a timer for when the head waiter may fit: the end of a
// pause or the oldest finished call leaving the window. A call limited only by
// InFlight is woken by Done instead. l.mu is held.
func (l *Ledger) schedule(a *account, now time.Time) {
	if len(a.waiters) == 0 {
		return
	}
	var at time.Time
	switch {
	case now.Before(a.paused):
		at = a.paused
	case len(a.log) > 0:
		at = a.log[0].at.Add(a.eff.Window())
	default:
		return
	}
	if a.timer != nil && !a.wakeAt.IsZero() && !at.Before(a.wakeAt) && a.wakeAt.After(now) {
		return // an earlier wake is already set
	}
	d := max(at.Sub(now), time.Millisecond)
	a.wakeAt = at
	if a.timer == nil {
		a.timer = time.AfterFunc(d, func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			a.wakeAt = time.Time{}
			l.pump(a)
		})
		return
	}
	a.timer.Reset(d)
}
