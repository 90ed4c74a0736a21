package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// hotBranch is the branch of the hot-branch phase.
const hotBranch = "hot"

// idleWait bounds how long the hot phase waits for the workers consumer to
// have nothing pending before it counts answers.
const idleWait = 10 * time.Second

// hotRequest is one request of the hot phase.
type hotRequest struct {
	id      string
	seq     uint64 // its LION_OPS stream sequence (from the PubAck)
	pubRank int64  // rank of its publish's completion, from 1
	lat     time.Duration
	err     error
	answers int // answer messages seen on its reply subject
	calls   int // model calls made for it
	runs    requestRuns
}

// orderCheck compares the branch's history order with another order of the
// same requests.
type orderCheck struct {
	name       string
	n          int  // requests compared
	same       bool // identical order
	samePos    int  // requests at the same position in both
	inversions int  // pairs ordered differently
}

// hotResult is the hot-branch phase.
type hotResult struct {
	reqs     []*hotRequest
	elapsed  time.Duration
	lat      latency
	answered int // requests answered successfully
	errs     int
	first    error
	// historyIDs are the request ids of the branch's messages events in
	// history order; commits counts them by id.
	historyIDs []string
	commits    map[string]int
	orders     []orderCheck
	logs       map[string]int // lionbus log records during the phase
	idle       bool           // the consumer had nothing pending when answers were counted
}

