package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// sideRun is one side measured at one client count.
type sideRun struct {
	side    string // "floor", "same-messages floor", "lionbus" or "lionbus operate"
	clients int
	load    loadResult
	lat     latency
	use     counters // over the measured run
	// shares divides use.cpu between the server, the clients and the
	// worker (a CPU profile of the measured run); zero when -cpuprofile
	// holds the profiler.
	shares cpuShares
	// lionbus only: model calls and runs of redelivered requests during the
	// measured run, and the exchanges per branch at its end (warm-up
	// included), smallest and largest.
	modelCalls, redelivered int64
	// cacheMisses counts the branches the workers read from the stream
	// because they did not keep them.
	cacheMisses          int64
	branchMin, branchMax int
}

// requests returns the requests sent during the measured run.
func (r sideRun) requests() int { return r.load.ok() + r.load.errs }

// rps returns the answered requests per second.
func (r sideRun) rps() float64 {
	if r.load.elapsed <= 0 {
		return 0
	}
	return float64(r.load.ok()) / r.load.elapsed.Seconds()
}

// throughputRow is every side at one client count; op is lionbus's
// operate (with -operate), zero otherwise.
type throughputRow struct{ floor, same, lion, op sideRun }

// cpuOf returns r's CPU per request: the process's, and its parts.
func (r sideRun) cpuOf() (all, server, client, worker time.Duration) {
	all = r.use.per(r.load.ok()).cpu
	part := func(f float64) time.Duration { return time.Duration(f * float64(all)) }
	return all, part(r.shares.server), part(r.shares.client), part(r.shares.worker)
}

