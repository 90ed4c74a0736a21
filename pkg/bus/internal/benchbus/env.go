package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

// serverMaxPayload is the embedded server's max_payload: what bus.Start
// gives the embedded server it starts itself with the default provisioning
// (twice the 1 MiB request limit, at least 8 MiB). A long branch's
// snapshot needs it; under the NATS default of 1 MiB a snapshot past it is
// not written and every load replays the whole history.
const serverMaxPayload = 8 << 20

// startTimeout bounds starting the server and the workers.
const startTimeout = 30 * time.Second

// env is everything a run measures on: one embedded server, the floor's
// worker and client, and a lionbus service and client, each side on its own
// two connections (worker, client).
type env struct {
	cfg      Config
	progress io.Writer
	inFlight int // of both workers

	srv   *embedded.Server
	conns []*nats.Conn

	floor   *floorWorker
	floorCl *floorClient
	same    *floorWorker // the same-messages floor
	sameFl  *sameFloor
	sameCl  *floorClient
	// sameSizes are the payload sizes the same-messages floor stores
	// under -same-bytes; nil otherwise.
	sameSizes *payloadSizes

	svc    *bus.Service   // the first lionbus worker
	svcs   []*bus.Service // every lionbus worker (Config.Workers)
	res    *provision.Resources
	lionCl *client.Client
	lionJS jetstream.JetStream // the client connection's
	calls  *countingProvider
	runs   *runRecorder
	logs   *logTally
	store  *storeCounter
}

// newEnv starts the server and both sides. On error everything started is
// released.
func newEnv(ctx context.Context, cfg Config, progress io.Writer) (_ *env, err error) {
	e := &env{cfg: cfg, progress: progress, inFlight: cfg.Concurrency}
	if e.inFlight == 0 {
		e.inFlight = worker.DefaultMaxInFlight
	}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	// StoreDir "" is a temporary directory that Shutdown removes.
	e.srv, err = embedded.Start(sctx, embedded.Config{Port: embedded.RandomPort, MaxPayload: serverMaxPayload})
	if err != nil {
		return nil, err
	}

	floorNC, err := e.connect("benchbus floor worker")
	if err != nil {
		return nil, err
	}
	if e.floor, err = startFloor(sctx, floorNC, e.inFlight, worker.DefaultFetchWait); err != nil {
		return nil, err
	}
	floorClNC, err := e.connect("benchbus floor client")
	if err != nil {
		return nil, err
	}
	if e.floorCl, err = newFloorClient(floorClNC); err != nil {
		return nil, err
	}

	sameNC, err := e.connect("benchbus same-messages floor worker")
	if err != nil {
		return nil, err
	}
	if e.same, e.sameFl, err = startSame(sctx, sameNC, e.inFlight, worker.DefaultFetchWait); err != nil {
		return nil, err
	}
	sameClNC, err := e.connect("benchbus same-messages floor client")
	if err != nil {
		return nil, err
	}
	if e.sameCl, err = newSameClient(sameClNC); err != nil {
		return nil, err
	}

	e.calls = newCountingProvider()
	provs := ops.NewProviders(nil)
	if err := e.calls.register(provs); err != nil {
		return nil, err
	}
	e.logs = newLogTally()
	e.runs = newRunRecorder()
	e.store = &storeCounter{}
	for i := range max(cfg.Workers, 1) {
		lionNC, err := e.connect(fmt.Sprintf("benchbus lionbus worker %d", i+1))
		if err != nil {
			return nil, err
		}
		svc, err := bus.Start(sctx, bus.Config{
			Conn:      lionNC,
			Provision: provision.Config{LeaseStorage: cfg.LeaseStorage},
			Store:     store.Config{Observer: e.store, CacheBytes: cfg.CacheBytes},
			Providers: provs,
			Worker: worker.Config{MaxInFlight: cfg.Concurrency, Middleware: []worker.Middleware{
				func(next worker.Handler) worker.Handler { return recording{inner: next, r: e.runs} },
			}},
			Logger: zerolog.New(e.logs).Level(zerolog.InfoLevel),
		})
		if err != nil {
			return nil, err
		}
		e.svcs = append(e.svcs, svc)
	}
	e.svc = e.svcs[0]
	e.res = e.svc.Resources()
	lionClNC, err := e.connect("benchbus lionbus client")
	if err != nil {
		return nil, err
	}
	if e.lionCl, err = client.New(lionClNC, client.Config{Prefix: e.res.Config.Prefix}); err != nil {
		return nil, err
	}
	if e.lionJS, err = jetstream.New(lionClNC); err != nil {
		return nil, err
	}
	if cfg.SameBytes {
		sizes, err := e.probeSizes(sctx)
		if err != nil {
			return nil, err
		}
		e.sameSizes, e.sameFl.sizes, e.sameCl.sizes = &sizes, &sizes, &sizes
	}
	return e, nil
}

// connect opens a connection to the server, closed by close.
func (e *env) connect(name string) (*nats.Conn, error) {
	nc, err := nats.Connect(e.srv.ClientURL(), nats.Name(name))
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", name, err)
	}
	e.conns = append(e.conns, nc)
	return nc, nil
}

// read takes a reading of the process and the server.
func (e *env) read() counters { return read(e.srv.NATSServer()) }

// close stops both workers, closes the connections and shuts the server
// down, removing its store.
func (e *env) close() {
	for _, svc := range e.svcs {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := svc.Stop(ctx); err != nil {
			fmt.Fprintf(e.progress, "stop lionbus worker: %v\n", err)
		}
		cancel()
		svc.Close()
	}
	if e.floor != nil {
		e.floor.stop()
	}
	if e.same != nil {
		e.same.stop()
	}
	for _, nc := range e.conns {
		nc.Close()
	}
	if e.srv != nil {
		e.srv.Shutdown()
	}
}

// logf prints a progress line.
func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(e.progress, "benchbus: "+format+"\n", args...)
}
