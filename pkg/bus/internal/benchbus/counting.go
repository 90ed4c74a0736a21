package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
)

// countingProvider is the scripted provider, counting its model calls in
// total and by request id. It is registered under the scripted provider's
// name, so "scripted:echo" branches call it. (It does not stream; the
// harness sends only communicate, which does not.)
type countingProvider struct {
	inner ops.Provider
	total atomic.Int64

	mu    sync.Mutex
	byReq map[string]int
}

func newCountingProvider() *countingProvider {
	return &countingProvider{inner: scripted.New(), byReq: map[string]int{}}
}

// register adds p to provs under the scripted provider's name.
func (p *countingProvider) register(provs *ops.Providers) error {
	return provs.Register(scripted.Name, p)
}

// Complete counts the call and runs it on the scripted provider.
func (p *countingProvider) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	p.total.Add(1)
	p.mu.Lock()
	p.byReq[call.RequestID]++
	p.mu.Unlock()
	return p.inner.Complete(ctx, call)
}

// calls returns the model calls made so far for request id.
func (p *countingProvider) calls(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byReq[id]
}

// runRecorder records every run of a request, in every worker (see
// recording): how often and with which delivery attempt it ran, and the
// order in which requests first started.
type runRecorder struct {
	redelivered atomic.Int64 // runs with a delivery attempt above 1
	started     atomic.Int64

	mu   sync.Mutex
	runs map[string]*requestRuns
}

// requestRuns is what runRecorder knows of one request.
type requestRuns struct {
	// attempts are the delivery attempts of its runs, in order.
	attempts []int
	// firstStart is the rank of its first run among all runs (from 1).
	firstStart int64
}

func newRunRecorder() *runRecorder {
	return &runRecorder{runs: map[string]*requestRuns{}}
}

// recording is one worker's handler (its engine) with its runs recorded.
type recording struct {
	inner worker.Handler
	r     *runRecorder
}

// Do records the run and runs the request.
func (h recording) Do(ctx context.Context, req ops.Request) (*ops.Result, error) {
	h.r.record(req)
	return h.inner.Do(ctx, req)
}

// record notes a run of req.
func (r *runRecorder) record(req ops.Request) {
	rank := r.started.Add(1)
	if req.Attempt > 1 {
		r.redelivered.Add(1)
	}
	r.mu.Lock()
	rr := r.runs[req.ID]
	if rr == nil {
		rr = &requestRuns{firstStart: rank}
		r.runs[req.ID] = rr
	}
	rr.attempts = append(rr.attempts, req.Attempt)
	r.mu.Unlock()
}

// of returns a copy of what was recorded for request id (zero if it never
// ran).
func (r *runRecorder) of(id string) requestRuns {
	r.mu.Lock()
	defer r.mu.Unlock()
	rr := r.runs[id]
	if rr == nil {
		return requestRuns{}
	}
	return requestRuns{attempts: append([]int(nil), rr.attempts...), firstStart: rr.firstStart}
}

// logTally counts the JSON log records of the lionbus service by level and
// message, without printing them.
type logTally struct {
	mu    sync.Mutex
	count map[string]int // "level: message"
}

func newLogTally() *logTally { return &logTally{count: map[string]int{}} }

// Write takes one zerolog record.
func (t *logTally) Write(p []byte) (int, error) {
	var rec struct {
		Level   string `json:"level"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(p), &rec); err != nil {
		rec.Level, rec.Message = "?", string(bytes.TrimSpace(p))
	}
	t.mu.Lock()
	t.count[rec.Level+": "+rec.Message]++
	t.mu.Unlock()
	return len(p), nil
}

// snapshot returns a copy of the counts.
func (t *logTally) snapshot() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.count)
}

// since returns the counts that grew since an earlier snapshot, by how much.
func (t *logTally) since(earlier map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range t.snapshot() {
		if d := v - earlier[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// storeCounter is the store.Observer of every lionbus worker: it counts
// the branches read from the stream because a worker did not keep them
// (a cache too small for the branches in use shows here).
type storeCounter struct{ misses atomic.Int64 }

func (*storeCounter) AppendConflict(string)       {}
func (*storeCounter) SnapshotWritten(string, int) {}
func (*storeCounter) Rebuilt(string)              {}
func (c *storeCounter) CacheMiss(string)          { c.misses.Add(1) }
