package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

// burstEnv sets the size of TestKill_burst (default 400 requests; the
// figures in the notes come from LIONBUS_BURST=2000).
const burstEnv = "LIONBUS_BURST"

// TestKill_burst: a burst of requests over several branches, served by a
// worker process and a worker in this process; the process is SIGKILLed
// in the middle. Every request ends with one stored answer, every answer
// seen on the wire is that one (same event id), one commit, and exactly
// one terminal signal event (run.end) stored; the test reports lost and
// duplicated requests, requests whose model ran twice, the maximum
// latency and the terminal events per request.
func TestKill_burst(t *testing.T) {
	requests := 400
	if v, err := strconv.Atoi(os.Getenv(burstEnv)); err == nil && v > 0 {
		requests = v
	}
	const (
		ackWait  = 2 * time.Second
		branches = 20
	)
	b := bustest.New(t, provision.Config{AckWait: ackWait, LeaseTTL: ackWait})

	p := startWorkerProcess(t, b, 64)
	cmd, child := p.cmd, p.child
	model := &modelCalls{byID: map[string]int{}}
	b.StartWorker(t, nil, nil, map[string]ops.Provider{"block": model}, worker.Config{})
	for i := range branches {
		b.CreateBranch(t, fmt.Sprintf("burst-%d", i))
	}

	// Every answer on the wire, with when it came.
	var mu sync.Mutex
	answers := map[string][]string{} // request id -> answer event ids
	answeredAt := map[string]time.Time{}
	sub, err := b.NC.Subscribe(b.Res.Subjects.RepliesWildcard(), func(m *nats.Msg) {
		ev, err := b.Codec.Decode(m)
		if err != nil {
			return
		}
		id, _ := ev.Extensions()[protocol.ExtRequestID].(string)
		mu.Lock()
		defer mu.Unlock()
		answers[id] = append(answers[id], ev.ID())
		if _, ok := answeredAt[id]; !ok {
			answeredAt[id] = time.Now()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	answered := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(answeredAt)
	}

	ids := make([]string, requests)
	submitted := make([]time.Time, requests)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	killed := time.Time{}
	for i := range ids {
		ids[i] = fmt.Sprintf("%sb%d", quickPrefix, i)
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			submitted[i] = time.Now()
			if _, err := b.Client.Submit(bustest.Ctx(t), "communicate", fmt.Sprintf("burst-%d", i%branches),
				map[string]any{"instruction": "say " + ids[i], "chat_model": "block:x"}, client.WithID(ids[i])); err != nil {
				t.Error(err)
			}
		}()
		if i == requests/2 {
			// Mid-burst: the process has requests in flight.
			waitFor(t, 30*time.Second, "some requests answered", func() bool { return answered() > requests/8 })
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			killed = time.Now()
		}
	}
	wg.Wait()
	waitFor(t, 120*time.Second, "every request answered", func() bool { return answered() == requests })
	bustest.WaitFor(t, 60*time.Second, "every request acknowledged", func() bool {
		info, err := b.Res.Workers.Info(bustest.Ctx(t))
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})

	commits := map[string]int{}
	for i := range branches {
		for id, n := range bustest.Commits(b.History(t, fmt.Sprintf("burst-%d", i))) {
			commits[id] += n
		}
	}
	terminal := terminalEvents(t, b)
	parentCalls := model.calls()
	child.mu.Lock()
	childCallsByID := maps2(child.started)
	child.mu.Unlock()

	var lost, wireDup, commitDup, twiceRun, inChild int
	var latencies []time.Duration
	termCounts := map[int]int{}
	for i, id := range ids {
		stored, err := b.Client.Result(bustest.Ctx(t), id)
		if err != nil {
			lost++
			t.Errorf("%s: no stored answer: %v", id, err)
			continue
		}
		mu.Lock()
		for _, aid := range answers[id] {
			if aid != stored.Event.ID() {
				wireDup++
				t.Errorf("%s: answer event %s differs from the stored %s", id, aid, stored.Event.ID())
			}
		}
		latencies = append(latencies, answeredAt[id].Sub(submitted[i]))
		mu.Unlock()
		if commits[id] != 1 {
			commitDup++
			t.Errorf("%s: %d commits", id, commits[id])
		}
		if n := parentCalls[id] + childCallsByID[id]; n > 1 {
			twiceRun++
		}
		if childCallsByID[id] > 0 {
			inChild++
		}
		ids := terminal[id]
		termCounts[len(ids)]++
		if len(ids) != 1 {
			t.Errorf("%s: %d distinct terminal events stored, want 1", id, len(ids))
		}
	}
	slices.Sort(latencies)
	t.Logf("%d requests over %d branches, worker process killed %s after the burst began with %d answered; "+
		"%d ran in the killed process: lost %d, answers differing from the stored one %d, doubled commits %d, "+
		"requests whose model ran twice %d, latency p50 %s, max %s, terminal events per request %v",
		requests, branches, killed.Sub(submitted[0]).Round(time.Millisecond), answeredAtKill(killed, answeredAt, &mu),
		inChild, lost, wireDup, commitDup, twiceRun, latencies[len(latencies)/2].Round(time.Millisecond),
		latencies[len(latencies)-1].Round(time.Millisecond), termCounts)
}

// answeredAtKill counts the answers that came before the kill.
func answeredAtKill(killed time.Time, at map[string]time.Time, mu *sync.Mutex) int {
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, t := range at {
		if t.Before(killed) {
			n++
		}
	}
	return n
}

func maps2(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// terminalEvents reads every run.end and run.failed event stored, and
// returns by request id the distinct event ids.
func terminalEvents(t *testing.T, b *bustest.Bus) map[string]map[string]bool {
	t.Helper()
	ctx := bustest.Ctx(t)
	cons, err := b.JS.OrderedConsumer(ctx, b.Res.Subjects.EventsStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{b.Res.Subjects.Events("*", "run_end"), b.Res.Subjects.Events("*", "run_failed")},
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	for {
		batch, err := cons.Fetch(500, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			ev, err := b.Codec.Decode(&nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
			if err != nil {
				t.Fatal(err)
			}
			id, _ := ev.Extensions()[protocol.ExtRequestID].(string)
			if out[id] == nil {
				out[id] = map[string]bool{}
			}
			out[id][ev.ID()] = true
		}
		if got == 0 {
			return out
		}
	}
}