// phaseHot sends HotRequests communicates from each of HotClients clients
// at once, all to one branch, and checks what happened to each.
//
// Client.Submit returns only the request id, not the PubAck, so the
// requests are published here the way Submit does it (the same event
// builder and encoding, the id as the message id, the expected stream)
// with jetstream.PublishMsg, whose PubAck gives each request's stream
// sequence in LION_OPS; the answers are awaited with Client.Await.
func (e *env) phaseHot(ctx context.Context) (*hotResult, error) {
	if err := e.createBranch(ctx, hotBranch); err != nil {
		return nil, err
	}
	nc := e.lionJS.Conn()
	var mu sync.Mutex
	answers := map[string]int{}
	prefix := e.res.Subjects.Reply("")
	sub, err := nc.Subscribe(e.res.Subjects.RepliesWildcard(), func(m *nats.Msg) {
		mu.Lock()
		answers[strings.TrimPrefix(m.Subject, prefix)]++
		mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		return nil, err
	}

	total := e.cfg.HotClients * e.cfg.HotRequests
	e.logf("hot branch: %d clients × %d requests on %q", e.cfg.HotClients, e.cfg.HotRequests, hotBranch)
	logs0 := e.logs.snapshot()
	reqs := make([]*hotRequest, total)
	var pubRank atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for c := range e.cfg.HotClients {
		wg.Go(func() {
			for k := range e.cfg.HotRequests {
				r := &hotRequest{}
				reqs[c*e.cfg.HotRequests+k] = r
				rctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
				t0 := time.Now()
				r.err = e.hotOne(rctx, r, &pubRank)
				r.lat = time.Since(t0)
				cancel()
			}
		})
	}
	wg.Wait()
	res := &hotResult{reqs: reqs, elapsed: time.Since(start)}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.idle = e.waitIdle(ctx)
	if err := nc.Flush(); err != nil {
		return nil, err
	}
	res.logs = e.logs.since(logs0)

	var lat []time.Duration
	for _, r := range reqs {
		mu.Lock()
		r.answers = answers[r.id]
		mu.Unlock()
		r.calls, r.runs = e.calls.calls(r.id), e.runs.of(r.id)
		if r.err != nil {
			res.errs++
			if res.first == nil {
				res.first = r.err
			}
			continue
		}
		res.answered++
		lat = append(lat, r.lat)
	}
	res.lat = summarize(lat)

	evs, err := e.history(ctx, hotBranch)
	if err != nil {
		return res, err
	}
	res.commits = map[string]int{}
	for _, ev := range evs {
		if ev.Type == history.EventMessages {
			res.historyIDs = append(res.historyIDs, ev.RequestID)
			res.commits[ev.RequestID]++
		}
	}
	byID := map[string]*hotRequest{}
	for _, r := range reqs {
		if r.id != "" {
			byID[r.id] = r
		}
	}
	res.orders = []orderCheck{
		compareOrder("LION_OPS stream sequence (PubAck)", res.historyIDs, byID, func(r *hotRequest) int64 { return int64(r.seq) }),
		compareOrder("publish completion", res.historyIDs, byID, func(r *hotRequest) int64 { return r.pubRank }),
		compareOrder("first run started by the worker", res.historyIDs, byID, func(r *hotRequest) int64 { return r.runs.firstStart }),
	}
	return res, nil
}

// hotOne publishes one communicate to the hot branch as Client.Submit
// would, and awaits its answer.
func (e *env) hotOne(ctx context.Context, r *hotRequest, pubRank *atomic.Int64) error {
	ev, err := protocol.EventBuilder{Source: client.DefaultSource}.Request("communicate", hotBranch, "", "", json.RawMessage(instruction))
	if err != nil {
		return err
	}
	r.id = ev.ID()
	msg, err := protocol.Encode(e.res.Subjects.Op("communicate"), ev, protocol.Structured)
	if err != nil {
		return err
	}
	ack, err := e.lionJS.PublishMsg(ctx, msg, jetstream.WithExpectStream(e.res.Subjects.OpsStream()))
	if err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	r.seq, r.pubRank = ack.Sequence, pubRank.Add(1)
	reply, err := e.lionCl.Await(ctx, r.id)
	if err != nil {
		return err
	}
	_, err = reply.Result()
	return err
}

// waitIdle waits (at most idleWait) until the workers consumer has no
// request pending or unacknowledged, and reports whether it got there.
func (e *env) waitIdle(ctx context.Context) bool {
	deadline := time.Now().Add(idleWait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		info, err := e.res.Workers.Info(ctx)
		if err == nil && info.NumPending == 0 && info.NumAckPending == 0 && info.NumRedelivered == 0 {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// compareOrder compares the history order of ids with their order by key.
// Ids of other requests, and requests without a key, are left out.
func compareOrder(name string, history []string, byID map[string]*hotRequest, key func(*hotRequest) int64) orderCheck {
	var hist []*hotRequest
	for _, id := range history {
		if r := byID[id]; r != nil && key(r) > 0 {
			hist = append(hist, r)
		}
	}
	sorted := slices.Clone(hist)
	slices.SortStableFunc(sorted, func(a, b *hotRequest) int { return cmp.Compare(key(a), key(b)) })
	c := orderCheck{name: name, n: len(hist)}
	for i := range hist {
		if hist[i] == sorted[i] {
			c.samePos++
		}
		for j := i + 1; j < len(hist); j++ {
			if key(hist[i]) > key(hist[j]) {
				c.inversions++
			}
		}
	}
	c.same = c.samePos == c.n
	return c
}

// writeHot prints the hot-branch phase.
func (e *env) writeHot(w io.Writer, r *hotResult) {
	total := len(r.reqs)
	fmt.Fprintf(w, "## c. Hot branch\n\n")
	fmt.Fprintf(w, "%d clients at once, each sending %d `communicate` requests one after another (the next when the previous is answered), "+
		"all to the one branch %q; the worker runs at most %d at once. Client.Submit does not return the PubAck, so the harness "+
		"publishes each request as Submit does (same event and encoding, the id as Nats-Msg-Id) with jetstream.PublishMsg and takes "+
		"its LION_OPS stream sequence from the PubAck; answers are awaited with Client.Await and also counted on a subscription "+
		"to lion.reply.>. Model calls are counted by a wrapper of the scripted provider, runs (with their delivery attempt) by a "+
		"wrapper of the worker's handler.\n\n",
		e.cfg.HotClients, e.cfg.HotRequests, hotBranch, e.inFlight)

	once, dup, none := 0, 0, 0
	calls, repeated := 0, 0
	var redelivered, multiCalls, notOnce []string
	for _, q := range r.reqs {
		switch {
		case q.answers == 1:
			once++
		case q.answers > 1:
			dup++
		default:
			none++
		}
		calls += q.calls
		if q.calls > 1 {
			multiCalls = append(multiCalls, fmt.Sprintf("%s (%d calls)", q.id, q.calls))
		}
		if slices.ContainsFunc(q.runs.attempts, func(a int) bool { return a > 1 }) || len(q.runs.attempts) > 1 {
			redelivered = append(redelivered, fmt.Sprintf("%s (runs with attempts %v)", q.id, q.runs.attempts))
		}
		if c := r.commits[q.id]; c != 1 && q.id != "" {
			notOnce = append(notOnce, fmt.Sprintf("%s (%d events)", q.id, c))
		}
	}
	repeated = calls - total

	t := newTable("measure", "value")
	t.add("requests", fmt.Sprint(total))
	t.add("answered successfully (client)", fmt.Sprint(r.answered))
	t.add("errors", errCell(r.errs, r.first))
	t.add("answer messages on lion.reply.<id>: exactly one / more than one / none", fmt.Sprintf("%d / %d / %d", once, dup, none))
	t.add("throughput", fmt.Sprintf("%.0f req/s (%d answered in %s)", float64(r.answered)/r.elapsed.Seconds(), r.answered, r.elapsed.Round(time.Millisecond)))
	t.add("latency p50 / p99 / max (publish to answer)", fmt.Sprintf("%s / %s / %s", ms(r.lat.p50), ms(r.lat.p99), ms(r.lat.max)))
	t.add("model calls / requests", fmt.Sprintf("%d / %d", calls, total))
	t.add("repeated model calls (calls − requests)", fmt.Sprint(repeated))
	t.add("requests run more than once or redelivered", fmt.Sprint(len(redelivered)))
	t.add("history events of these requests (one each expected)", fmt.Sprintf("%d events, %d requests not exactly once", len(r.historyIDs), len(notOnce)))
	if !r.idle {
		t.add("note", fmt.Sprintf("the workers consumer still had requests pending after %s; late answers may be missing", idleWait))
	}
	t.write(w)

	fmt.Fprintf(w, "History order (the branch's `branch.messages` events, read with branch.history) against other orders of the same requests; "+
		"inversions are pairs of requests the two orders put the other way round (of n(n−1)/2):\n\n")
	t = newTable("history order compared with", "requests", "same order", "same position", "inversions")
	for _, o := range r.orders {
		t.add(o.name, fmt.Sprint(o.n), yesNo(o.same), fmt.Sprint(o.samePos), fmt.Sprintf("%d of %d", o.inversions, o.n*(o.n-1)/2))
	}
	t.write(w)

	listOrNone(w, "Requests with more than one model call", multiCalls)
	listOrNone(w, "Requests redelivered or run more than once (delivery attempts of their runs)", redelivered)
	listOrNone(w, "Requests without exactly one history event", notOnce)
	var logs []string
	for _, k := range slices.Sorted(maps.Keys(r.logs)) {
		logs = append(logs, fmt.Sprintf("%d× %s", r.logs[k], k))
	}
	listOrNone(w, "lionbus log records (info and above) during the phase", logs)
}

// listOrNone prints a bulleted list under title, or that it is empty.
func listOrNone(w io.Writer, title string, items []string) {
	if len(items) == 0 {
		fmt.Fprintf(w, "%s: none.\n\n", title)
		return
	}
	fmt.Fprintf(w, "%s (%d):\n\n", title, len(items))
	const maxItems = 20
	for i, s := range items {
		if i == maxItems {
			fmt.Fprintf(w, "- … and %d more\n", len(items)-maxItems)
			break
		}
		fmt.Fprintf(w, "- %s\n", s)
	}
	fmt.Fprintln(w)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
