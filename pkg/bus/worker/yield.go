package worker

import "sync"

// A request that waits for a model's budget gives up its slot
// (ops.YieldSlot) and, once admitted, takes a free one back; when none is
// free it goes on without and owes one: the next slot a finishing request
// frees pays the debt instead of going back to the fetch loop. So the
// requests running never exceed the slots by more than the debts, and the
// fetch loop takes in no new request until they are paid. Accounting,
// with T the slots taken, D the debts and R the requests running (those
// waiting with their slot given up are not): R = T + D.

// slotYield is what a delivery knows of its slot: whether it gave it up
// while its calls wait, and for how many of them. The slot is given up
// when the first waiting call starts to wait and taken back (or owed) as
// the last one resumes.
type slotYield struct {
	w       *Worker
	mu      sync.Mutex
	yields  int  // calls of the request waiting with the slot given up
	waiting bool // the slot is given up
}

// yield gives up the slot (ops.SlotYield): nil when the worker already
// has MaxYielded requests without a slot (waiting, or running on a debt).
func (y *slotYield) yield() func() {
	y.mu.Lock()
	defer y.mu.Unlock()
	if !y.waiting {
		if !y.w.takeYielded() {
			return nil
		}
		y.w.freeSlot()
		y.waiting = true
	}
	y.yields++
	var once sync.Once
	return func() { once.Do(y.resume) }
}

// resume ends one call's wait: the last one takes a free slot back, or
// else owes one and goes on. It never waits for a slot: a call admitted by
// its budget holds a share of it, and waiting for a slot held by requests
// that wait for that budget would never end.
func (y *slotYield) resume() {
	y.mu.Lock()
	defer y.mu.Unlock()
	y.yields--
	if y.yields > 0 || !y.waiting {
		return
	}
	y.waiting = false
	y.w.yielded.Add(-1)
	select {
	case y.w.slots <- struct{}{}:
	default:
		y.w.debt.Add(1)
	}
}

// done frees what the finished request holds: its slot, or the debt of
// another, unless its slot is given up (it ended while waiting).
func (y *slotYield) done() {
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.waiting {
		y.waiting = false
		y.w.yielded.Add(-1)
		return
	}
	y.w.freeSlot()
}

// freeSlot frees one slot: it pays a debt when there is one, and goes back
// to the fetch loop otherwise.
func (w *Worker) freeSlot() {
	for {
		d := w.debt.Load()
		if d == 0 {
			<-w.slots
			return
		}
		if w.debt.CompareAndSwap(d, d-1) {
			return
		}
	}
}

// takeYielded counts one more request without a slot, unless MaxYielded
// are (waiting or on a debt).
func (w *Worker) takeYielded() bool {
	for {
		n := w.yielded.Load()
		if n+w.debt.Load() >= int64(w.cfg.MaxYielded) {
			return false
		}
		if w.yielded.CompareAndSwap(n, n+1) {
			return true
		}
	}
}
