package worker

import (
	"math/rand/v2"
	"testing"
)

// TestLanes_run_one_request_per_branch_in_sequence_order: whatever the
// order of delivery, each branch's requests run one at a time, lowest
// sequence first among those waiting, and other branches never wait.
func TestLanes_run_one_request_per_branch_in_sequence_order(t *testing.T) {
	tests := []struct {
		name string
		seqs []uint64 // delivery order, all on one branch
		want []uint64 // run order
	}{
		{"in order", []uint64{1, 2, 3, 4}, []uint64{1, 2, 3, 4}},
		// 1 runs at once; 4, 2, 3 wait and run by sequence.
		{"delivered out of order", []uint64{1, 4, 2, 3}, []uint64{1, 2, 3, 4}},
		// A redelivery (low sequence) waiting behind newer requests runs
		// before them.
		{"redelivery", []uint64{5, 6, 7, 2}, []uint64{5, 2, 6, 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLanes()
			var ts []*ticket
			for _, s := range tt.seqs {
				ts = append(ts, l.enter("b", s))
			}
			other := l.enter("other", 99)
			if !isReady(other) {
				t.Fatal("a request of another branch waits")
			}
			l.leave(other)
			var got []uint64
			for range tt.seqs {
				var running *ticket
				for _, x := range ts {
					if isReady(x) && !contains(got, x.seq) {
						if running != nil {
							t.Fatalf("two requests of one branch may run: %d and %d", running.seq, x.seq)
						}
						running = x
					}
				}
				if running == nil {
					t.Fatalf("nothing runs after %v", got)
				}
				got = append(got, running.seq)
				l.leave(running)
			}
			if fmtSeqs(got) != fmtSeqs(tt.want) {
				t.Fatalf("ran %v, want %v", got, tt.want)
			}
			if n, r := l.size(); n != 0 || r != 0 {
				t.Fatalf("%d lanes with %d requests left", n, r)
			}
		})
	}
}

// TestLanes_leave_while_waiting: a request that gives up while waiting (a
// cancel, a stop) leaves its place without running anything.
func TestLanes_leave_while_waiting(t *testing.T) {
	l := newLanes()
	a, b, c := l.enter("x", 1), l.enter("x", 2), l.enter("x", 3)
	l.leave(b)
	if isReady(b) || isReady(c) {
		t.Fatal("a waiting request was released by another's leaving")
	}
	l.leave(a)
	if !isReady(c) {
		t.Fatal("the next request did not run")
	}
	// Leaving twice (the worker leaves when its handler returns, and
	// again when the request is done) changes nothing.
	l.leave(a)
	d := l.enter("x", 4)
	if isReady(d) {
		t.Fatal("a second leave let another request run beside the running one")
	}
	l.leave(c)
	if !isReady(d) {
		t.Fatal("the next request did not run")
	}
	l.leave(d)
	if n, r := l.size(); n != 0 || r != 0 {
		t.Fatalf("%d lanes with %d requests left", n, r)
	}
}

func TestLanes_many_branches_random_order(t *testing.T) {
	l := newLanes()
	r := rand.New(rand.NewPCG(1, 2))
	var all []*ticket
	for i := range 400 {
		all = append(all, l.enter(string(rune('a'+r.IntN(8))), uint64(i+1)))
	}
	last := map[string]uint64{}
	for left := len(all); left > 0; {
		var ready []*ticket
		for _, t := range all {
			if t != nil && isReady(t) {
				ready = append(ready, t)
			}
		}
		if len(ready) == 0 || len(ready) > 8 {
			t.Fatalf("%d requests may run", len(ready))
		}
		x := ready[r.IntN(len(ready))]
		if x.seq < last[x.branch] {
			t.Fatalf("branch %s ran %d after %d", x.branch, x.seq, last[x.branch])
		}
		last[x.branch] = x.seq
		l.leave(x)
		all[x.seq-1] = nil
		left--
	}
}

func isReady(t *ticket) bool {
	select {
	case <-t.ready:
		return true
	default:
		return false
	}
}

func contains(s []uint64, v uint64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func fmtSeqs(s []uint64) string {
	out := ""
	for _, v := range s {
		out += " " + string(rune('0'+v))
	}
	return out
}

// size returns the number of lanes and of requests in them.
func (l *lanes) size() (lanes, requests int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ln := range l.m {
		if ln.running != nil {
			requests++
		}
		requests += len(ln.waiting)
	}
	return len(l.m), requests
}
