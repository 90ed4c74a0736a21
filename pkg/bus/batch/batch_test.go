package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
	"github.com/lionbus/lionbus/pkg/wire"
)

// countedModel answers like scripted:echo and counts its calls by
// instruction. An instruction starting with "fail" fails (a final
// provider error) on its first call only, so a retry succeeds; one
// starting with "block" waits until its call is cancelled.
type countedModel struct {
	mu    sync.Mutex
	calls map[string]int
}

func newCounted() *countedModel { return &countedModel{calls: map[string]int{}} }

func (m *countedModel) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	m.mu.Lock()
	m.calls[call.Instruction]++
	n := m.calls[call.Instruction]
	m.mu.Unlock()
	switch {
	case strings.HasPrefix(call.Instruction, "fail") && n == 1:
		return nil, &ops.ProviderError{Provider: "counted", Message: "scripted failure of " + call.Instruction}
	case strings.HasPrefix(call.Instruction, "block"):
		<-ctx.Done()
		return nil, ctx.Err()
	}
	call.Model = history.ModelRef{Provider: scripted.Name, Model: "echo"}
	return scripted.New().Complete(ctx, call)
}

func (m *countedModel) snapshot() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.calls))
	for k, v := range m.calls {
		out[k] = v
	}
	return out
}

// jsonl returns n lines: items named item-<i>, whose instruction is
// instr(i).
func jsonl(n int, instr func(i int) string) []byte {
	var b bytes.Buffer
	for i := range n {
		data, _ := json.Marshal(map[string]any{"instruction": instr(i), "chat_model": "counted:echo"})
		fmt.Fprintf(&b, `{"custom_id": "item-%d", "verb": "communicate", "data": %s}`+"\n", i, data)
	}
	return b.Bytes()
}

// sumChecker checks every progress record of a batch: counts that add up
// to the total.
func sumChecker(t *testing.T, nc *nats.Conn, subj string) func() int {
	t.Helper()
	var mu sync.Mutex
	seen := 0
	sub, err := nc.Subscribe(subj, func(m *nats.Msg) {
		var b wire.Batch
		if err := json.Unmarshal(m.Data, &b); err != nil {
			t.Errorf("progress: %v", err)
			return
		}
		if b.Counts.Sum() != b.Counts.Total || b.Counts.Total != b.Total {
			t.Errorf("progress counts %+v do not add up to the total %d", b.Counts, b.Total)
		}
		mu.Lock()
		seen++
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return func() int { mu.Lock(); defer mu.Unlock(); return seen }
}

// waitEnded waits until batch id has ended and returns its record.
func waitEnded(t *testing.T, cl *client.Client, id string) *wire.Batch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var last *wire.Batch
	err := cl.WatchBatch(ctx, id, func(b *wire.Batch) error {
		if b.Counts.Sum() != b.Counts.Total {
			t.Errorf("watched counts %+v do not add up", b.Counts)
		}
		last = b
		return nil
	})
	if err != nil {
		t.Fatalf("watch %s: %v (last %+v)", id, err, last)
	}
	return last
}

// results reads every stored result of batch id, by custom_id, failing
// on a custom_id read twice.
func results(t *testing.T, cl *client.Client, id string) map[string]wire.BatchResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := map[string]wire.BatchResult{}
	var last uint64
	err := cl.BatchResults(ctx, id, 0, false, func(r wire.BatchResult) error {
		if _, dup := out[r.CustomID]; dup {
			t.Errorf("custom_id %s read twice", r.CustomID)
		}
		if r.Seq <= last {
			t.Errorf("results out of order: seq %d after %d", r.Seq, last)
		}
		last = r.Seq
		out[r.CustomID] = r
		return nil
	})
	if err != nil {
		t.Fatalf("results %s: %v", id, err)
	}
	return out
}

func startBus(t *testing.T, model *countedModel, workers int) *bustest.Bus {
	t.Helper()
	b := bustest.New(t, provision.Config{})
	for range workers {
		b.StartService(t, nil, nil, map[string]ops.Provider{"counted": model}, worker.Config{MaxInFlight: 64})
	}
	return b
}

func submit(t *testing.T, cl *client.Client, spec client.BatchSpec, input []byte) *wire.Batch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := cl.SubmitBatch(ctx, spec, bytes.NewReader(input))
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return b
}

// TestBatch_thousand_items_fifty_fail_then_retry: 950 succeed, 50 fail
// with their code, each custom_id once in the results; the retry runs
// the 50 failed and no other item (model calls counted), and they
// succeed.
func TestBatch_thousand_items_fifty_fail_then_retry(t *testing.T) {
	model := newCounted()
	b := startBus(t, model, 1)
	const n, fails = 1000, 50
	instr := func(i int) string {
		if i%(n/fails) == 7 {
			return fmt.Sprintf("fail %d", i)
		}
		return fmt.Sprintf("echo %d", i)
	}
	seen := sumChecker(t, b.NC, "lion.batch.progress.big")
	submit(t, b.Client, client.BatchSpec{ID: "big", Concurrency: 100}, jsonl(n, instr))
	end := waitEnded(t, b.Client, "big")
	want := wire.BatchCounts{Total: n, Succeeded: n - fails, Failed: fails}
	if end.State != wire.BatchCompleted || end.Counts != want {
		t.Fatalf("ended %s %+v, want completed %+v", end.State, end.Counts, want)
	}
	res := results(t, b.Client, "big")
	if len(res) != n {
		t.Fatalf("%d results, want %d", len(res), n)
	}
	for i := range n {
		r := res[fmt.Sprintf("item-%d", i)]
		if strings.HasPrefix(instr(i), "fail") {
			if r.Status != wire.ItemFailed || r.Error == nil || r.Error.Code != string(wire.CodeProvider) {
				t.Fatalf("item-%d: %+v, want failed with provider_error", i, r)
			}
			continue
		}
		var v string
		if r.Status != wire.ItemSucceeded || r.Result == nil || json.Unmarshal(r.Result.Value, &v) != nil || v != instr(i) {
			t.Fatalf("item-%d: %+v, want succeeded with %q", i, r, instr(i))
		}
	}
	calls := model.snapshot()
	for i := range n {
		if calls[instr(i)] != 1 {
			t.Fatalf("%q called %d times before the retry, want 1", instr(i), calls[instr(i)])
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := b.Client.RetryBatch(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	end = waitEnded(t, b.Client, "big")
	if want := (wire.BatchCounts{Total: n, Succeeded: n}); end.State != wire.BatchCompleted || end.Counts != want || end.Round != 2 {
		t.Fatalf("after retry %s round %d %+v, want completed round 2 %+v", end.State, end.Round, end.Counts, want)
	}
	calls = model.snapshot()
	for i := range n {
		want := 1
		if strings.HasPrefix(instr(i), "fail") {
			want = 2
		}
		if calls[instr(i)] != want {
			t.Fatalf("%q called %d times after the retry, want %d", instr(i), calls[instr(i)], want)
		}
	}
	res = results(t, b.Client, "big")
	for id, r := range res {
		if r.Status != wire.ItemSucceeded {
			t.Fatalf("%s after retry: %+v", id, r)
		}
	}
	if len(res) != n {
		t.Fatalf("%d results after retry, want %d", len(res), n)
	}
	if seen() == 0 {
		t.Fatal("no progress event")
	}
}
