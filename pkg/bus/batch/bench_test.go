package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/wire"
)

// The batch benchmarks run once each (-benchtime 1x) over
// LIONBUS_BENCH_ITEMS items (default 2,000), e.g.
//
//	LIONBUS_BENCH_ITEMS=100000 go test ./pkg/bus/batch -run '^$' -bench 'Batch_vs|OneByOne' -benchtime 1x -timeout 1h
//
// and report items/s and the peak heap of the process (server, worker
// and submitter share it) sampled every 100 ms.

func benchItems(b *testing.B) int {
	n := 2000
	if s := os.Getenv("LIONBUS_BENCH_ITEMS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatalf("LIONBUS_BENCH_ITEMS=%q", s)
		}
		n = v
	}
	return n
}

// heapPeak samples the heap in use until stop is called, and returns the
// peak in MiB.
func heapPeak() (stop func() float64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() float64 { close(done); wg.Wait(); return float64(peak.Load()) / (1 << 20) }
}

// writeHeap writes a heap profile to $LIONBUS_BENCH_HEAP, when set, as a
// run ends (before its servers and workers are stopped).
func writeHeap(b *testing.B) {
	path := os.Getenv("LIONBUS_BENCH_HEAP")
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// sleepModel answers after d, like an API model would.
type sleepModel struct{ d time.Duration }

func (m sleepModel) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	t := time.NewTimer(m.d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	return &ops.Completion{Text: call.Instruction}, nil
}

// echoItems returns n communicate items, or (stateless) n chat items,
// which a batch without a template runs on no branch.
func echoItems(n int, model string, stateless bool) []byte {
	var in bytes.Buffer
	for i := range n {
		if stateless {
			fmt.Fprintf(&in, `{"custom_id": "doc-%d", "verb": "chat", "data": {"instruction": "doc %d", "chat_model": %q}}`+"\n", i, i, model)
			continue
		}
		fmt.Fprintf(&in, `{"custom_id": "doc-%d", "verb": "communicate", "data": {"instruction": "doc %d", "chat_model": %q, "skip_validation": true}}`+"\n", i, i, model)
	}
	return in.Bytes()
}

func runBatchBench(b *testing.B, n, workers, slots, concurrency int, model ops.Provider, ref string, stateless bool) {
	bus := bustest.New(b, provision.Config{MaxAckPending: max(1000, workers*slots)})
	for range workers {
		bus.StartService(b, nil, nil, map[string]ops.Provider{"m": model}, worker.Config{MaxInFlight: slots})
	}
	input := echoItems(n, ref, stateless)
	peak := heapPeak()
	start := time.Now()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := bus.Client.SubmitBatch(context.Background(), client.BatchSpec{ID: "bench", Concurrency: concurrency}, bytes.NewReader(input)); err != nil {
		b.Fatal(err)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	submitted := time.Since(start)
	var end *wire.Batch
	err := bus.Client.WatchBatch(context.Background(), "bench", func(bt *wire.Batch) error { end = bt; return nil })
	if err != nil || end.Counts.Succeeded != n {
		b.Fatalf("batch: %v %+v", err, end)
	}
	elapsed := time.Since(start)
	writeHeap(b)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "items/s")
	b.ReportMetric(peak(), "peak-heap-MiB")
	b.ReportMetric(submitted.Seconds(), "submit-s")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), "submit-alloc-MiB")
	b.ReportMetric(elapsed.Seconds(), "total-s")
}

// BenchmarkBatch_vs_OneByOne_batch: n echo items as one batch (each a
// branch.create, a communicate and a branch.delete), one worker of 64
// slots, the batch's concurrency 64.
func BenchmarkBatch_vs_OneByOne_batch(b *testing.B) {
	n := benchItems(b)
	for range b.N {
		runBatchBench(b, n, 1, 64, 64, sleepModel{}, "m:x", false)
	}
}

// BenchmarkBatch_stateless: n chat items on no branch (one request per
// item), one worker of 64 slots, the batch's concurrency 64.
func BenchmarkBatch_stateless(b *testing.B) {
	n := benchItems(b)
	for range b.N {
		runBatchBench(b, n, 1, 64, 64, sleepModel{}, "m:x", true)
	}
}

