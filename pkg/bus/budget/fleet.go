// Package budget shares a worker's model budgets with the whole fleet over
// NATS: the limits live in the budgets KV bucket, which every worker
// watches; every worker keeps an entry alive in the budget members bucket
// (entries expire after provision.BudgetMemberTTL), and each admits its
// share, 1/members, of every limit; a provider's rate-limit signal learned
// by one worker pauses the model on all of them. The metering itself is
// package ops/budget's Ledger. See docs/budgets.md.
package budget

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/budget/budgetkv"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	opsbudget "github.com/lionbus/lionbus/pkg/ops/budget"
	"github.com/lionbus/lionbus/pkg/wire"
)

// DefaultHeartbeat is how often a worker renews its membership and
// recounts the members, when Config.Heartbeat is 0. It is a third of
// provision.BudgetMemberTTL, so one lost heartbeat does not drop a member.
const DefaultHeartbeat = provision.BudgetMemberTTL / 3

// Config configures [Start].
type Config struct {
	// Member is this worker's name in the members bucket; required, and
	// unique in the fleet (the worker's name).
	Member string
	// Initial are the limits written to the bucket for every key it does
	// not hold yet (the worker's --budgets file): a starting value, never
	// overwriting what `publisher budget set` wrote.
	Initial map[string]opsbudget.Limits
	// Heartbeat is how often the membership is renewed and the members
	// counted; 0 means DefaultHeartbeat. It must stay below
	// provision.BudgetMemberTTL.
	Heartbeat time.Duration
	// Logger receives a line when the limits change (member count changes
	// are logged at debug level).
	Logger zerolog.Logger
	// OnMembers, when set, is told the member count after every count
	// (every Heartbeat), for a gauge.
	OnMembers func(n int)
}

// Fleet is a running share of the fleet's budgets. Stop it with
// [Fleet.Stop].
type Fleet struct {
	nc     *nats.Conn
	res    *provision.Resources
	subj   protocol.Subjects
	ledger *opsbudget.Ledger
	cfg    Config
	cancel context.CancelFunc
	wg     sync.WaitGroup
	sub    *nats.Subscription
	log    zerolog.Logger
	// counted is set once the first member count was logged; only the
	// heartbeat goroutine (and Start before it) touches it.
	counted bool
}

// pauseMsg is a pause broadcast on the BudgetPause subject.
type pauseMsg struct {
	Key     string `json:"key"`
	UntilMS int64  `json:"until_unix_ms"`
	From    string `json:"from,omitempty"`
}

// Start joins the fleet's budgets: it writes cfg.Initial where the bucket
// holds nothing, applies and watches the bucket's limits in ledger,
// registers cfg.Member, keeps ledger's share equal to 1/members, and
// applies the pauses other workers broadcast. It returns once the current
// limits and member count are applied.
func Start(ctx context.Context, nc *nats.Conn, res *provision.Resources, ledger *opsbudget.Ledger, cfg Config) (*Fleet, error) {
	if cfg.Member == "" || res == nil || res.Budgets == nil || res.BudgetMembers == nil || ledger == nil {
		return nil, errors.New("budget: Start needs a member name, the provisioned budget buckets and a ledger")
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Heartbeat >= provision.BudgetMemberTTL {
		return nil, fmt.Errorf("budget: heartbeat %s must be below the member TTL %s", cfg.Heartbeat, provision.BudgetMemberTTL)
	}
	f := &Fleet{nc: nc, res: res, subj: res.Subjects, ledger: ledger, cfg: cfg, log: cfg.Logger}
	for key, l := range cfg.Initial {
		if _, err := budgetkv.Create(ctx, res.Budgets, key, l); err != nil {
			return nil, fmt.Errorf("budget: initial limits of %s: %w", key, err)
		}
	}
	sub, err := nc.Subscribe(f.subj.BudgetPause(), f.onPause)
	if err != nil {
		return nil, fmt.Errorf("budget: subscribe to pauses: %w", err)
	}
	f.sub = sub
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f.cancel = cancel
	w, err := res.Budgets.WatchAll(runCtx)
	if err != nil {
		cancel()
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("budget: watch the budgets: %w", err)
	}
	// The watcher first replays every current entry, then a nil marks the
	// end of the replay.
	if err := f.applyUntilCaughtUp(ctx, w); err != nil {
		cancel()
		_ = sub.Unsubscribe()
		return nil, err
	}
	if err := f.beat(ctx); err != nil {
		cancel()
		_ = sub.Unsubscribe()
		return nil, err
	}
	f.wg.Add(2)
	go f.watch(runCtx, w)
	go f.heartbeat(runCtx)
	return f, nil
}

func (f *Fleet) applyUntilCaughtUp(ctx context.Context, w jetstream.KeyWatcher) error {
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("budget: budgets watcher closed")
			}
			if e == nil {
				return nil
			}
			f.apply(e)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (f *Fleet) watch(ctx context.Context, w jetstream.KeyWatcher) {
	defer f.wg.Done()
	defer func() { _ = w.Stop() }()
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e != nil {
				f.apply(e)
			}
		case <-ctx.Done():
			return
		}
	}
}

