package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// pacedCLI is an in-process CLI provider emitting n text chunks, one per
// gap, each stamped (metadata.sent_ns) as it leaves the provider.
type pacedCLI struct {
	n   int
	gap time.Duration
}

func (p pacedCLI) IsCLI(history.ModelRef) bool { return true }

func (p pacedCLI) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	return p.Stream(ctx, call, func(ops.Chunk) error { return nil })
}

func (p pacedCLI) Stream(ctx context.Context, _ ops.Call, emit func(ops.Chunk) error) (*ops.Completion, error) {
	t := time.NewTicker(p.gap)
	defer t.Stop()
	for i := range p.n {
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if err := emit(ops.Chunk{Kind: ops.ChunkText, Content: "x", IsDelta: i > 0,
			Metadata: map[string]any{"sent_ns": strconv.FormatInt(time.Now().UnixNano(), 10)}}); err != nil {
			return nil, err
		}
	}
	return &ops.Completion{}, nil
}

// latencyOf returns how long ago chunk c left the provider, if it says.
func latencyOf(c ops.Chunk) (time.Duration, bool) {
	s, ok := c.Metadata["sent_ns"].(string)
	if !ok {
		return 0, false
	}
	sent, err := strconv.ParseInt(s, 10, 64)
	return time.Duration(time.Now().UnixNano() - sent), err == nil
}

// reportLatency reports the p50 and p99 of lat.
func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	if len(lat) == 0 {
		b.Fatal("no chunk measured")
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(len(lat))/float64(b.N), "chunks/run")
}

// BenchmarkRun_chunk_latency measures the time from a chunk leaving the
// provider to a client following the run (client.Stream: an ordered consumer
// on the chunk stream), through the embedded server: p50 and p99 over
// every chunk of b.N runs of 100 chunks, one every millisecond.
func BenchmarkRun_chunk_latency(b *testing.B) {
	bus := bustest.New(b, provision.Config{})
	bus.StartWorker(b, nil, nil, map[string]ops.Provider{"paced": pacedCLI{n: 100, gap: time.Millisecond}}, worker.Config{})
	ctx := context.Background()
	if r, err := bus.Client.Do(ctx, "branch.create", "", map[string]any{"branch_id": "bench", "chat_model": "paced:x"}); err != nil || r.Err() != nil {
		b.Fatalf("create: %v %v", err, r)
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, reply, err := bus.Client.Stream(ctx, "run", "bench", map[string]any{"instruction": fmt.Sprint("go ", i), "clear_messages": true}, func(c ops.Chunk) error {
			if d, ok := latencyOf(c); ok {
				lat = append(lat, d)
			}
			return nil
		})
		if err != nil || reply.Err() != nil {
			b.Fatalf("run: %v %v", err, reply)
		}
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// BenchmarkRun_chunk_latency_core is the same through a plain core
// subscription on lion.chunk.<id> (what `nats sub` does): live only, no
// replay.
func BenchmarkRun_chunk_latency_core(b *testing.B) {
	bus := bustest.New(b, provision.Config{})
	bus.StartWorker(b, nil, nil, map[string]ops.Provider{"paced": pacedCLI{n: 100, gap: time.Millisecond}}, worker.Config{})
	ctx := context.Background()
	if r, err := bus.Client.Do(ctx, "branch.create", "", map[string]any{"branch_id": "bench", "chat_model": "paced:x"}); err != nil || r.Err() != nil {
		b.Fatalf("create: %v %v", err, r)
	}
	var (
		mu  sync.Mutex
		lat []time.Duration
	)
	sub, err := bus.NC.Subscribe(bus.Res.Subjects.ChunksWildcard(), func(m *nats.Msg) {
		ev, err := bus.Codec.DecodeEvent(m.Header, m.Data)
		if err != nil {
			return
		}
		var c ops.Chunk
		if json.Unmarshal(ev.Data(), &c) != nil {
			return
		}
		if d, ok := latencyOf(c); ok {
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := bus.NC.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		reply, err := bus.Client.Do(ctx, "run", "bench", map[string]any{"instruction": fmt.Sprint("go ", i), "clear_messages": true})
		if err != nil || reply.Err() != nil {
			b.Fatalf("run: %v %v", err, reply)
		}
	}
	b.StopTimer()
	time.Sleep(50 * time.Millisecond) // the last deliveries
	mu.Lock()
	defer mu.Unlock()
	reportLatency(b, lat)
}
