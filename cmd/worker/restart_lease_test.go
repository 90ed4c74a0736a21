package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/store"
)

// The leases of branches vanish while three worker processes hold them,
// running model calls of a second each: the leases stream deleted; the
// server SIGKILLed with the leases in memory and started again 1.5s later
// (the stream is gone, and the holders, whose first calls last 4s, still
// hold their leases: a worker lets a lease go only after three fifths of
// the TTL without renewing it); the server down longer than the lease TTL with the
// leases on file (they age out as it starts), the first calls of each
// branch lasting past the restart. The model server counts the calls of
// each branch running at once: never two, so no two workers ran one
// branch's requests at the same time. Every request is answered, and
// committed once.
func TestRestart_lease_vanished_while_held_never_runs_a_branch_twice(t *testing.T) {
	tests := []struct {
		name    string
		storage string
		vanish  func(t *testing.T, srv *bustest.ServerProcess, js jetstream.JetStream)
		// firstCall, when set, is how long the first call of each
		// branch takes.
		firstCall time.Duration
	}{
		{"leases stream deleted", provision.LeasesOnFile, func(t *testing.T, srv *bustest.ServerProcess, js jetstream.JetStream) {
			subj, _ := protocol.NewSubjects("")
			if err := js.DeleteStream(bustest.Ctx(t), subj.LeasesStream()); err != nil {
				t.Fatal(err)
			}
		}, 0},
		{"server restarted, leases in memory", provision.LeasesInMemory, func(t *testing.T, srv *bustest.ServerProcess, _ jetstream.JetStream) {
			srv.Kill()
			time.Sleep(1500 * time.Millisecond)
			srv.Start()
		}, 4 * time.Second},
		{"server down past the lease TTL, leases on file", provision.LeasesOnFile, func(t *testing.T, srv *bustest.ServerProcess, _ jetstream.JetStream) {
			srv.Kill()
			time.Sleep(provision.DefaultLeaseTTL + time.Second)
			srv.Start()
		}, provision.DefaultLeaseTTL + 3*time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Fewer branches than workers: a branch's requests reach
			// several workers at once, and wait for its lease.
			const (
				branches = 2
				each     = 5
				workers  = 3
			)
			srv := bustest.StartServerProcess(t, bustest.ServerOptions{})
			model := newModelServer(t, time.Second)
			if tt.firstCall > 0 {
				model.delayOf = func(tag string) time.Duration {
					if strings.HasSuffix(tag, "-0") {
						return tt.firstCall
					}
					return time.Second
				}
			}
			for i := range workers {
				// One request at a time each: the requests of a branch
				// spread over the workers, which pass its lease around.
				startMainProcess(t, fmt.Sprintf("w%d", i+1), "--nats", srv.ClientURL(), "--lease-storage", tt.storage,
					"--concurrency", "1", "--log-level", "warn", "--openai-base-url", model.baseURL())
			}
			nc, cl := reconnectingClient(t, srv.ClientURL())
			deadline := time.Now().Add(2 * time.Minute)
			for b := range branches {
				r, err := doUntil(t, cl, deadline, "branch.create", "", map[string]any{
					"branch_id": fmt.Sprintf("lv-%d", b), "chat_model": map[string]any{"provider": "openai", "model": "m"},
				}, fmt.Sprintf("create-lv-%d", b))
				if err != nil || r.Err() != nil {
					t.Fatalf("branch.create: %v %v", err, r)
				}
			}
			var ids []string
			branchOf := map[string]string{}
			for n := range each {
				for b := range branches {
					id := fmt.Sprintf("lv-%d-%d", b, n)
					ids = append(ids, id)
					branchOf[id] = fmt.Sprintf("lv-%d", b)
					if err := submitUntil(cl, deadline, "communicate", branchOf[id],
						map[string]any{"instruction": "say " + branchOf[id] + "/" + id}, id); err != nil {
						t.Fatal(err)
					}
				}
			}
			// The first calls are running: their leases are held.
			waitFor(t, 30*time.Second, "calls running", func() bool {
				n, _ := model.mostAtOnce()
				return n >= 1 && model.callsOf("lv-0/lv-0-0")+model.callsOf("lv-1/lv-1-0") > 1
			})
			time.Sleep(300 * time.Millisecond)
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			tt.vanish(t, srv, js)

			var wg sync.WaitGroup
			for _, id := range ids {
				wg.Go(func() {
					if r, err := doUntil(t, cl, deadline, "communicate", branchOf[id],
						map[string]any{"instruction": "say " + branchOf[id] + "/" + id}, id); err != nil || r.Err() != nil {
						t.Errorf("%s: %v %v", id, err, r)
					}
				})
			}
			wg.Wait()
			most, which := model.mostAtOnce()
			t.Logf("%d requests on %d branches: at most %d model calls of one branch at once", len(ids), branches, most)
			if most != 1 {
				t.Errorf("%d calls of branch %s ran at once, want 1: two workers ran its requests at the same time", most, which)
			}
			res, err := provision.Ensure(bustest.Ctx(t), js, provision.Config{LeaseStorage: tt.storage})
			if err != nil {
				t.Fatal(err)
			}
			st, err := store.New(js, res, store.Config{})
			if err != nil {
				t.Fatal(err)
			}
			for b := range branches {
				evs, err := st.History(bustest.Ctx(t), fmt.Sprintf("lv-%d", b), 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				for id, n := range bustest.Commits(evs) {
					if n != 1 {
						t.Errorf("%s: %d commits, want 1", id, n)
					}
				}
				if got := len(bustest.Commits(evs)); got != each {
					t.Errorf("branch lv-%d: %d requests committed, want %d", b, got, each)
				}
			}
		})
	}
}
