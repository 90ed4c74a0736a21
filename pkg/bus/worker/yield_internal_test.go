package worker

import "testing"

// A request gives up its slot while one of its calls waits, once however
// many wait, and takes it again when the last resumes; past MaxYielded
// requests without a slot, a call waits holding its own. A resume that
// finds no free slot does not wait for one (a call admitted by its budget
// waiting for slots held by requests waiting for that budget would never
// run): the request goes on without a slot, counted among the yielded
// until it ends, and handle frees none for it.
func TestSlotYield(t *testing.T) {
	w := &Worker{slots: make(chan struct{}, 2), cfg: Config{MaxYielded: 1}}
	take := func() { w.slots <- struct{}{} }
	a, b := &slotYield{w: w}, &slotYield{w: w}
	take()
	take() // both requests hold a slot: none free

	r1 := a.yield()
	r2 := a.yield()
	if r1 == nil || r2 == nil || len(w.slots) != 1 || w.yielded.Load() != 1 {
		t.Fatalf("two waits of one request: resumes %v %v, %d slots taken, %d yielded; want the slot given up once", r1 != nil, r2 != nil, len(w.slots), w.yielded.Load())
	}
	if b.yield() != nil {
		t.Fatal("a second request gave up its slot past MaxYielded 1")
	}
	r1()
	if len(w.slots) != 1 {
		t.Fatalf("first resume: %d slots taken; want the slot still given up", len(w.slots))
	}
	r1()
	if a.yields != 1 {
		t.Fatalf("a resume called twice counted twice: %d waits", a.yields)
	}
	r2()
	if len(w.slots) != 2 || w.yielded.Load() != 0 || !a.holds() {
		t.Fatalf("last resume: %d slots taken, %d yielded; want the slot back", len(w.slots), w.yielded.Load())
	}

	// b gives up its slot; another request takes it; b's resume finds
	// none and returns at once: b goes on without a slot.
	r := b.yield()
	if r == nil {
		t.Fatal("b could not give up its slot")
	}
	take()
	r() // must not block
	if w.yielded.Load() != 1 {
		t.Fatalf("b without a slot is not counted among the yielded (%d)", w.yielded.Load())
	}
	// Its next wait gives up nothing more, and takes no slot on resume
	// when none is free.
	again := b.yield()
	if again == nil || len(w.slots) != 2 {
		t.Fatalf("b's second wait: resume %v, %d slots taken", again != nil, len(w.slots))
	}
	again()
	if b.holds() || w.yielded.Load() != 0 {
		t.Fatalf("b holds a slot it never took back (yielded %d)", w.yielded.Load())
	}
}
