package worker

import (
	"context"
	"errors"
	"testing"
)

// A request gives up its slot while one of its calls waits, once however
// many wait, and takes it again when the last resumes; past MaxYielded
// requests without a slot, a call waits holding its own; a resume whose
// context ends leaves the request without a slot, which handle then does
// not free.
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
	if err := r1(context.Background()); err != nil || len(w.slots) != 1 {
		t.Fatalf("first resume: %v, %d slots taken; want the slot still given up", err, len(w.slots))
	}
	if err := r1(context.Background()); err != nil || a.yields != 1 {
		t.Fatalf("a resume called twice counted twice: %v, %d waits", err, a.yields)
	}
	if err := r2(context.Background()); err != nil || len(w.slots) != 2 || w.yielded.Load() != 0 || !a.holds() {
		t.Fatalf("last resume: %v, %d slots taken, %d yielded; want the slot back", err, len(w.slots), w.yielded.Load())
	}

	// b gives up its slot; another request takes it; b's resume ends with
	// its context: b finishes without a slot.
	r := b.yield()
	if r == nil {
		t.Fatal("b could not give up its slot")
	}
	take()
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("request over")
	cancel(cause)
	if err := r(ctx); !errors.Is(err, cause) {
		t.Fatalf("resume with an ended context: %v, want %v", err, cause)
	}
	if b.holds() || w.yielded.Load() != 0 {
		t.Fatalf("b holds a slot after a failed resume (yielded %d)", w.yielded.Load())
	}
	if b.yield() != nil {
		t.Fatal("a request without a slot gave one up")
	}
}
