package main

import (
	"context"
	"sync"
	"time"
)

// loadResult is what a closed-loop run did.
type loadResult struct {
	// lat holds the latency of every successful request.
	lat []time.Duration
	// perClient counts the successful requests of each client.
	perClient []int
	// errs counts failed requests; firstErr is one of them.
	errs     int
	firstErr error
	// elapsed runs from the start until the last request ended.
	elapsed time.Duration
}

// ok returns the number of successful requests.
func (r loadResult) ok() int { return len(r.lat) }

// closedLoop runs clients goroutines for d: each calls do, waits for it to
// return, and calls it again, until d has passed (a request still running
// then is waited for and counted). do gets the client's index and a
// context bounded by timeout.
func closedLoop(ctx context.Context, clients int, d, timeout time.Duration, do func(ctx context.Context, client int) error) loadResult {
	type clientResult struct {
		lat      []time.Duration
		errs     int
		firstErr error
	}
	results := make([]clientResult, clients)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			r := &results[i]
			for ctx.Err() == nil && time.Now().Before(deadline) {
				rctx, cancel := context.WithTimeout(ctx, timeout)
				t0 := time.Now()
				err := do(rctx, i)
				took := time.Since(t0)
				cancel()
				if err != nil {
					r.errs++
					if r.firstErr == nil {
						r.firstErr = err
					}
					continue
				}
				r.lat = append(r.lat, took)
			}
		})
	}
	wg.Wait()
	out := loadResult{elapsed: time.Since(start), perClient: make([]int, clients)}
	for i, r := range results {
		out.lat = append(out.lat, r.lat...)
		out.perClient[i] = len(r.lat)
		out.errs += r.errs
		if out.firstErr == nil {
			out.firstErr = r.firstErr
		}
	}
	return out
}
