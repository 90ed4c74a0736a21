// Package batch drives batches (docs/batch.md): every worker runs a
// [Driver], which watches the batches bucket, takes over each batch that
// has no live owner and feeds its items as ordinary requests, at most the
// batch's concurrency at once, storing one result per item in the batch
// results stream and the batch's counts in its record.
//
// One driver owns a batch at a time: its record names the owner and until
// when the ownership holds; the owner renews it with every write of the
// counts (every Tick), and another driver takes the batch over once it
// has lapsed (a worker that died). The new owner rebuilds the batch's
// state from its stored results; an item that was in flight is sent again
// under the same request id, so it is answered from what is stored or run
// once.
package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Defaults of [Config].
const (
	// DefaultTick is how often a driver writes the counts of the batches
	// it drives (and renews its ownership of them).
	DefaultTick = 500 * time.Millisecond
	// DefaultOwnerTTL is how long a batch stays with a driver that stopped
	// renewing its ownership.
	DefaultOwnerTTL = 5 * time.Second
	// DefaultMaxBatches bounds the batches one driver drives at once.
	DefaultMaxBatches = 64
)

// ErrStopped is returned by a second [Driver.Start].
var ErrStopped = errors.New("batch: driver stopped")

// Config configures a [Driver]. The zero value is usable.
type Config struct {
	// Name names the driver as the owner of the batches it drives; a
	// unique suffix is added. Default "driver".
	Name string
	// Tick is how often counts are written; default DefaultTick.
	Tick time.Duration
	// OwnerTTL is how long a batch stays with a driver that stopped
	// renewing; default DefaultOwnerTTL. It must exceed Tick.
	OwnerTTL time.Duration
	// MaxBatches bounds the batches driven at once; default
	// DefaultMaxBatches.
	MaxBatches int
	// Logger receives the driver's logs.
	Logger zerolog.Logger
}

// Driver drives the batches of the bus it is connected to. Build it with
// [New], run it with [Driver.Start], end it with [Driver.Stop].
type Driver struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	res *provision.Resources
	cl  *client.Client
	cfg Config
	log zerolog.Logger
	me  string

	mu      sync.Mutex
	known   map[string]known   // every batch's latest record, by id
	runners map[string]*runner // the batches driven, by id
	cancel  context.CancelFunc
	done    chan struct{}
	wg      sync.WaitGroup
}

type known struct {
	b   wire.Batch
	rev uint64
}

// New returns a driver over nc for the resources res.
func New(nc *nats.Conn, res *provision.Resources, cfg Config) (*Driver, error) {
	if cfg.Name == "" {
		cfg.Name = "driver"
	}
	if cfg.Tick == 0 {
		cfg.Tick = DefaultTick
	}
	if cfg.OwnerTTL == 0 {
		cfg.OwnerTTL = DefaultOwnerTTL
	}
	if cfg.MaxBatches == 0 {
		cfg.MaxBatches = DefaultMaxBatches
	}
	if cfg.Tick < 0 || cfg.OwnerTTL <= cfg.Tick || cfg.MaxBatches < 0 {
		return nil, fmt.Errorf("batch: invalid config: tick %s, owner TTL %s (more than the tick), max batches %d", cfg.Tick, cfg.OwnerTTL, cfg.MaxBatches)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	// Items may wait long for their answers (a model taking minutes, a
	// batch's deadline): the wait is bounded by the driver's context.
	cl, err := client.New(nc, client.Config{Prefix: res.Config.Prefix, AwaitTimeout: res.Config.BatchMaxAge, Source: "/lionbus/batch/" + cfg.Name})
	if err != nil {
		return nil, err
	}
	return &Driver{nc: nc, js: js, res: res, cl: cl, cfg: cfg, log: cfg.Logger,
		me: cfg.Name + "-" + nuid.Next(), known: map[string]known{}, runners: map[string]*runner{}}, nil
}

// Start starts the driver; it runs until Stop, or until ctx ends (a hard
// stop: the batches driven stay with it until their ownership lapses).
func (d *Driver) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done != nil {
		return ErrStopped
	}
	ctx, d.cancel = context.WithCancel(ctx)
	d.done = make(chan struct{})
	go func() {
		defer close(d.done)
		d.loop(ctx)
	}()
	return nil
}

// Stop stops driving: the batches driven are let go at once (another
// driver takes them over), their items in flight left to finish as
// requests. It waits for the driver's goroutines, or ctx.
func (d *Driver) Stop(ctx context.Context) error {
	d.mu.Lock()
	cancel, done := d.cancel, d.done
	d.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	ch := make(chan struct{})
	go func() { d.wg.Wait(); close(ch) }()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loop watches the batches bucket and takes over batches without a live
// owner, every tick.
func (d *Driver) loop(ctx context.Context) {
	tick := time.NewTicker(d.cfg.Tick)
	defer tick.Stop()
	for ctx.Err() == nil {
		kv, err := d.js.KeyValue(ctx, d.res.Subjects.BatchesBucket())
		var w jetstream.KeyWatcher
		if err == nil {
			w, err = kv.WatchAll(ctx)
		}
		if err != nil {
			d.log.Warn().Err(err).Msg("batches: cannot watch the batches bucket; again in a moment")
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
				continue
			}
		}
		d.watch(ctx, kv, w, tick)
		_ = w.Stop()
	}
}

func (d *Driver) watch(ctx context.Context, kv jetstream.KeyValue, w jetstream.KeyWatcher, tick *time.Ticker) {
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil {
				continue
			}
			d.mu.Lock()
			if e.Operation() != jetstream.KeyValuePut {
				delete(d.known, e.Key())
			} else {
				var b wire.Batch
				if err := json.Unmarshal(e.Value(), &b); err == nil {
					d.known[e.Key()] = known{b: b, rev: e.Revision()}
				}
			}
			d.mu.Unlock()
		case <-tick.C:
			d.claim(ctx, kv)
		}
	}
}

// claim takes over the batches that need a driver and have none.
func (d *Driver) claim(ctx context.Context, kv jetstream.KeyValue) {
	now := time.Now()
	d.mu.Lock()
	var want []known
	for id, k := range d.known {
		if wire.BatchFinal(k.b.State) || d.runners[id] != nil || len(d.runners)+len(want) >= d.cfg.MaxBatches {
			continue
		}
		if k.b.Owner == "" || now.After(k.b.OwnerUntil) {
			want = append(want, k)
		}
	}
	d.mu.Unlock()
	for _, k := range want {
		b := k.b
		b.Owner, b.OwnerUntil, b.Updated = d.me, now.Add(d.cfg.OwnerTTL).UTC(), now.UTC()
		raw, err := json.Marshal(b)
		if err != nil {
			continue
		}
		rev, err := kv.Update(ctx, b.ID, raw, k.rev)
		if err != nil {
			continue // another driver was quicker, or the record changed
		}
		r := newRunner(d, kv, b, rev)
		d.mu.Lock()
		d.runners[b.ID] = r
		d.mu.Unlock()
		d.log.Info().Str("batch", b.ID).Int("round", b.Round).Msg("batches: driving")
		d.wg.Go(func() {
			r.run(ctx)
			d.mu.Lock()
			delete(d.runners, b.ID)
			d.mu.Unlock()
		})
	}
}
