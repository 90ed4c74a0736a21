package worker

import "sync"

// slotYield is what a delivery knows of its slot: whether it gave it up
// (ops.YieldSlot), and for how many of its calls. The slot is given up
// when the first call waiting starts to wait and taken again, when one is
// free, as the last one resumes; a request that found none goes on
// without, and handle frees none for it.
type slotYield struct {
	w      *Worker
	mu     sync.Mutex
	yields int  // calls of the request waiting with the slot given up
	gone   bool // the slot is given up
}

// yield gives up the slot (ops.SlotYield): nil when the worker already
// holds MaxYielded requests without a slot.
func (y *slotYield) yield() func() {
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.yields == 0 && !y.gone {
		if !y.w.takeYielded() {
			return nil
		}
		<-y.w.slots
		y.gone = true
	}
	y.yields++
	var once sync.Once
	return func() { once.Do(y.resume) }
}

// resume ends one call's wait: the last one takes a slot again if one is
// free, and else goes on without one (counted among the MaxYielded until
// the request ends). It never waits for a slot: a call admitted by its
// budget holds a share of it (a call in flight), and waiting for a slot
// held by requests that wait for that budget would never end.
func (y *slotYield) resume() {
	y.mu.Lock()
	defer y.mu.Unlock()
	y.yields--
	if y.yields > 0 || !y.gone {
		return
	}
	select {
	case y.w.slots <- struct{}{}:
		y.gone = false
		y.w.yielded.Add(-1)
	default:
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
