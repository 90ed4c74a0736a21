//go:build unix

package bus_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/embedded"
)

// BenchmarkCommunicate: communicates through bus.Start's worker (the
// scripted echo model) on an embedded server, from the Go client, each
// client to its own branch of 10 exchanges at the start, one request
// after another, with 1 and 8 clients. cpu-µs/op is the process's user
// and system CPU per request: the embedded server's, the worker's and
// the client's, as are allocs/op and B/op (a memory profile splits
// them):
//
//	go test -run '^$' -bench BenchmarkCommunicate -benchmem -memprofile /tmp/mem.out ./pkg/bus
//
// `make bench-bus` is the fuller harness: side by side with a bare
// JetStream worker, at several client counts.
func BenchmarkCommunicate(b *testing.B) {
	do := benchService(b)
	ask := map[string]any{"instruction": "Say hello in one short sentence."}
	made := 0
	for _, clients := range []int{1, 8} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			branches := make([]string, clients)
			for i := range branches {
				made++
				branches[i] = fmt.Sprintf("bench-%d", made)
				if err := do("branch.create", branches[i], map[string]any{"branch_id": branches[i], "chat_model": "scripted:echo"}); err != nil {
					b.Fatal(err)
				}
				for range 10 {
					if err := do("communicate", branches[i], ask); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			for i, branch := range branches {
				n := b.N / clients
				if i < b.N%clients {
					n++
				}
				wg.Go(func() {
					for range n {
						if err := do("communicate", branch, ask); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// BenchmarkOperate_branch_length: operate with a response_format its
// answer satisfies at the local attempt, through bus.Start's worker from
// the Go client, on branches of 10 and 2,000 exchanges. What a request
// costs, and allocates, must not grow with the branch: only a reformat
// round, which does not run here, shows the model the branch's messages.
//
//	go test -run '^$' -bench BenchmarkOperate_branch_length -benchmem ./pkg/bus
func BenchmarkOperate_branch_length(b *testing.B) {
	call := benchService(b)
	do := func(verb, branch string, data any) {
		if err := call(verb, branch, data); err != nil {
			b.Fatal(err)
		}
	}
	ask := map[string]any{
		"instruction":     `{"answer": "hello"}`,
		"response_format": map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}, "required": []string{"answer"}},
	}
	for _, n := range []int{10, 2000} {
		b.Run(fmt.Sprintf("exchanges=%d", n), func(b *testing.B) {
			branch := fmt.Sprintf("operate-%d", n)
			do("branch.create", branch, map[string]any{"branch_id": branch, "chat_model": "scripted:echo"})
			for range n {
				do("communicate", branch, map[string]any{"instruction": "an exchange of a branch that grows"})
			}
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				do("operate", branch, ask)
			}
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// benchService starts bus.Start's service on an embedded server and a Go
// client on a connection of its own, both stopped when b ends, and
// returns a func that sends verb with data on branch and waits for its
// result (an error answer is an error).
func benchService(b *testing.B) func(verb, branch string, data any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	svc, err := bus.Start(ctx, bus.Config{Embedded: embedded.Config{Port: embedded.RandomPort, StoreDir: b.TempDir()}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(svc.Close)
	b.Cleanup(func() { _ = svc.Stop(ctx) })
	nc, err := client.Connect(ctx, client.ConnectConfig{URL: svc.URL()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	cl, err := client.New(nc, client.Config{})
	if err != nil {
		b.Fatal(err)
	}
	return func(verb, branch string, data any) error {
		r, err := cl.Do(ctx, verb, branch, data)
		if err != nil {
			return err
		}
		_, err = r.Result()
		return err
	}
}

// processCPU returns the user plus system CPU time of the process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
