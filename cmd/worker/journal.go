package main

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus"
	busjournal "github.com/lionbus/lionbus/pkg/bus/journal"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/journal"
)

// journaledProviders are the providers whose completed calls are
// journaled for the redelivery of a request that did not commit
// (pkg/ops/journal; tool calls are journaled whatever the provider): the
// API providers, whose calls cost money. The scripted one answers for free
// and the same every time; a CLI's calls are runs, whose chunks are their
// record (and the engine tells a CLI model by its provider, which a
// wrapper would hide).
var journaledProviders = meteredProviders

// errJournalNotReady is what the journal answers before the worker's
// streams are provisioned: the call goes on unjournaled.
var errJournalNotReady = errors.New("journal: not attached yet")

// workerJournal is the worker's journal of completed model calls: the
// providers are wrapped before the worker starts, and the store (on the
// journal stream) attached once it has.
type workerJournal struct {
	store atomic.Pointer[busjournal.Store]
	log   zerolog.Logger
}

// wrap journals the calls of the providers named (those registered).
func (wj *workerJournal) wrap(providers *ops.Providers, names ...string) error {
	for _, name := range names {
		prov, err := providers.Lookup(name)
		if err != nil {
			continue
		}
		if err := providers.Register(name, journal.Wrap(prov, journal.Config{Store: wj, OnError: wj.failed})); err != nil {
			return err
		}
	}
	return nil
}

// tools journals the outcomes of inv's tool calls, so that a tool runs
// once per call even when its service does not remember results itself.
func (wj *workerJournal) tools(inv ops.Invoker) ops.Invoker {
	return journal.WrapInvoker(inv, journal.Config{Store: wj, OnError: wj.failed})
}

// attach keeps the journal in svc's journal stream from now on.
func (wj *workerJournal) attach(svc *bus.Service) {
	res := svc.Resources()
	wj.store.Store(busjournal.New(svc.JetStream(), res.Journal, res.Subjects))
}

func (wj *workerJournal) Get(ctx context.Context, key string) ([]byte, bool, error) {
	s := wj.store.Load()
	if s == nil {
		return nil, false, errJournalNotReady
	}
	return s.Get(ctx, key)
}

func (wj *workerJournal) Put(ctx context.Context, key string, entry []byte) error {
	s := wj.store.Load()
	if s == nil {
		return errJournalNotReady
	}
	return s.Put(ctx, key, entry)
}

// failed logs a journal read or write that failed; the call went on
// without it. At debug level: it fails when JetStream does (an outage the
// worker's health logs once), and costs at most a call made again.
func (wj *workerJournal) failed(op, key string, err error) {
	wj.log.Debug().Err(err).Str("op", op).Str("key", key).Msg("journal of model calls: not used")
}
