package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/bus/worker"
)

// Report is what a run measured, phase by phase; a phase that did not run
// (an earlier one failed) is nil.
type Report struct {
	Throughput []throughputRow
	// Ops are the messages per request of each side, counted after the
	// throughput runs.
	Ops     []opCount
	History []historyRow
	Hot     *hotResult
}

// run starts the environment, runs the three phases and prints each one's
// markdown to out as it ends; progress goes to progress.
func run(ctx context.Context, cfg Config, out, progress io.Writer) (*Report, error) {
	t0 := time.Now()
	e, err := newEnv(ctx, cfg, progress)
	if err != nil {
		return nil, err
	}
	defer e.close()
	e.writeHeader(out)
	if cfg.CPUProfile != "" && cfg.ProfilePhase == "" {
		stop, err := startCPUProfile(cfg.CPUProfile)
		if err != nil {
			return nil, err
		}
		defer stop()
	}

	rep := &Report{}
	if cfg.runs("a") {
		err = e.profiled("a", func() (err error) {
			rep.Throughput, err = e.phaseThroughput(ctx)
			return err
		})
		if err != nil {
			return rep, fmt.Errorf("throughput phase: %w", err)
		}
		e.writeThroughput(out, rep.Throughput)
		if rep.Ops, err = e.phaseOps(ctx); err != nil {
			return rep, fmt.Errorf("message count: %w", err)
		}
		e.writeOps(out, rep.Ops)
		e.logStreams(ctx)
	}
	if cfg.runs("b") {
		err = e.profiled("b", func() (err error) {
			rep.History, err = e.phaseHistory(ctx)
			return err
		})
		if err != nil {
			return rep, fmt.Errorf("history phase: %w", err)
		}
		e.writeHistory(out, rep.History)
		e.logStreams(ctx)
	}
	if cfg.runs("c") {
		err = e.profiled("c", func() (err error) {
			rep.Hot, err = e.phaseHot(ctx)
			return err
		})
		if err != nil {
			return rep, fmt.Errorf("hot-branch phase: %w", err)
		}
		e.writeHot(out, rep.Hot)
		e.logStreams(ctx)
	}
	if cfg.MemProfile != "" {
		if err := writeHeapProfile(cfg.MemProfile); err != nil {
			return rep, err
		}
	}
	e.logf("done in %s", time.Since(t0).Round(time.Millisecond))
	return rep, nil
}

// logStreams prints what each stream of the server holds: the state a
// long run leaves in the server (and, the server being embedded, in this
// process's heap).
func (e *env) logStreams(ctx context.Context) {
	streams := e.lionJS.ListStreams(ctx)
	for info := range streams.Info() {
		st := info.State
		e.logf("stream %s: %d messages, %s, %d subjects, %d consumers",
			info.Config.Name, st.Msgs, bytesStr(float64(st.Bytes)), st.NumSubjects, st.Consumers)
	}
	if err := streams.Err(); err != nil {
		e.logf("list streams: %v", err)
	}
}

// profiled runs the phase fn, under the CPU profile when it is the
// phase Config.ProfilePhase names.
func (e *env) profiled(phase string, fn func() error) error {
	if e.cfg.ProfilePhase != phase {
		return fn()
	}
	stop, err := startCPUProfile(e.cfg.CPUProfile)
	if err != nil {
		return err
	}
	defer stop()
	return fn()
}

// startCPUProfile starts a CPU profile written to path; stop ends it.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// writeHeapProfile collects the garbage and writes a heap profile to
// path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	return f.Close()
}

// writeHeader prints the report's title and the setup.
func (e *env) writeHeader(w io.Writer) {
	workerSettings := ""
	if e.cfg.Concurrency != 0 {
		workerSettings = fmt.Sprintf(" but max in flight %d (-concurrency)", e.cfg.Concurrency)
	}
	fmt.Fprintf(w, "# lionbus request cost\n\n")
	fmt.Fprintf(w, "The floor is a minimal Go JetStream request worker: the client subscribes to floor.reply.<id> and "+
		"publishes the request to the work-queue stream %s with a JetStream publish (waiting for the PubAck); the worker "+
		"pulls it from a durable pull consumer (fetching for its free slots, at most %d in flight, as lionbus's worker "+
		"does), publishes the reply to the "+
		"results stream %s with a JetStream publish (waiting for the PubAck), then double-acks the request. "+
		"lionbus is bus.Start on its own connection with the default worker settings%s, the scripted `scripted:echo` "+
		"model (instant) behind a counting wrapper, and the Go client.\n\n",
		floorReqStream, e.inFlight, floorResStream, workerSettings)
	t := newTable("setup", "value")
	t.add("Go", runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)
	t.add("CPUs / GOMAXPROCS", fmt.Sprintf("%d / %d", runtime.NumCPU(), runtime.GOMAXPROCS(0)))
	t.add("server", fmt.Sprintf("one embedded nats-server (file store in a temporary directory), max_payload %s", bytesStr(serverMaxPayload)))
	t.add("connections", "one for each worker, one for each side's clients")
	t.add("lionbus workers", fmt.Sprintf("%d (-workers), each bus.Start on its own connection, sharing the consumer; the floor has one", len(e.svcs)))
	t.add("in flight per worker", fmt.Sprintf("%d (worker.DefaultMaxInFlight %d)", e.inFlight, worker.DefaultMaxInFlight))
	cache := e.cfg.CacheBytes
	if cache == 0 {
		cache = store.DefaultCacheBytes
	}
	t.add("branch cache per worker", fmt.Sprintf("%s of encoded history (-cache-bytes; store.DefaultCacheBytes %s)", bytesStr(float64(cache)), bytesStr(store.DefaultCacheBytes)))
	t.add("request data", "`"+string(instruction)+"`")
	t.write(w)
}
