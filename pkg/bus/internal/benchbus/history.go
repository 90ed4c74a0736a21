package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// historyRow is the history phase at one branch length.
type historyRow struct {
	length int    // exchanges the branch had when the samples started
	end    int    // exchanges after the samples
	branch string // the branch measured
	lat    latency
	errs   int
	first  error
	use    counters // over the samples
	// historyBytes is what LION_HISTORY grew by over the samples.
	historyBytes uint64
	// snapshot is the size of the branch's KV snapshot after the samples
	// (0 when there is none).
	snapshot int
	// modelCalls and redelivered count the samples' model calls and runs
	// of redelivered requests.
	modelCalls, redelivered int64
	grow                    time.Duration // untimed growth before the samples
}

// phaseHistory grows a branch to each length with sequential communicates
// (untimed), then times Samples sequential communicates on it. The samples
// extend the branch too; when they took it past the next length, the next
// length is measured on a new branch grown from scratch, so that every row
// starts at its length exactly.
func (e *env) phaseHistory(ctx context.Context) ([]historyRow, error) {
	var (
		rows     []historyRow
		branch   string
		branches int
		n        int // exchanges on branch
	)
	newBranch := func() error {
		branches++
		branch, n = fmt.Sprintf("hist-%d", branches), 0
		return e.createBranch(ctx, branch)
	}
	if err := newBranch(); err != nil {
		return nil, err
	}
	for _, length := range e.cfg.Lengths {
		if n > length {
			if err := newBranch(); err != nil {
				return rows, err
			}
		}
		e.logf("history: growing %s from %d to %d exchanges", branch, n, length)
		t0 := time.Now()
		for n < length {
			if err := e.sequential(ctx, branch); err != nil {
				return rows, fmt.Errorf("grow %s to %d exchanges, at %d: %w", branch, length, n, err)
			}
			n++
		}
		row := historyRow{length: length, branch: branch, grow: time.Since(t0)}
		e.logf("history: %d samples at %d exchanges (grown in %s)", e.cfg.Samples, length, row.grow.Round(time.Millisecond))
		hist0, err := e.streamBytes(ctx, e.res.History)
		if err != nil {
			return rows, err
		}
		calls, redelivered := e.calls.total.Load(), e.runs.redelivered.Load()
		before := e.read()
		lat := make([]time.Duration, 0, e.cfg.Samples)
		for range e.cfg.Samples {
			t := time.Now()
			if err := e.sequential(ctx, branch); err != nil {
				if ctx.Err() != nil {
					return rows, ctx.Err()
				}
				row.errs++
				if row.first == nil {
					row.first = err
				}
				continue
			}
			lat = append(lat, time.Since(t))
			n++
		}
		row.use = e.read().since(before)
		row.modelCalls, row.redelivered = e.calls.total.Load()-calls, e.runs.redelivered.Load()-redelivered
		row.lat, row.end = summarize(lat), n
		hist1, err := e.streamBytes(ctx, e.res.History)
		if err != nil {
			return rows, err
		}
		row.historyBytes = hist1 - hist0
		if row.snapshot, err = e.snapshotSize(ctx, branch); err != nil {
			return rows, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// sequential sends one communicate to branch, bounded by the request
// timeout.
func (e *env) sequential(ctx context.Context, branch string) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
	defer cancel()
	return e.communicate(ctx, branch)
}

// streamBytes returns the bytes st holds.
func (e *env) streamBytes(ctx context.Context, st jetstream.Stream) (uint64, error) {
	info, err := st.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream info: %w", err)
	}
	return info.State.Bytes, nil
}

// snapshotSize returns the size of branch's snapshot in the branches
// bucket, 0 when there is none.
func (e *env) snapshotSize(ctx context.Context, branch string) (int, error) {
	entry, err := e.res.Branches.Get(ctx, branch)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("snapshot of %s: %w", branch, err)
	}
	return len(entry.Value()), nil
}

// writeHistory prints the history phase.
func (e *env) writeHistory(w io.Writer, rows []historyRow) {
	fmt.Fprintf(w, "## b. History length\n\n")
	fmt.Fprintf(w, "One branch grown with sequential `communicate` requests (untimed) to each length, then %d sequential "+
		"`communicate` requests timed on it; they extend the branch, so a row covers the exchanges from its length to its end. "+
		"When the samples of a row ran past the next length, that length is measured on a new branch grown from scratch. "+
		"JetStream keeps no monotone count of bytes stored (snapshots replace each other, LION_OPS deletes acked requests), "+
		"so \"in bytes/op\" is the server's in_bytes per request: everything clients sent it, requests and every write the "+
		"worker made (history append, snapshot, events, stored answer, acks) and API requests. "+
		"\"history bytes/op\" is what LION_HISTORY grew by, \"snapshot\" the branch's KV snapshot size after the row. "+
		"\"JS API req/op\" is the server's JetStream API request counter, which does not count pull requests, direct gets "+
		"(KV reads, stored-answer lookups) or publishes. "+
		"\"GC CPU/op\" is the Go runtime's estimate of the CPU its garbage collector took, per request, "+
		"\"alloc/op\" the Go heap allocated per request and \"GCs\" the garbage collections during the row, "+
		"\"live heap\" the heap live after the last of them and \"scan heap\" the part of the heap the GC scans for pointers: "+
		"the whole process's (server, worker, client), so a large heap left by what ran before makes each collection dearer. "+
		"The GC CPU is an estimate from wall time; on a loaded machine it over-counts.\n\n",
		e.cfg.Samples)
	t := newTable("exchanges", "branch", "errors", "p50", "p99", "max", "p50 / first p50", "in bytes/op", "NATS msgs/op",
		"JS API req/op", "history bytes/op", "snapshot", "CPU/op", "GC CPU/op", "alloc/op", "GCs", "live heap", "scan heap", "model calls", "redelivered runs")
	var first time.Duration
	for i, r := range rows {
		if i == 0 {
			first = r.lat.p50
		}
		n := r.lat.n
		p := r.use.per(n)
		histPer := 0.0
		if n > 0 {
			histPer = float64(r.historyBytes) / float64(n)
		}
		t.add(fmt.Sprintf("%d → %d", r.length, r.end), r.branch, errCell(r.errs, r.first),
			ms(r.lat.p50), ms(r.lat.p99), ms(r.lat.max), ratio(float64(r.lat.p50), float64(first)),
			bytesStr(p.inBytes), count(p.msgs), count2(p.jsAPI), bytesStr(histPer), bytesStr(float64(r.snapshot)),
			us(p.cpu), us(p.gcCPU), bytesStr(p.alloc), fmt.Sprint(r.use.gcCycles), bytesStr(float64(r.use.liveHeap)), bytesStr(float64(r.use.scanHeap)),
			fmt.Sprint(r.modelCalls), fmt.Sprint(r.redelivered))
	}
	t.write(w)
}