// phaseThroughput runs the closed-loop load on both sides for each client
// count.
func (e *env) phaseThroughput(ctx context.Context) ([]throughputRow, error) {
	var rows []throughputRow
	for run, c := range e.cfg.Clients {
		e.logf("throughput: floor, %d clients (%s + %s warm-up)", c, e.cfg.Duration, e.cfg.Warmup)
		floor := e.measureSide(ctx, "floor", c, func(ctx context.Context, _ int) error {
			return e.floorCl.do(ctx, "", instruction)
		})
		e.logf("throughput: same-messages floor, %d clients (%s + %s warm-up)", c, e.cfg.Duration, e.cfg.Warmup)
		same := e.measureSide(ctx, "same-messages floor", c, func(ctx context.Context, i int) error {
			return e.sameCl.do(ctx, fmt.Sprintf("tp%d-c%d-%d", run+1, c, i), instruction)
		})
		branches := make([]string, c)
		for i := range branches {
			branches[i] = fmt.Sprintf("tp%d-c%d-%d", run+1, c, i)
		}
		if err := e.createBranches(ctx, branches); err != nil {
			return rows, err
		}
		e.logf("throughput: lionbus, %d clients (%s + %s warm-up)", c, e.cfg.Duration, e.cfg.Warmup)
		lion := e.measureSide(ctx, "lionbus", c, func(ctx context.Context, i int) error {
			return e.communicate(ctx, branches[i])
		})
		if err := ctx.Err(); err != nil {
			return rows, err
		}
		row := throughputRow{floor: floor, same: same, lion: lion}
		if e.cfg.Operate {
			opBranches := make([]string, c)
			for i := range opBranches {
				opBranches[i] = fmt.Sprintf("op%d-c%d-%d", run+1, c, i)
			}
			if err := e.createBranches(ctx, opBranches); err != nil {
				return rows, err
			}
			e.logf("throughput: lionbus operate, %d clients (%s + %s warm-up)", c, e.cfg.Duration, e.cfg.Warmup)
			row.op = e.measureSide(ctx, "lionbus operate", c, func(ctx context.Context, i int) error {
				_, err := e.lionDo(ctx, "operate", opBranches[i], json.RawMessage(operateData))
				return err
			})
			if err := ctx.Err(); err != nil {
				return rows, err
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// measureSide runs do from clients clients, first for the warm-up, then
// measured.
func (e *env) measureSide(ctx context.Context, side string, clients int, do func(context.Context, int) error) sideRun {
	perClient := make([]int, clients)
	if e.cfg.Warmup > 0 {
		w := closedLoop(ctx, clients, e.cfg.Warmup, e.cfg.RequestTimeout, do)
		copy(perClient, w.perClient)
	}
	calls, redelivered, misses := e.calls.total.Load(), e.runs.redelivered.Load(), e.store.misses.Load()
	save := ""
	if e.cfg.SideProfiles != "" {
		save = filepath.Join(e.cfg.SideProfiles, fmt.Sprintf("%s-%d.pprof", strings.ReplaceAll(side, " ", "-"), clients))
	}
	stopShares, sharesErr := startShares(save)
	before := e.read()
	l := closedLoop(ctx, clients, e.cfg.Duration, e.cfg.RequestTimeout, do)
	use := e.read().since(before)
	var shares cpuShares
	if sharesErr == nil {
		var err error
		if shares, err = stopShares(); err != nil {
			e.logf("%s: %v", side, err)
		}
	}
	r := sideRun{
		side:        side,
		clients:     clients,
		load:        l,
		lat:         summarize(l.lat),
		use:         use,
		shares:      shares,
		modelCalls:  e.calls.total.Load() - calls,
		redelivered: e.runs.redelivered.Load() - redelivered,
		cacheMisses: e.store.misses.Load() - misses,
	}
	for i, n := range l.perClient {
		perClient[i] += n
	}
	r.branchMin, r.branchMax = slices.Min(perClient), slices.Max(perClient)
	return r
}

// writeThroughput prints the throughput phase.
func (e *env) writeThroughput(w io.Writer, rows []throughputRow) {
	fmt.Fprintf(w, "## a. Throughput and latency\n\n")
	fmt.Fprintf(w, "Closed loop: each client sends its next request when the previous one is answered; "+
		"%s measured after a %s warm-up, per side and client count. "+
		"The floor's clients publish to %s and wait for floor.reply.<id>; lionbus's clients send `communicate` "+
		"through the Go client (`Client.Do`), each client to its own branch, created first. "+
		"Both workers run at most %d requests at once.\n\n",
		e.cfg.Duration, e.cfg.Warmup, floorReqSubject, e.inFlight)
	fmt.Fprintf(w, "CPU/req is this process's user+sys CPU (getrusage) over the run divided by the requests answered: "+
		"the embedded server, both workers and the clients all run in this one process, for either side alike "+
		"(the idle side only polls), so the ratio is fair. "+
		"NATS msgs and bytes are the server's in+out counters (Varz), per request.\n\n")
	if !haveCPU {
		fmt.Fprintf(w, "(CPU is not measured on this platform.)\n\n")
	}
	fmt.Fprintf(w, "The same-messages floor is the floor plus exactly what a lionbus `communicate` stores besides its "+
		"request and answer: one append to the branch's history subject (%s<branch>, stream %s) expecting the subject's "+
		"last sequence (the one its previous append returned), and %d signal events (stream %s) published without "+
		"waiting, their acks awaited while the reply is stored; then the double ack. Each client sends to its own branch.\n\n",
		sameHistPrefix, sameHistStream, sameSignals, sameEventsStream)
	if e.sameSizes != nil {
		fmt.Fprintf(w, "Its payloads are sized as lionbus's (-same-bytes): the request's data cut or padded with spaces to "+
			"the size of each payload one probe communicate published (%s), so both sides move the same bytes and "+
			"what is left between them is work.\n\n", e.sameSizes)
	} else {
		fmt.Fprintf(w, "Every payload it stores is the request's data (`-same-bytes` sizes them as lionbus's instead).\n\n")
	}
	fmt.Fprintf(w, "The CPU is split by a CPU profile of each measured run: \"server\" is the samples whose stack is in "+
		"the nats-server package (the embedded server runs all of its work there), \"client\" those under the harness's "+
		"client loop, \"worker\" the rest (the worker, every connection's read loop, the Go runtime's background work "+
		"such as the GC's). \"JS API/req\" is the server's JetStream API counter (it counts no pull requests, direct "+
		"gets, publishes or acks; the message table after the ratios counts those).\n\n")
	t := newTable("side", "clients", "answered", "errors", "req/s", "p50", "p99", "max", "CPU/req", "server", "worker", "client",
		"NATS msgs/req", "JS API/req", "NATS bytes/req")
	for _, row := range rows {
		for _, r := range []sideRun{row.floor, row.same, row.lion, row.op} {
			if r.side == "" {
				continue
			}
			p := r.use.per(r.load.ok())
			all, srv, cl, wk := r.cpuOf()
			t.add(r.side, fmt.Sprint(r.clients), fmt.Sprint(r.load.ok()), errCell(r.load.errs, r.load.firstErr),
				fmt.Sprintf("%.0f", r.rps()), ms(r.lat.p50), ms(r.lat.p99), ms(r.lat.max),
				us(all), us(srv), us(wk), us(cl), count(p.msgs), count2(p.jsAPI), bytesStr(p.bytes))
		}
	}
	t.write(w)

	for _, f := range []*floorWorker{e.floor, e.same} {
		if err := f.err(); err != nil {
			fmt.Fprintf(w, "A floor worker reported an error (its requests are retried or counted as errors above): %v\n\n", err)
		}
	}
	fmt.Fprintf(w, "Ratios of lionbus to each floor (throughput below 1× and latency or CPU above 1× mean lionbus costs more); "+
		"\"server+worker\" leaves out the clients' CPU:\n\n")
	t = newTable("lionbus / …", "clients", "req/s", "p50", "p99", "CPU/req", "server+worker CPU", "server CPU", "worker CPU", "NATS msgs/req", "NATS bytes/req")
	for _, row := range rows {
		for _, f := range []sideRun{row.floor, row.same} {
			l := row.lion
			fp, lp := f.use.per(f.load.ok()), l.use.per(l.load.ok())
			fall, fsrv, _, fwk := f.cpuOf()
			lall, lsrv, _, lwk := l.cpuOf()
			t.add(f.side, fmt.Sprint(f.clients), ratio(l.rps(), f.rps()),
				ratio(float64(l.lat.p50), float64(f.lat.p50)), ratio(float64(l.lat.p99), float64(f.lat.p99)),
				ratio(float64(lall), float64(fall)), ratio(float64(lsrv+lwk), float64(fsrv+fwk)),
				ratio(float64(lsrv), float64(fsrv)), ratio(float64(lwk), float64(fwk)),
				ratio(lp.msgs, fp.msgs), ratio(lp.bytes, fp.bytes))
		}
	}
	t.write(w)

	if e.cfg.Operate {
		fmt.Fprintf(w, "`operate` against `communicate`, both through the worker (operate: `%s`; "+
			"its one model call answers with the instruction's text, which validates, and no action is requested), so the cost operate adds "+
			"(its generated schemas, the parse stage, the outer validation) is visible:\n\n", operateData)
		t = newTable("clients", "operate req/s", "communicate req/s", "ratio", "operate p50", "communicate p50", "CPU/req ratio")
		for _, row := range rows {
			o, c := row.op, row.lion
			op, cp := o.use.per(o.load.ok()), c.use.per(c.load.ok())
			t.add(fmt.Sprint(o.clients), fmt.Sprintf("%.0f", o.rps()), fmt.Sprintf("%.0f", c.rps()), ratio(o.rps(), c.rps()),
				ms(o.lat.p50), ms(c.lat.p50), ratio(float64(op.cpu), float64(cp.cpu)))
		}
		t.write(w)
	}

	fmt.Fprintf(w, "lionbus's model calls and redeliveries in the measured runs (each communicate makes one model call), "+
		"the branches its workers read from the stream because they did not keep them in memory (cache misses: each costs a read of the branch's snapshot, segments and newest events), "+
		"and how long the branches had grown by the end (warm-up included; see phase b for what length costs):\n\n")
	t = newTable("clients", "requests", "model calls", "repeated model calls", "redelivered runs", "cache misses", "exchanges per branch at end")
	for _, row := range rows {
		l := row.lion
		t.add(fmt.Sprint(l.clients), fmt.Sprint(l.requests()), fmt.Sprint(l.modelCalls),
			fmt.Sprint(l.modelCalls-int64(l.requests())), fmt.Sprint(l.redelivered), fmt.Sprint(l.cacheMisses),
			spread(l.branchMin, l.branchMax))
	}
	t.write(w)
}

// spread formats a min–max range.
func spread(lo, hi int) string {
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}
