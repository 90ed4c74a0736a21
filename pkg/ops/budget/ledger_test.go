package budget_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/ops/budget"
)

// maxInWindow returns the most of times (sorted) inside any window of w.
func maxInWindow(times []time.Time, w time.Duration) int {
	best, j := 0, 0
	for i := range times {
		for times[i].Sub(times[j]) >= w {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

func TestLedgerRequestsPerWindowFIFO(t *testing.T) {
	l := budget.NewLedger()
	const key, window = "openai:m", 150 * time.Millisecond
	if err := l.SetLimits(key, budget.Limits{Requests: 3, InFlight: 1, WindowMS: window.Milliseconds()}); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		order []int
		times []time.Time
		wg    sync.WaitGroup
	)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := l.Acquire(context.Background(), key, 1)
			if err != nil {
				t.Error(err)
				return
			}
			// InFlight 1: the next call is admitted only after Done, so
			// the order recorded is the order admitted.
			mu.Lock()
			order, times = append(order, i), append(times, time.Now())
			mu.Unlock()
			r.Done(1)
		}()
		// Arrival order: each waiter is queued before the next starts.
		for l.Stats(key).Waiting+l.Stats(key).Requests < i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	wg.Wait()
	for i, v := range order {
		if v != i {
			t.Fatalf("admission order %v, want arrival order", order)
		}
	}
	if n := maxInWindow(times, window); n > 3 {
		t.Fatalf("%d calls admitted within one %s window, limit 3", n, window)
	}
}

func TestLedgerInFlightAndCancel(t *testing.T) {
	l := budget.NewLedger()
	const key = "openai:m"
	_ = l.SetLimits(key, budget.Limits{InFlight: 1})
	first, err := l.Acquire(context.Background(), key, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(ctx, key, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call waiting past its deadline: %v, want DeadlineExceeded", err)
	}
	if s := l.Stats(key); s.Waiting != 0 || s.InFlight != 1 {
		t.Fatalf("after a cancelled wait: %+v, want 0 waiting and 1 in flight", s)
	}
	got := make(chan *budget.Reservation)
	go func() {
		r, err := l.Acquire(context.Background(), key, 1)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	for l.Stats(key).Waiting != 1 {
		time.Sleep(time.Millisecond)
	}
	first.Done(-1)
	first.Done(-1) // a second Done does nothing
	r := <-got
	if s := l.Stats(key); s.InFlight != 1 {
		t.Fatalf("in flight %d after a Done and a new admission, want 1", s.InFlight)
	}
	r.Done(-1)
	if s := l.Stats(key); s.InFlight != 0 {
		t.Fatalf("in flight %d after every Done, want 0", s.InFlight)
	}
}

func TestLedgerKeysIndependent(t *testing.T) {
	l := budget.NewLedger()
	_ = l.SetLimits("slow:m", budget.Limits{Requests: 1, WindowMS: 60_000})
	if _, err := l.Acquire(context.Background(), "slow:m", 1); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = l.Acquire(context.Background(), "slow:m", 1) }()
	for l.Stats("slow:m").Waiting != 1 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 1000 {
		r, err := l.Acquire(ctx, "fast:m", 1)
		if err != nil {
			t.Fatalf("a key without limits waited behind an exhausted one: %v", err)
		}
		r.Done(1)
	}
}

func TestLedgerTokensReconciled(t *testing.T) {
	l := budget.NewLedger()
	const key = "openai:m"
	_ = l.SetLimits(key, budget.Limits{Tokens: 100, WindowMS: 60_000})
	r, err := l.Acquire(context.Background(), key, 80)
	if err != nil {
		t.Fatal(err)
	}
	r.Done(10)
	if s := l.Stats(key); s.Tokens != 10 {
		t.Fatalf("tokens after reconciling 80 to 10: %d", s.Tokens)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r2, err := l.Acquire(ctx, key, 80)
	if err != nil {
		t.Fatalf("80 more tokens with 10 used of 100: %v", err)
	}
	r2.Done(-1)
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if _, err := l.Acquire(short, key, 20); err == nil {
		t.Fatal("20 tokens admitted with 90 of 100 used")
	}
	// An estimate above the whole budget is cut to it, not refused forever.
	l2 := budget.NewLedger()
	_ = l2.SetLimits(key, budget.Limits{Tokens: 50})
	big, err := l2.Acquire(ctx, key, 5000)
	if err != nil || big.Tokens != 50 {
		t.Fatalf("estimate over the budget: %v, reserved %v", err, big)
	}
}

func TestLedgerSharesAndPause(t *testing.T) {
	tests := []struct {
		limits budget.Limits
		shares int
		want   budget.Limits
	}{
		{budget.Limits{Requests: 100, Tokens: 1000, InFlight: 8}, 4, budget.Limits{Requests: 25, Tokens: 250, InFlight: 2}},
		{budget.Limits{Requests: 3, InFlight: 1}, 4, budget.Limits{Requests: 1, InFlight: 1}},
		{budget.Limits{Requests: 10}, 0, budget.Limits{Requests: 10}},
	}
	for _, tt := range tests {
		l := budget.NewLedger()
		_ = l.SetLimits("k", tt.limits)
		l.SetShares(tt.shares)
		if got := l.Stats("k").Share; got != tt.want {
			t.Errorf("%+v shared by %d: %+v, want %+v", tt.limits, tt.shares, got, tt.want)
		}
	}
	l := budget.NewLedger()
	until := time.Now().Add(80 * time.Millisecond)
	l.Pause("k", until)
	r, err := l.Acquire(context.Background(), "k", 1)
	if err != nil {
		t.Fatal(err)
	}
	if time.Now().Before(until) {
		t.Fatal("admitted during a pause")
	}
	r.Done(-1)
	if err := l.SetLimits("k", budget.Limits{Requests: -1}); !errors.Is(err, budget.ErrInvalidLimits) {
		t.Fatalf("negative limits: %v", err)
	}
}

func TestLedgerRefundTakesTheCallOutOfItsWindow(t *testing.T) {
	l := budget.NewLedger()
	_ = l.SetLimits("k", budget.Limits{Requests: 1, Tokens: 100, WindowMS: 60_000})
	r, err := l.Acquire(context.Background(), "k", 30)
	if err != nil {
		t.Fatal(err)
	}
	r.Refund()
	r.Done(5) // after Refund, nothing
	if s := l.Stats("k"); s.Requests != 0 || s.Tokens != 0 || s.InFlight != 0 {
		t.Fatalf("after a refund: %+v, want an empty window", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r2, err := l.Acquire(ctx, "k", 30)
	if err != nil {
		t.Fatalf("the refunded request's slot: %v", err)
	}
	r2.Done(-1)
}

// A finished call frees its request and tokens a whole window after it
// finished, not after it was admitted: the provider may have counted it as
// late as its answer. A running call counts however old it is.
func TestLedger_window_counts_a_call_from_its_answer(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	l := budget.NewLedger(budget.WithClock(clock))
	const key = "openai:m"
	if err := l.SetLimits(key, budget.Limits{Requests: 1, Tokens: 100, WindowMS: 1000}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := l.Acquire(ctx, key, 40)
	if err != nil {
		t.Fatal(err)
	}
	// Running for three windows: still counted.
	now = now.Add(3 * time.Second)
	if s := l.Stats(key); s.Requests != 1 || s.Tokens != 40 {
		t.Fatalf("running call: %+v, want 1 request and 40 tokens counted", s)
	}
	r.Done(25)
	tests := []struct {
		after          time.Duration
		requests, toks int
	}{
		{0, 1, 25},
		{999 * time.Millisecond, 1, 25},
		{1000 * time.Millisecond, 0, 0},
	}
	done := now
	for _, tt := range tests {
		now = done.Add(tt.after)
		if s := l.Stats(key); s.Requests != tt.requests || s.Tokens != tt.toks {
			t.Errorf("%s after the answer: %d requests, %d tokens; want %d, %d", tt.after, s.Requests, s.Tokens, tt.requests, tt.toks)
		}
	}
	// A refused call leaves no trace in the window.
	r2, err := l.Acquire(ctx, key, 10)
	if err != nil {
		t.Fatal(err)
	}
	r2.Refund()
	if s := l.Stats(key); s.Requests != 0 || s.Tokens != 0 || s.InFlight != 0 {
		t.Errorf("after a refund: %+v, want nothing counted", s)
	}
}
