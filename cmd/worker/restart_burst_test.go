package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/schemas"
)

// TestRestart_burst: a burst of requests over 20 branches, served by three
// worker processes on one nats-server (file storage), which is SIGKILLed
// when a quarter of the requests are answered and started again on the
// same port and store 3s later. No request is lost, every answer is stored
// once (and every answer seen on the wire is that one), each branch's
// history holds each of its requests once, the first answer comes within
// 3s of the restart and the last within 30s, and the workers log a few
// lines about it, not one per request. The test reports lost and doubled
// answers, requests whose model ran twice, the times from the restart to
// the first and the last answer, and the workers' log lines and bytes from
// the kill to the last answer. LIONBUS_BURST sets the size (default 400;
// the figures in the notes come from 2000).
func TestRestart_burst(t *testing.T) {
	nodes := []*bustest.ServerProcess{bustest.StartServerProcess(t, bustest.ServerOptions{})}
	restartBurst(t, nodes, nil)
}

// TestRestart_burst_cluster is TestRestart_burst on a three-node cluster,
// every stream and bucket with three replicas (--replicas 3), all three
// nodes SIGKILLed at once and started again 3s later.
func TestRestart_burst_cluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	nodes := bustest.StartClusterProcesses(t, 3)
	restartBurst(t, nodes, []string{"--replicas", "3"})
}

