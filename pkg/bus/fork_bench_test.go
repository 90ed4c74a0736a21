package bus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/wire"
)

// BenchmarkBranchFork_vs_clone: on branches of 10, 500 and 2,000
// exchanges, a fork at the head against a clone (none of 2,000: it
// cannot be made) (time, and bytes the history stream
// and the snapshot bucket grew by per operation); branch.get of the
// parent against a fork of it at its head and at its middle (each with
// one exchange of its own; the middle is the middle event of its
// history); at 2,000 exchanges, whose branch.get exceeds the max payload,
// a chat that loads the branch and sends none of it instead; the storage
// of the parent alone and with 10 forks of one exchange each.
//
//	go test -run '^$' -bench BenchmarkBranchFork -benchtime 20x ./pkg/bus
func BenchmarkBranchFork_vs_clone(b *testing.B) {
	bus := bustest.New(b, provision.Config{})
	bus.StartWorker(b, nil, nil, nil, worker.Config{})
	_, _, res := bus.Conn(b)
	// The whole benchmark outlasts bustest.Ctx's 30 s.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	stored := func() uint64 {
		h, s := storedBytes(b, ctx, res)
		return h + s
	}
	for _, n := range []int{10, 500, 2000} {
		parent := fmt.Sprintf("bench-fork-%d", n)
		s0 := stored()
		exchanges(b, bus, parent, n)
		alone := stored() - s0
		made := 0
		for _, verb := range []string{"fork", "clone"} {
			if verb == "clone" && n > 500 {
				// A clone's branch.created carries every message, and its
				// answer the whole branch: past ~1,000 exchanges either
				// exceeds the max payload (1 MiB), and the clone fails.
				continue
			}
			b.Run(fmt.Sprintf("%s/exchanges=%d", verb, n), func(b *testing.B) {
				before := stored()
				for range b.N {
					made++
					id := fmt.Sprintf("%s-%s-%d", parent, verb, made)
					var err error
					if verb == "fork" {
						_, err = bus.Client.BranchFork(ctx, parent, wire.BranchForkRequest{BranchID: id})
					} else {
						_, err = bus.Client.BranchClone(ctx, parent, wire.BranchCloneRequest{BranchID: id})
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(stored()-before)/float64(b.N), "stored-bytes/op")
			})
		}
		if n > 500 {
			// branch.get of 2,000 exchanges (4,000 messages, no clear)
			// answers more than the max payload (1 MiB): it cannot be
			// read whole, fork or not. What loading it costs is measured
			// through an operation that loads it and sends the model
			// nothing of it: a chat with clear_messages.
			loads(b, bus, parent, n)
			storage(b, bus, parent, n, alone, &made, stored)
			continue
		}
		evs := readHistory(b, bus, parent, 1000, nil)
		reads := map[string]string{"get_parent": parent}
		for _, at := range []struct {
			name string
			seq  uint64
		}{{"head", 0}, {"middle", evs[len(evs)/2].Seq}} {
			id := fmt.Sprintf("%s-read-%s", parent, at.name)
			if _, err := bus.Client.BranchFork(ctx, parent, wire.BranchForkRequest{BranchID: id, AtSeq: at.seq}); err != nil {
				b.Fatal(err)
			}
			bustest.MustResult(b, bus.Do(b, "communicate", id, map[string]any{"instruction": "own"}), nil)
			reads["get_fork_at_"+at.name] = id
		}
		// The three reads alternate, so that a change of the machine's
		// load falls on each alike.
		for round := range 3 {
			for _, name := range []string{"get_parent", "get_fork_at_head", "get_fork_at_middle"} {
				b.Run(fmt.Sprintf("%s/exchanges=%d/round=%d", name, n, round), func(b *testing.B) {
					for range b.N {
						if _, err := bus.Client.BranchGet(ctx, reads[name]); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
		storage(b, bus, parent, n, alone, &made, stored)
	}
}

// loads measures a chat with clear_messages (the branch loaded, none of
// its messages sent) on parent, on a fork of it at its head and on one at
// its middle event, alternated over three rounds.
func loads(b *testing.B, bus *bustest.Bus, parent string, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	evs := readHistory(b, bus, parent, 1000, nil)
	on := map[string]string{"chat_parent": parent}
	for _, at := range []struct {
		name string
		seq  uint64
	}{{"head", 0}, {"middle", evs[len(evs)/2].Seq}} {
		id := fmt.Sprintf("%s-load-%s", parent, at.name)
		if _, err := bus.Client.BranchFork(ctx, parent, wire.BranchForkRequest{BranchID: id, AtSeq: at.seq}); err != nil {
			b.Fatal(err)
		}
		on["chat_fork_at_"+at.name] = id
	}
	for round := range 3 {
		for _, name := range []string{"chat_parent", "chat_fork_at_head", "chat_fork_at_middle"} {
			b.Run(fmt.Sprintf("%s/exchanges=%d/round=%d", name, n, round), func(b *testing.B) {
				for range b.N {
					bustest.MustResult(b, bus.Do(b, "chat", on[name], map[string]any{"instruction": "x", "clear_messages": true}), nil)
				}
			})
		}
	}
}

// storage measures what 10 forks of parent, with one exchange each, add
// to the storage of the parent alone (alone bytes).
func storage(b *testing.B, bus *bustest.Bus, parent string, n int, alone uint64, made *int, stored func() uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b.Run(fmt.Sprintf("storage_10_forks/exchanges=%d", n), func(b *testing.B) {
		var with uint64
		for range b.N {
			*made++
			before := stored()
			for k := range 10 {
				id := fmt.Sprintf("%s-ten-%d-%d", parent, *made, k)
				if _, err := bus.Client.BranchFork(ctx, parent, wire.BranchForkRequest{BranchID: id}); err != nil {
					b.Fatal(err)
				}
				bustest.MustResult(b, bus.Do(b, "communicate", id, map[string]any{"instruction": "own"}), nil)
			}
			with = alone + stored() - before
		}
		b.ReportMetric(float64(alone), "alone-bytes")
		b.ReportMetric(float64(with), "with-10-forks-bytes")
	})
}
