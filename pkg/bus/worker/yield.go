package worker

import (
	"context"
	"sync"
)

// slotYield is what a delivery knows of its slot: whether it gave it up
// (ops.YieldSlot), and for how many of its calls. The slot is given up
// when the first call waiting starts to wait and taken again when the
// last one resumes.
type slotYield struct {
	w      *Worker
	mu     sync.Mutex
	yields int  // calls of the request waiting with the slot given up
	gone   bool // the slot is given up
	// lost is set when a resume ended without a slot (its context ended):
	// the request finishes without one, and handle frees none.
	lost bool
}

// yield gives up the slot (ops.SlotYield): nil when the worker already
// holds MaxYielded requests without a slot.
func (y *slotYield) yield() func(context.Context) error {
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.lost {
		return nil
	}
	if y.yields == 0 {
		if !y.w.takeYielded() {
			return nil
		}
		<-y.w.slots
		y.gone = true
	}
	y.yields++
	var once sync.Once
	return func(ctx context.Context) error {
		var err error
		once.Do(func() { err = y.resume(ctx) })
		return err
	}
}

// resume ends one call's wait: the last one takes a slot again, waiting
// for one (in turn with the fetch loop) until ctx ends.
func (y *slotYield) resume(ctx context.Context) error {
	y.mu.Lock()
	defer y.mu.Unlock()
	y.yields--
	if y.yields > 0 || !y.gone {
		return nil
	}
	select {
	case y.w.slots <- struct{}{}:
		y.gone = false
		y.w.yielded.Add(-1)
		return nil
	case <-ctx.Done():
		y.lost = true
		return context.Cause(ctx)
	}
}

// holds reports whether the request holds its slot (so that handle frees
// it), and counts it out of the yielded requests when it does not.
func (y *slotYield) holds() bool {
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.gone {
		y.w.yielded.Add(-1)
		return false
	}
	return true
}

// takeYielded counts one more request without a slot, unless MaxYielded
// are.
func (w *Worker) takeYielded() bool {
	for {
		n := w.yielded.Load()
		if n >= int64(w.cfg.MaxYielded) {
			return false
		}
		if w.yielded.CompareAndSwap(n, n+1) {
			return true
		}
	}
}
