package bus_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

// pacedCLI is an in-process CLI provider emitting n text chunks, one per
// gap, each stamped (metadata.sent_ns) as it leaves the provider.
type pacedCLI struct {
	n   int
	gap time.Duration
}

func (p pacedCLI) IsCLI(ops.ModelRef) bool { return true }

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

// BenchmarkRun_chunk_latency measures the time from a chunk leaving the
// provider to a client following the run (client.Run: an ordered consumer
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
		_, reply, err := bus.Client.Run(ctx, "bench", map[string]any{"instruction": fmt.Sprint("go ", i), "clear_messages": true}, func(c ops.Chunk) error {
			if s, ok := c.Metadata["sent_ns"].(string); ok {
				sent, _ := strconv.ParseInt(s, 10, 64)
				lat = append(lat, time.Duration(time.Now().UnixNano()-sent))
			}
			return nil
		})
		if err != nil || reply.Err() != nil {
			b.Fatalf("run: %v %v", err, reply)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) == 0 {
		b.Fatal("no chunk measured")
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(len(lat))/float64(b.N), "chunks/run")
}