// BenchmarkBatch_vs_OneByOne_onebyone: the same requests a submitter
// sends itself, 64 at a time: branch.create, communicate, branch.delete
// per item, each awaited.
func BenchmarkBatch_vs_OneByOne_onebyone(b *testing.B) {
	n := benchItems(b)
	for range b.N {
		bus := bustest.New(b, provision.Config{})
		bus.StartService(b, nil, nil, map[string]ops.Provider{"m": sleepModel{}}, worker.Config{MaxInFlight: 64})
		peak := heapPeak()
		start := time.Now()
		var next atomic.Int64
		var wg sync.WaitGroup
		var failed atomic.Int64
		ctx := context.Background()
		for range 64 {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= n {
						return
					}
					br := fmt.Sprintf("one-%d", i)
					data, _ := json.Marshal(map[string]any{"instruction": fmt.Sprintf("doc %d", i), "chat_model": "m:x", "skip_validation": true})
					for _, r := range []struct {
						verb, branch string
						data         any
					}{
						{wire.VerbBranchCreate, "", map[string]any{"branch_id": br}},
						{wire.VerbCommunicate, br, json.RawMessage(data)},
						{wire.VerbBranchDelete, br, map[string]any{}},
					} {
						reply, err := bus.Client.Do(ctx, r.verb, r.branch, r.data, client.WithID(br+"-"+r.verb[len(r.verb)-3:]))
						if err != nil || reply.Err() != nil {
							failed.Add(1)
						}
					}
				}
			})
		}
		wg.Wait()
		if failed.Load() > 0 {
			b.Fatalf("%d requests failed", failed.Load())
		}
		elapsed := time.Since(start)
		b.ReportMetric(float64(n)/elapsed.Seconds(), "items/s")
		b.ReportMetric(peak(), "peak-heap-MiB")
		b.ReportMetric(elapsed.Seconds(), "total-s")
	}
}

// BenchmarkBatch_model_1s: n items (communicate on a branch each, or
// stateless chats) whose model answers after 1 s, the
// batch's concurrency 2,000, against one and two workers of 1,024 slots
// (the consumer's max ack pending raised to their slots): what the
// concurrency allows is slots items per second.
func BenchmarkBatch_model_1s(b *testing.B) {
	n := benchItems(b)
	for _, stateless := range []bool{false, true} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("stateless=%v/workers=%d", stateless, workers), func(b *testing.B) {
				for range b.N {
					runBatchBench(b, n, workers, 1024, 2000, sleepModel{d: time.Second}, "m:x", stateless)
				}
			})
		}
	}
}

// BenchmarkBatch_cluster: the batch of BenchmarkBatch_vs_OneByOne_batch
// on a three-node cluster of nats-server processes with every stream and
// bucket replicated three times (against one node: that benchmark).
func BenchmarkBatch_cluster(b *testing.B) {
	n := benchItems(b)
	for range b.N {
		nodes := bustest.StartClusterProcesses(b, 3)
		url := bustest.ClusterURL(nodes)
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		provs := bustest.Providers(b, map[string]ops.Provider{"m": sleepModel{}})
		svc, err := bus.Start(ctx, bus.Config{
			Connect:   client.ConnectConfig{URL: url},
			Provision: provision.Config{Replicas: 3},
			Providers: provs,
			Worker:    worker.Config{MaxInFlight: 64},
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = svc.Stop(context.Background()); svc.Close() })
		nc, err := client.Connect(ctx, client.ConnectConfig{URL: url})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
		cl, err := client.New(nc, client.Config{})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := cl.SubmitBatch(ctx, client.BatchSpec{ID: "bench", Concurrency: 64}, bytes.NewReader(echoItems(n, "m:x", false))); err != nil {
			b.Fatal(err)
		}
		var end *wire.Batch
		if err := cl.WatchBatch(ctx, "bench", func(bt *wire.Batch) error { end = bt; return nil }); err != nil || end.Counts.Succeeded != n {
			b.Fatalf("batch: %v %+v", err, end)
		}
		elapsed := time.Since(start)
		b.ReportMetric(float64(n)/elapsed.Seconds(), "items/s")
		b.ReportMetric(elapsed.Seconds(), "total-s")
	}
}
