package worker

import (
	"context"
	"slices"
	"sync"
	"time"
)

// lanes runs the requests of one branch one at a time, in the order of
// their sequence in the requests stream (their arrival): a request enters
// the lane of its branch when it is delivered, and runs when every request
// of that branch that entered with a lower sequence has left. Requests of
// different branches do not wait for each other. A request without a
// branch has a lane of its own id (claimKey), where only copies of it
// wait. A lane lives while requests are in it, and a branch's lane holding
// a lease a little longer (see leaser.linger), so there are never more
// lanes than requests in flight and branches served within the linger.
//
// With a leaser, a lane also holds its branch's lease while it runs
// requests, so that no other worker runs requests of the branch at the
// same time (see leaser): the first request to run acquires it, the next
// ones of the lane inherit it (up to maxHandovers in a row), and it is let
// go leaser.linger after the lane empties (a request id's lane lets it go
// at once: no other request comes to it).
type lanes struct {
	mu     sync.Mutex
	m      map[string]*lane
	leaser *leaser // nil: no leases
}

type lane struct {
	running *ticket
	waiting []*ticket // by sequence

	lease     uint64        // sequence of the lease held; 0: none
	confirmed time.Time     // when the publish that last took or renewed it was sent
	handovers int           // requests run in a row on the lease
	wanted    bool          // another worker asked for the lease
	stopRenew chan struct{} // closed when the lease is let go
	linger    *time.Timer   // set while the lane is empty and keeps its lease
}

// ticket is one request's place in its branch's lane.
type ticket struct {
	branch string
	seq    uint64
	ready  chan struct{}           // closed when the request may run
	claim  bool                    // the lane of a request id (claimKey), not a branch
	revoke context.CancelCauseFunc // stops the request when the lease is lost; guarded by lanes.mu
}

func newLanes() *lanes { return &lanes{m: make(map[string]*lane)} }

// enter places the request of stream sequence seq in the lane of branch.
// The ticket's ready channel is closed at once when the lane is free.
func (l *lanes) enter(branch string, seq uint64) *ticket {
	t := &ticket{branch: branch, seq: seq, ready: make(chan struct{})}
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.m[branch]
	if ln == nil {
		ln = &lane{}
		l.m[branch] = ln
	}
	if ln.running == nil {
		if ln.linger != nil {
			ln.linger.Stop()
			ln.linger = nil
		}
		ln.running = t
		close(t.ready)
		return t
	}
	i, _ := slices.BinarySearchFunc(ln.waiting, seq, func(w *ticket, s uint64) int {
		switch {
		case w.seq < s:
			return -1
		case w.seq > s:
			return 1
		}
		return 0
	})
	ln.waiting = slices.Insert(ln.waiting, i, t)
	return t
}

// leave takes t out of its lane, running or waiting; when it was running,
// the next request of the lane may run.
func (l *lanes) leave(t *ticket) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.m[t.branch]
	if ln == nil {
		return
	}
	if ln.running != t {
		if i := slices.Index(ln.waiting, t); i >= 0 {
			ln.waiting = slices.Delete(ln.waiting, i, i+1)
		}
		return
	}
	if len(ln.waiting) == 0 {
		ln.running = nil
		if ln.lease != 0 && !ln.wanted && !t.claim {
			l.lingerLocked(t.branch, ln)
			return
		}
		delete(l.m, t.branch)
		l.dropLeaseLocked(t.branch, ln)
		return
	}
	if ln.lease != 0 {
		if ln.handovers++; ln.handovers >= maxHandovers || ln.wanted {
			l.dropLeaseLocked(t.branch, ln)
		}
	}
	ln.running = ln.waiting[0]
	ln.waiting = slices.Delete(ln.waiting, 0, 1)
	close(ln.running.ready)
}
