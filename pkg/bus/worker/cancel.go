package worker

import (
	"context"
	"sync"
	"time"

	"github.com/lionbus/lionbus/pkg/ops"
)

// ErrCanceledByClient is the cause of the context of a request that was
// cancelled by a message on its cancel subject (Subjects.Cancel). It is
// ops.ErrCanceledByClient, so that the engine tells a client's cancel
// from a stopping worker (run ends cleanly on the first).
var ErrCanceledByClient = ops.ErrCanceledByClient

// Bounds of the cancel registry.
const (
	// MaxRememberedCancels bounds how many cancel messages for requests
	// that were not running a worker remembers, so that a request cancelled
	// while still queued is answered "canceled" instead of being run.
	MaxRememberedCancels = 4096
	// RememberCancelFor is how long such a cancel is remembered.
	RememberCancelFor = 10 * time.Minute
)

// cancels maps running request ids to the cancel function of their
// context, and remembers cancels of requests not running yet. A worker runs
// at most one delivery of a request id at a time.
type cancels struct {
	mu      sync.Mutex
	running map[string]map[*context.CancelCauseFunc]struct{}
	early   map[string]time.Time
}

func newCancels() *cancels {
	return &cancels{
		running: map[string]map[*context.CancelCauseFunc]struct{}{},
		early:   map[string]time.Time{},
	}
}

// addResult says why add registered nothing.
type addResult int

const (
	added          addResult = iota
	alreadyRunning           // a delivery of the same id runs in this worker
	wasCancelled             // the client cancelled id before it started
)

// add registers cancel for id and returns a function that removes it.
// Nothing is registered when id was cancelled already or is running.
func (c *cancels) add(id string, cancel context.CancelCauseFunc) (remove func(), res addResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at, ok := c.early[id]; ok && time.Since(at) < RememberCancelFor {
		return nil, wasCancelled
	}
	if len(c.running[id]) > 0 {
		return nil, alreadyRunning
	}
	key := &cancel
	set := map[*context.CancelCauseFunc]struct{}{key: {}}
	c.running[id] = set
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(set, key)
		if len(set) == 0 {
			delete(c.running, id)
		}
	}, added
}

// cancel cancels every running request id, or remembers the cancel for a
// while when none is running.
func (c *cancels) cancel(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if set := c.running[id]; len(set) > 0 {
		for f := range set {
			(*f)(ErrCanceledByClient)
		}
		return
	}
	now := time.Now()
	if len(c.early) >= MaxRememberedCancels {
		for k, at := range c.early {
			if now.Sub(at) >= RememberCancelFor {
				delete(c.early, k)
			}
		}
		for k := range c.early {
			if len(c.early) < MaxRememberedCancels {
				break
			}
			delete(c.early, k) // arbitrary eviction keeps the bound
		}
	}
	c.early[id] = now
}