// apply sets the ledger's limits from one bucket entry.
func (f *Fleet) apply(e jetstream.KeyValueEntry) {
	ref, err := wire.BudgetRef(e.Key())
	if err != nil {
		return
	}
	if e.Operation() != jetstream.KeyValuePut {
		_ = f.ledger.SetLimits(ref, opsbudget.Limits{})
		f.log.Info().Str("model", ref).Msg("budget removed")
		return
	}
	l, err := budgetkv.Decode(e.Value())
	if err == nil {
		err = f.ledger.SetLimits(ref, l)
	}
	if err != nil {
		f.log.Warn().Str("model", ref).Err(err).Msg("budget entry ignored")
		return
	}
	f.log.Info().Str("model", ref).Interface("limits", l).Msg("budget applied")
}

func (f *Fleet) heartbeat(ctx context.Context) {
	defer f.wg.Done()
	t := time.NewTicker(f.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := f.beat(ctx); err != nil && ctx.Err() == nil {
				f.log.Debug().Err(err).Msg("budget membership heartbeat failed")
			}
		case <-ctx.Done():
			return
		}
	}
}

// beat renews this member's entry and sets the ledger's share to the
// members alive.
func (f *Fleet) beat(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, provision.RequestTimeout)
	defer cancel()
	if _, err := f.res.BudgetMembers.Put(ctx, memberKey(f.cfg.Member), []byte(time.Now().UTC().Format(time.RFC3339Nano))); err != nil {
		return fmt.Errorf("budget: renew membership: %w", err)
	}
	n, err := f.Members(ctx)
	if err != nil {
		return err
	}
	switch {
	case !f.counted:
		f.log.Info().Int("members", n).Msg("budget split among the fleet")
		f.counted = true
	case n != f.ledger.Shares():
		// Members come and go with every restart of a worker or an
		// outage of the server, so the change is not worth a line above
		// debug.
		f.log.Debug().Int("members", n).Msg("budget split changed")
	}
	f.ledger.SetShares(n)
	if f.cfg.OnMembers != nil {
		f.cfg.OnMembers(n)
	}
	return nil
}

// Members counts the workers alive in the members bucket.
func (f *Fleet) Members(ctx context.Context) (int, error) {
	lister, err := f.res.BudgetMembers.ListKeys(ctx)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return 0, nil
		}
		return 0, fmt.Errorf("budget: count members: %w", err)
	}
	n := 0
	for range lister.Keys() {
		n++
	}
	return n, nil
}

// memberKey is a member's key: its name with characters a KV key cannot
// hold replaced by "_".
func memberKey(name string) string {
	b := []byte(name)
	for i, c := range b {
		ok := c == '-' || c == '_' || c == '=' || c == '.' || c == '/' ||
			'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !ok {
			b[i] = '_'
		}
	}
	return string(b)
}

// Broadcast tells every worker (this one included) to pause key until the
// signal's end; it is the OnSignal of ops/budget's Config.
func (f *Fleet) Broadcast(key string, s opsbudget.Signal) {
	until := s.PauseUntil(time.Now())
	if until.IsZero() {
		return
	}
	raw, err := json.Marshal(pauseMsg{Key: key, UntilMS: until.UnixMilli(), From: f.cfg.Member})
	if err != nil {
		return
	}
	if err := f.nc.Publish(f.subj.BudgetPause(), raw); err != nil {
		f.log.Warn().Err(err).Str("model", key).Msg("budget pause not broadcast")
	}
}

func (f *Fleet) onPause(m *nats.Msg) {
	var p pauseMsg
	if err := json.Unmarshal(m.Data, &p); err != nil || p.Key == "" {
		return
	}
	until := time.UnixMilli(p.UntilMS)
	if max := time.Now().Add(opsbudget.MaxPause); until.After(max) {
		until = max
	}
	f.ledger.Pause(p.Key, until)
	f.log.Info().Str("model", p.Key).Time("until", until).Str("from", p.From).Msg("budget paused by a provider signal")
}

// Stop leaves the fleet: the membership entry is removed (the others'
// shares grow at their next heartbeat) and the watchers end.
func (f *Fleet) Stop(ctx context.Context) error {
	f.cancel()
	f.wg.Wait()
	_ = f.sub.Unsubscribe()
	if err := f.res.BudgetMembers.Delete(ctx, memberKey(f.cfg.Member)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("budget: leave: %w", err)
	}
	return nil
}
