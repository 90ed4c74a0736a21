package worker

import "testing"

// A request gives up its slot while one of its calls waits, once however
// many wait, and takes it back when the last resumes; past MaxYielded
// requests without a slot, a call waits holding its own. A resume that
// finds no free slot does not wait (a call admitted by its budget, waiting
// for slots held by requests that wait for that budget, would never run):
// it owes one, and the next slot freed pays the debt instead of going back
// to the fetch loop. Throughout, the slots taken plus the debts are the
// requests running.
func TestSlotYield(t *testing.T) {
	w := &Worker{slots: make(chan struct{}, 2), cfg: Config{MaxYielded: 2}}
	take := func() { w.slots <- struct{}{} }
	running := func() int { return len(w.slots) + int(w.debt.Load()) }
	a, b, c := &slotYield{w: w}, &slotYield{w: w}, &slotYield{w: w}
	take()
	take() // a and b hold a slot each: none free

	r1, r2 := a.yield(), a.yield()
	if r1 == nil || r2 == nil || len(w.slots) != 1 || w.yielded.Load() != 1 {
		t.Fatalf("two waits of one request: resumes %v %v, %d slots taken, %d yielded; want the slot given up once", r1 != nil, r2 != nil, len(w.slots), w.yielded.Load())
	}
	r1()
	r1()
	if len(w.slots) != 1 || a.yields != 1 {
		t.Fatalf("first resume (twice): %d slots taken, %d waits; want the slot still given up, one wait", len(w.slots), a.yields)
	}
	r2()
	if len(w.slots) != 2 || w.yielded.Load() != 0 || w.debt.Load() != 0 || running() != 2 {
		t.Fatalf("last resume: %d slots taken, %d yielded, %d debts; want the slot back", len(w.slots), w.yielded.Load(), w.debt.Load())
	}

	// b gives up its slot, c takes it; b is admitted with no slot free:
	// it owes one and runs.
	rb := b.yield()
	take() // c
	rb()
	if w.debt.Load() != 1 || running() != 3 {
		t.Fatalf("b resumed without a free slot: %d debts, %d running; want 1 and 3", w.debt.Load(), running())
	}
	// a gives up its slot: it pays b's debt. c gives up its own. With two
	// waiting (MaxYielded 2) a third request keeps its slot.
	ra := a.yield()
	if ra == nil || w.debt.Load() != 0 || len(w.slots) != 2 {
		t.Fatalf("a's yield: %d debts, %d slots taken; want its slot to pay b's debt", w.debt.Load(), len(w.slots))
	}
	rc := c.yield()
	if rc == nil || len(w.slots) != 1 || (&slotYield{w: w}).yield() != nil {
		t.Fatalf("c's yield: %d slots taken; and a third past MaxYielded must keep its slot", len(w.slots))
	}
	ra() // a slot is free: a takes it
	rc() // none is: c owes one
	if len(w.slots) != 2 || w.debt.Load() != 1 || running() != 3 {
		t.Fatalf("a and c admitted: %d slots taken, %d debts, %d running; want 2, 1, 3", len(w.slots), w.debt.Load(), running())
	}
	b.done() // its slot pays c's debt
	if len(w.slots) != 2 || w.debt.Load() != 0 {
		t.Fatalf("b finished: %d slots taken, %d debts; want 2 and 0", len(w.slots), w.debt.Load())
	}
	a.done()
	c.done()
	if len(w.slots) != 0 || w.debt.Load() != 0 || w.yielded.Load() != 0 {
		t.Fatalf("all finished: %d slots taken, %d debts, %d yielded", len(w.slots), w.debt.Load(), w.yielded.Load())
	}

	// A request that ends while it waits frees nothing more.
	take()
	d := &slotYield{w: w}
	d.yield()
	d.done()
	if len(w.slots) != 0 || w.yielded.Load() != 0 {
		t.Fatalf("ended while waiting: %d slots taken, %d yielded", len(w.slots), w.yielded.Load())
	}
}