func restartBurst(t *testing.T, nodes []*bustest.ServerProcess, extraArgs []string) {
	requests := 400
	if v, err := strconv.Atoi(os.Getenv(burstEnv)); err == nil && v > 0 {
		requests = v
	}
	const (
		branches = 20
		workers  = 3
		down     = 3 * time.Second
	)
	url := bustest.ClusterURL(nodes)
	model := newModelServer(t, 0)
	args := append([]string{"--nats", url, "--concurrency", "64", "--log-level", "info", "--request-log-level", "debug",
		"--openai-base-url", model.baseURL()}, extraArgs...)
	procs := make([]*mainProcess, workers)
	for i := range procs {
		procs[i] = startMainProcess(t, fmt.Sprintf("w%d", i+1), args...)
	}
	nc, cl := reconnectingClient(t, url)
	setup := time.Now().Add(60 * time.Second)
	for i := range branches {
		r, err := doUntil(t, cl, setup, "branch.create", "", map[string]any{
			"branch_id": fmt.Sprintf("rb-%d", i), "chat_model": map[string]any{"provider": "openai", "model": "m"},
		}, fmt.Sprintf("create-rb-%d", i))
		if err != nil || r.Err() != nil {
			t.Fatalf("branch.create: %v %v", err, r)
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	subj, _ := protocol.NewSubjects("")

	// Every answer on the wire, by request id.
	var mu sync.Mutex
	wire := map[string][]string{}
	codec, err := protocol.NewCodec(protocol.CodecConfig{Validator: schemas.Validator{}})
	if err != nil {
		t.Fatal(err)
	}
	// record adds the answer event of header and data to seen, by request
	// id.
	record := func(mu *sync.Mutex, seen map[string][]string, header nats.Header, data []byte) {
		ev, err := codec.DecodeEvent(header, data)
		if err != nil {
			return
		}
		id, _ := ev.Extensions()[protocol.ExtRequestID].(string)
		mu.Lock()
		seen[id] = append(seen[id], ev.ID())
		mu.Unlock()
	}
	sub, err := nc.Subscribe(subj.RepliesWildcard(), func(m *nats.Msg) { record(&mu, wire, m.Header, m.Data) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	// Every answer the results stream stores from now on, by request id,
	// through an ordered consumer (which resumes after the restart where
	// it was): a second store of an answer replaces the first (one per
	// subject), so it would be seen nowhere else.
	var storesMu sync.Mutex
	storedEvents := map[string][]string{} // request id -> event id of each store
	cons, err := js.OrderedConsumer(bustest.Ctx(t), subj.ResultsStream(), jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverNewPolicy,
	})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { record(&storesMu, storedEvents, m.Headers(), m.Data()) })
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	answered := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(wire)
	}

	ids := make([]string, requests)
	branchOf := map[string]string{}
	for i := range ids {
		ids[i] = fmt.Sprintf("r%d", i)
		branchOf[ids[i]] = fmt.Sprintf("rb-%d", i%branches)
	}
	// readyAt is when JetStream answered again after the restart, for
	// every stream a communicate uses: a whole cluster elects its leaders
	// anew first, which takes seconds (raft election timeouts), before
	// anything can be served.
	var killedAt, restartedAt, readyAt time.Time
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		for answered() < requests/4 {
			time.Sleep(5 * time.Millisecond)
		}
		killedAt = time.Now()
		for _, n := range nodes {
			n.Kill()
		}
		time.Sleep(down)
		for _, n := range nodes {
			n.Start()
		}
		restartedAt = time.Now()
		needed := []string{subj.OpsStream(), subj.ResultsStream(), subj.HistoryStream(), subj.EventsStream(),
			subj.LeasesStream(), "KV_" + subj.BranchesBucket()}
		for _, name := range needed {
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
				_, err := js.Stream(ctx, name)
				cancel()
				if err == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		readyAt = time.Now()
	}()
	var wg sync.WaitGroup
	next := make(chan int)
	submitDeadline := time.Now().Add(3 * time.Minute)
	for range 32 {
		wg.Go(func() {
			for i := range next {
				if err := submitUntil(cl, submitDeadline, "communicate", branchOf[ids[i]],
					map[string]any{"instruction": "say " + branchOf[ids[i]] + "/" + ids[i]}, ids[i]); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()
	<-killed

	// Every request answered within 30s of the restart (with some slack
	// for this side to see it): the stored answers tell when. An answer
	// stored while this side's connection was away is not seen on the
	// wire, so the results stream is read for those not seen.
	deadline := time.Now().Add(90 * time.Second)
	var results jetstream.Stream
	waitFor(t, 90*time.Second, "the results stream to answer", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		results, err = js.Stream(ctx, subj.ResultsStream())
		return err == nil
	})
	stored := map[string]*jetstream.RawStreamMsg{}
	for len(stored) < requests && time.Now().Before(deadline) {
		for _, id := range ids {
			if stored[id] != nil {
				continue
			}
			mu.Lock()
			seen := len(wire[id]) > 0
			mu.Unlock()
			if !seen && len(stored) > 0 && time.Now().Before(deadline.Add(-80*time.Second)) {
				continue // not out yet, most likely: look at it later
			}
			if m, err := results.GetLastMsgForSubject(bustest.Ctx(t), subj.Reply(id)); err == nil {
				stored[id] = m
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	var storedAt []time.Time
	var lost []string
	for _, id := range ids {
		m := stored[id]
		if m == nil {
			lost = append(lost, id)
			continue
		}
		if ev, err := codec.DecodeEvent(m.Header, m.Data); err == nil {
			mu.Lock()
			for _, seen := range wire[id] {
				if seen != ev.ID() {
					t.Errorf("%s: answer %s on the wire differs from the stored %s", id, seen, ev.ID())
				}
			}
			mu.Unlock()
		}
		storedAt = append(storedAt, m.Time)
	}
	if len(lost) > 0 {
		if info, err := js.Consumer(bustest.Ctx(t), subj.OpsStream(), subj.WorkersConsumer()); err == nil {
			ci := info.CachedInfo()
			t.Logf("consumer: pending %d, ack pending %d, redelivered %d", ci.NumPending, ci.NumAckPending, ci.NumRedelivered)
		}
		for _, p := range procs {
			t.Logf("log of %s:\n%s", p.name, p.logs)
		}
	}
	// The last stores reach the ordered consumer a moment later.
	waitFor(t, 30*time.Second, "every stored answer seen by the results consumer", func() bool {
		storesMu.Lock()
		defer storesMu.Unlock()
		return len(storedEvents) >= requests-len(lost)
	})
	storesMu.Lock()
	stores, doubled, differing := 0, 0, 0
	for _, id := range ids {
		evs := storedEvents[id]
		stores += len(evs)
		if len(evs) > 1 {
			doubled++
			if len(slices.Compact(slices.Sorted(slices.Values(evs)))) > 1 {
				differing++
			}
			t.Logf("%s: stored %d times, event ids %v", id, len(evs), evs)
		}
	}
	storesMu.Unlock()
	var first, last time.Time
	for _, at := range storedAt {
		if at.After(restartedAt) && (first.IsZero() || at.Before(first)) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}

	// Each branch's history: one commit per request sent to it, nothing
	// else.
	res, err := provision.Ensure(bustest.Ctx(t), js, provision.Config{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(js, res, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	commits := map[string]int{}
	for i := range branches {
		branch := fmt.Sprintf("rb-%d", i)
		// A cluster may still be electing some leaders: read again.
		var evs []history.Event
		waitFor(t, 60*time.Second, "the history of "+branch, func() bool {
			evs, err = st.History(bustest.Ctx(t), branch, 0, 0)
			return err == nil
		})
		for id, n := range bustest.Commits(evs) {
			if branchOf[id] != branch {
				t.Errorf("branch %s holds a commit of %s", branch, id)
			}
			commits[id] += n
		}
	}
	var twice, badCommits int
	for _, id := range ids {
		if commits[id] != 1 {
			badCommits++
			t.Errorf("%s: %d commits, want 1", id, commits[id])
		}
		if model.callsOf(branchOf[id]+"/"+id) > 1 {
			twice++
		}
	}

	// The log: one line per change of state, none per request. The
	// connection logs its own losses and returns (and a write that failed
	// with it); the worker, that it cannot serve and that it serves
	// again, once each per outage.
	var lines, bytes int
	var kinds []string
	perChange := map[string]bool{
		"nats disconnected": true, "nats reconnected": true, "nats error": true,
		"cannot serve": true, "serving again: connected, JetStream answers, every stream, consumer and bucket is there": true,
	}
	for _, p := range procs {
		own, outages := 0, 0
		for _, l := range p.logs.between(killedAt, last.Add(time.Second)) {
			lines++
			bytes += len(l) + 1
			var rec struct{ Level, Message, Error, Component string }
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Errorf("%s: log line %q: %v", p.name, l, err)
				continue
			}
			kind := rec.Level + ": " + rec.Message
			if rec.Level == "error" {
				kind += " (" + rec.Error + ")"
			}
			kinds = append(kinds, kind)
			if !perChange[rec.Message] {
				t.Errorf("%s logged %q during the outage: not a change of state", p.name, kind)
			}
			if rec.Component != "nats" {
				own++
			}
			if rec.Message == "nats reconnected" {
				outages++
			}
		}
		if own > 2*outages {
			t.Errorf("%s logged %d lines of its own about %d outages, want at most 2 each (cannot serve, serving again)", p.name, own, outages)
		}
	}
	t.Logf("%d requests over %d branches, %d workers, %d server node(s) SIGKILLed after %d answers and started again %s later, "+
		"JetStream answering %s after the restart: "+
		"lost %d, answers stored twice %d (%d of them differing; %d stores for %d answers), requests whose model ran twice %d, "+
		"first answer %s after the restart (%s after JetStream answered), last %s after it; "+
		"worker log from the kill to the last answer: %d lines, %d bytes: %s",
		requests, branches, workers, len(nodes), answeredBefore(storedAt, killedAt), down,
		readyAt.Sub(restartedAt).Round(time.Millisecond),
		len(lost), doubled, differing, stores, requests, twice,
		first.Sub(restartedAt).Round(time.Millisecond), first.Sub(readyAt).Round(time.Millisecond),
		last.Sub(restartedAt).Round(time.Millisecond), lines, bytes, countKinds(kinds))
	if len(lost) > 0 {
		t.Errorf("%d requests lost: %v", len(lost), lost[:min(len(lost), 10)])
	}
	if stores != requests {
		t.Errorf("%d answers stored for %d requests", stores, requests)
	}
	// On one server JetStream answers at once, so this is 3s after the
	// restart; a whole cluster cannot serve anything before it has
	// elected its leaders again.
	if d := first.Sub(readyAt); first.IsZero() || d > 3*time.Second {
		t.Errorf("first answer %s after JetStream answered again (%s after the restart), want within 3s",
			d, first.Sub(restartedAt))
	}
	if d := last.Sub(restartedAt); d > 30*time.Second {
		t.Errorf("last answer %s after the restart, want within 30s", d)
	}
}

// submitUntil submits a request (id given, so stored once however often it
// is sent) until the server takes it or deadline passes.
func submitUntil(cl *client.Client, deadline time.Time, verb, branch string, data any, id string) error {
	var err error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = cl.Submit(ctx, verb, branch, data, client.WithID(id))
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("submit %s: %w", id, err)
}

// answeredBefore counts the answers stored before at.
func answeredBefore(storedAt []time.Time, at time.Time) int {
	n := 0
	for _, s := range storedAt {
		if s.Before(at) {
			n++
		}
	}
	return n
}

// countKinds returns "n× kind" for each distinct kind, most first.
func countKinds(kinds []string) string {
	counts := map[string]int{}
	for _, k := range kinds {
		counts[k]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%d× %s", counts[k], k)
	}
	return strings.Join(slices.Clip(out), "; ")
}
