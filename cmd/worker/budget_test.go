package main

// Model budgets end to end: real worker processes joined to one NATS
// server, the real openai provider, and a local OpenAI-compatible server
// that enforces its own limits with 429s (openaitest). Windows are one
// second instead of a minute, so that each test takes seconds.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/budget"
	"github.com/lionbus/lionbus/pkg/ops/provider/openai/openaitest"
	"github.com/lionbus/lionbus/pkg/wire"
)

// budgetFile writes a --budgets file.
func budgetFile(t *testing.T, f budget.File) string {
	t.Helper()
	raw, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "budgets.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// budgetFleet starts n worker processes on srv with the budgets file and
// the openai provider pointed at api, and waits until each counts n
// members in the budget split.
func budgetFleet(t *testing.T, srvURL, prefix string, n int, api *openaitest.Server, budgets string, extra ...string) []*mainProcess {
	t.Helper()
	procs := make([]*mainProcess, n)
	for i := range procs {
		args := append([]string{"--nats", srvURL, "--prefix", prefix, "--openai-base-url", api.BaseURL(),
			// Debug: a change of the budget split is logged at debug level.
			"--budgets", budgets, "--log-level", "debug"}, extra...)
		procs[i] = startMainProcess(t, fmt.Sprintf("w%d", i+1), args...)
	}
	want := fmt.Sprintf(`"members":%d`, n)
	for _, p := range procs {
		waitFor(t, 30*time.Second, p.name+" to count "+want, func() bool {
			return strings.Contains(p.logs.String(), want)
		})
	}
	return procs
}

// budgetClient connects a client and creates branches b0..b(n-1) whose
// chat model is model.
func budgetClient(t *testing.T, srvURL, prefix string, branches int, model map[string]any) *client.Client {
	t.Helper()
	nc, err := nats.Connect(srvURL, nats.Name(t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	cl2, err := client.New(nc, client.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range branches {
		if _, err := cl2.Do(ctx, "branch.create", "", map[string]any{"branch_id": fmt.Sprintf("b%d", i), "chat_model": model}); err != nil {
			t.Fatal(err)
		}
	}
	return cl2
}

// chatAll sends one chat request per instruction, at most par at once,
// spread over branches, and returns how many failed (the first error).
func chatAll(t *testing.T, cl *client.Client, branches int, par int, instructions []string) (failed int, first error) {
	t.Helper()
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(instructions) {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				r, err := cl.Do(ctx, "chat", fmt.Sprintf("b%d", i%branches), map[string]any{"instruction": instructions[i]})
				if err == nil {
					_, err = r.Result()
				}
				cancel()
				if err != nil {
					mu.Lock()
					failed++
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return failed, first
}

// Four workers, 2,000 requests, a server that refuses above 100 requests
// a second and above 16 at once: the fleet's budget (the server's 100 a
// second, 12 in flight, split four ways) keeps the 429s under 1 %, every
// request is answered, and the rate achieved is at least 90 % of the
// server's limit.
func TestBudget_four_workers_keep_the_providers_limit(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 requests through four worker processes")
	}
	const (
		limit, concurrent = 100, 16
		requests          = 2000
		model             = "gpt-limited"
	)
	api := openaitest.New(openaitest.Config{Limits: openaitest.Limits{Requests: limit, Concurrent: concurrent}, Latency: 20 * time.Millisecond})
	defer api.Close()
	srv := bustest.NewServer(t)
	budgets := budgetFile(t, budget.File{Limits: map[string]budget.Limits{
		"openai:" + model: {Requests: limit, InFlight: concurrent * 3 / 4, WindowMS: 1000},
	}})
	budgetFleet(t, srv.ClientURL(), "bud", 4, api, budgets, "--concurrency", "8")
	cl := budgetClient(t, srv.ClientURL(), "bud", 64, map[string]any{"provider": "openai", "model": model})
	instr := make([]string, requests)
	for i := range instr {
		instr[i] = fmt.Sprintf("request %d", i)
	}
	failed, first := chatAll(t, cl, 64, 256, instr)
	if failed > 0 {
		t.Fatalf("%d of %d requests failed; first: %v", failed, requests, first)
	}
	adm := api.Admitted()
	refused := api.Refused()
	if len(adm) != requests {
		t.Fatalf("the server answered %d requests 200, want %d", len(adm), requests)
	}
	span := adm[len(adm)-1].At.Sub(adm[0].At).Seconds()
	overall := float64(len(adm)-1) / span
	// The rate the limit shows is the rate while every worker has a
	// backlog: between the 5th and the 95th percentile of the admissions,
	// leaving out the clients' ramp-up and the last requests' tail.
	lo, hi := len(adm)/20, len(adm)-1-len(adm)/20
	rate := float64(hi-lo) / adm[hi].At.Sub(adm[lo].At).Seconds()
	worst, _ := openaitest.Worst(adm, model, time.Second)
	perSec := make([]int, int(span)+1)
	for _, a := range adm {
		perSec[int(a.At.Sub(adm[0].At).Seconds())]++
	}
	t.Logf("2,000 requests, 4 workers: %d 429s (%.2f %% of attempts); %.1f requests/s with a backlog (5th to 95th percentile) = %.1f %% of the server's %d/s, %.1f/s first to last; worst 1s window %d requests; at most %d at once; per second %v",
		refused, 100*float64(refused)/float64(requests+refused), rate, 100*rate/limit, limit, overall, worst, api.MaxInFlight(model), perSec)
	if float64(refused) >= 0.01*float64(requests) {
		t.Errorf("%d 429s, want under 1 %% of %d", refused, requests)
	}
	if rate < 0.9*limit {
		t.Errorf("achieved %.1f requests/s, want at least 90 %% of %d", rate, limit)
	}
}

// Two models on one fleet, one with a tiny budget (one request per two
// seconds): the other model's 200 requests are all answered while the
// tiny model's requests still wait, and none of them waits for budget.
func TestBudget_a_tiny_budget_does_not_slow_another_model(t *testing.T) {
	api := openaitest.New(openaitest.Config{})
	defer api.Close()
	srv := bustest.NewServer(t)
	budgets := budgetFile(t, budget.File{Limits: map[string]budget.Limits{
		"openai:tiny": {Requests: 1, WindowMS: 2000},
		"openai:free": {Requests: 10_000, WindowMS: 1000},
	}})
	procs := budgetFleet(t, srv.ClientURL(), "two", 2, api, budgets, "--log-level", "debug")
	clTiny := budgetClient(t, srv.ClientURL(), "two", 1, map[string]any{"provider": "openai", "model": "tiny"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := clTiny.Do(ctx, "branch.create", "", map[string]any{"branch_id": "free", "chat_model": map[string]any{"provider": "openai", "model": "free"}}); err != nil {
		t.Fatal(err)
	}
	const tiny, free = 6, 200
	var tinyDone atomic.Int64
	var wg sync.WaitGroup
	for i := range tiny {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := clTiny.Do(ctx, "chat", "b0", map[string]any{"instruction": fmt.Sprintf("tiny %d", i)}); err != nil {
				t.Error(err)
			}
			tinyDone.Add(1)
		}()
	}
	// The tiny model's budget is taken (one call in its window) before the
	// other model's requests start.
	waitFor(t, 10*time.Second, "the tiny model's first call", func() bool { return len(api.Admitted()) >= 1 })
	start := time.Now()
	instr := make([]string, free)
	for i := range instr {
		instr[i] = fmt.Sprintf("free %d", i)
	}
	var failed atomic.Int64
	var fwg sync.WaitGroup
	for i := range free {
		fwg.Add(1)
		go func() {
			defer fwg.Done()
			r, err := clTiny.Do(ctx, "chat", "free", map[string]any{"instruction": instr[i]})
			if err == nil {
				_, err = r.Result()
			}
			if err != nil {
				failed.Add(1)
			}
		}()
	}
	fwg.Wait()
	took := time.Since(start)
	doneTiny := tinyDone.Load()
	t.Logf("%d requests of the free model answered in %s while %d of %d of the tiny model's were answered", free, took.Round(time.Millisecond), doneTiny, tiny)
	if failed.Load() > 0 {
		t.Fatalf("%d of the free model's requests failed", failed.Load())
	}
	// At one call per two seconds the tiny model's six need ten seconds:
	// the free model finishing first shows it did not queue behind them.
	if doneTiny >= tiny {
		t.Errorf("all %d tiny requests were answered before the free model's %d", tiny, free)
	}
	for _, p := range procs {
		for _, line := range strings.Split(p.logs.String(), "\n") {
			if strings.Contains(line, `"model":"openai:free"`) && strings.Contains(line, "model call metered") &&
				!strings.Contains(line, `"budget_wait":0,`) {
				t.Errorf("a call of the free model waited for budget: %s", line)
			}
		}
	}
	wg.Wait()
	// The request log line says how long a request waited for budget,
	// as the metered call's line does; a request that did not wait (the
	// free model's) says nothing of it.
	calls, lines := map[string]float64{}, map[string]map[string]any{}
	for _, p := range procs {
		for _, line := range strings.Split(p.logs.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			switch rec["message"] {
			case "model call metered":
				id, _ := rec["request_id"].(string)
				w, _ := rec["budget_wait"].(float64)
				calls[id] += w
			case "request answered":
				if id, _ := rec["request"].(string); rec["verb"] == "chat" {
					lines[id] = rec
				}
			}
		}
	}
	waited := 0
	for id, rec := range lines {
		got, logged := rec["budget_wait_ms"].(float64)
		want := calls[id]
		switch {
		case want >= 1 && (!logged || math.Abs(got-want) > 1):
			t.Errorf("request %s (branch %v) waited %.3fms for budget; its log line says %v", id, rec["branch"], want, rec["budget_wait_ms"])
		case want < 1 && logged && got >= 1:
			t.Errorf("request %s (branch %v) did not wait; its log line says it waited %.3fms", id, rec["branch"], got)
		case logged:
			waited++
		}
	}
	if waited == 0 {
		t.Errorf("no request line of the tiny model says it waited for budget")
	}
}

// Calls waiting for a model's budget give up their worker's request
// slots: a worker of two slots whose tiny model's five requests (on five
// branches) wait for budget still answers another model's requests while
// they wait. Holding their slots, they would leave none: the other
// model's requests would be answered only once at most one tiny request
// was left waiting.
func TestBudget_calls_waiting_for_budget_give_up_their_slots(t *testing.T) {
	api := openaitest.New(openaitest.Config{})
	defer api.Close()
	srv := bustest.NewServer(t)
	budgets := budgetFile(t, budget.File{Limits: map[string]budget.Limits{
		"openai:tiny": {Requests: 1, WindowMS: 5000},
	}})
	budgetFleet(t, srv.ClientURL(), "slots", 1, api, budgets, "--concurrency", "2")
	const tiny, free = 6, 40
	cl := budgetClient(t, srv.ClientURL(), "slots", tiny, map[string]any{"provider": "openai", "model": "tiny"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 4 {
		if _, err := cl.Do(ctx, "branch.create", "", map[string]any{"branch_id": fmt.Sprintf("f%d", i), "chat_model": map[string]any{"provider": "openai", "model": "free"}}); err != nil {
			t.Fatal(err)
		}
	}
	var tinyDone atomic.Int64
	var wg sync.WaitGroup
	tinyCtx, tinyCancel := context.WithCancel(ctx)
	defer tinyCancel()
	for i := range tiny {
		wg.Go(func() {
			r, err := cl.Do(tinyCtx, "chat", fmt.Sprintf("b%d", i), map[string]any{"instruction": fmt.Sprintf("tiny %d", i)})
			if tinyCtx.Err() != nil {
				return // the test is over
			}
			if err != nil || r.Err() != nil {
				t.Errorf("tiny %d: %v %v", i, err, r.Err())
			}
			tinyDone.Add(1)
		})
	}
	waitFor(t, 10*time.Second, "the tiny model's first call", func() bool { return len(api.Admitted()) >= 1 })
	var fwg sync.WaitGroup
	var failed atomic.Int64
	for i := range free {
		fwg.Go(func() {
			r, err := cl.Do(ctx, "chat", fmt.Sprintf("f%d", i%4), map[string]any{"instruction": fmt.Sprintf("free %d", i)})
			if err != nil || r.Err() != nil {
				failed.Add(1)
			}
		})
	}
	fwg.Wait()
	done := tinyDone.Load()
	t.Logf("%d requests of the free model answered while %d of the tiny model's %d were", free, done, tiny)
	if failed.Load() > 0 {
		t.Fatalf("%d of the free model's requests failed", failed.Load())
	}
	if done > tiny-2 {
		t.Errorf("%d of %d tiny requests were answered before the free model's %d: the waiting ones held the slots", done, tiny, free)
	}
	tinyCancel() // the rest would take a window each
	wg.Wait()
}

// A worker SIGKILLed while its calls are in flight: its share of the
// budget (two of four calls in flight) comes back to the survivor within
// seconds, the survivor then runs all four at once, and every request is
// answered (the killed worker's by redelivery).
func TestBudget_a_killed_workers_share_comes_back(t *testing.T) {
	const model = "slow"
	api := openaitest.New(openaitest.Config{Latency: 700 * time.Millisecond})
	defer api.Close()
	srv := bustest.NewServer(t)
	budgets := budgetFile(t, budget.File{Limits: map[string]budget.Limits{"openai:" + model: {InFlight: 4}}})
	// Eight branches and six requests at most in each worker: neither
	// can take (and lease) every branch, so each has calls of at least two
	// branches to run within its share of two.
	procs := budgetFleet(t, srv.ClientURL(), "kil", 2, api, budgets, "--ack-wait", "2s", "--concurrency", "6")
	cl := budgetClient(t, srv.ClientURL(), "kil", 8, map[string]any{"provider": "openai", "model": model})
	instr := make([]string, 40)
	for i := range instr {
		instr[i] = fmt.Sprintf("slow %d", i)
	}
	done := make(chan struct{})
	var failed int
	var first error
	go func() {
		defer close(done)
		failed, first = chatAll(t, cl, 8, 40, instr)
	}()
	waitFor(t, 20*time.Second, "both workers' calls in flight", func() bool { return api.InFlight(model) == 4 })
	if got := api.MaxInFlight(model); got > 4 {
		t.Fatalf("%d calls at once with a budget of 4", got)
	}
	if err := procs[0].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-procs[0].exited
	killed := time.Now()
	// The survivor holds two calls; the whole budget is four. Its share
	// grows when the killed worker's membership expires.
	var whole time.Duration
	waitFor(t, 15*time.Second, "the survivor to run all four calls at once", func() bool {
		if api.InFlight(model) == 4 && strings.Contains(procs[1].logs.String(), `"members":1`) {
			whole = time.Since(killed)
			return true
		}
		return false
	})
	t.Logf("budget whole again %s after the SIGKILL (member TTL %s)", whole.Round(10*time.Millisecond), "3s")
	<-done
	if failed > 0 {
		t.Fatalf("%d requests failed; first: %v", failed, first)
	}
	if got := api.MaxInFlight(model); got > 4 {
		t.Fatalf("%d calls at once with a budget of 4", got)
	}
}

// A token budget with prompts of very different sizes (10 bytes to 3 KB):
// the tokens the server counted stay under the budget in every one-second
// window of the run, and it answers no 429.
func TestBudget_tokens_per_window_stay_under_the_budget(t *testing.T) {
	const (
		model  = "tok"
		tokens = 6000 // per second, the server's limit and the budget
	)
	api := openaitest.New(openaitest.Config{Limits: openaitest.Limits{Tokens: tokens}})
	defer api.Close()
	srv := bustest.NewServer(t)
	budgets := budgetFile(t, budget.File{Limits: map[string]budget.Limits{"openai:" + model: {Tokens: tokens, WindowMS: 1000}}})
	budgetFleet(t, srv.ClientURL(), "tok", 2, api, budgets)
	cl := budgetClient(t, srv.ClientURL(), "tok", 4, map[string]any{"provider": "openai", "model": model, "max_tokens": 16})
	sizes := []int{10, 3000, 200, 1500, 40, 2500, 800, 10, 3000, 100}
	instr := make([]string, 120)
	for i := range instr {
		instr[i] = strings.Repeat("x", sizes[i%len(sizes)])
	}
	failed, first := chatAll(t, cl, 4, 32, instr)
	if failed > 0 {
		t.Fatalf("%d requests failed; first: %v", failed, first)
	}
	adm := api.Admitted()
	sum := 0
	for _, a := range adm {
		sum += a.PromptTokens + a.CompletionTokens
	}
	_, worst := openaitest.Worst(adm, model, time.Second)
	span := adm[len(adm)-1].At.Sub(adm[0].At).Seconds()
	t.Logf("%d requests, %d tokens in %.1fs (%.0f tokens/s); worst one-second window %d tokens of a budget of %d; %d 429s",
		len(adm), sum, span, float64(sum)/span, worst, tokens, api.Refused())
	if worst > tokens {
		t.Errorf("a one-second window held %d tokens, budget %d", worst, tokens)
	}
	if api.Refused() > 0 {
		t.Errorf("%d 429s under a token budget equal to the server's limit", api.Refused())
	}
}

// The cost of a request (its result's usage), of a branch (the sum of
// its assistant messages' usage) and of a batch (its record's usage)
// agree with the price table and the usage the server reported.
func TestBudget_cost_of_a_request_a_branch_and_a_batch(t *testing.T) {
	const model = "priced"
	price := budget.Price{Input: 2.5, Output: 10}
	api := openaitest.New(openaitest.Config{OutputTokens: 5})
	defer api.Close()
	srv := bustest.NewServer(t)
	budgets := budgetFile(t, budget.File{Prices: budget.Prices{"openai:" + model: price}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := ln.Addr().String()
	ln.Close()
	budgetFleet(t, srv.ClientURL(), "cst", 1, api, budgets, "--metrics-addr", metricsAddr)
	cl := budgetClient(t, srv.ClientURL(), "cst", 1, map[string]any{"provider": "openai", "model": model})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var requestsCost float64
	for i := range 3 {
		r, err := cl.Do(ctx, "communicate", "b0", map[string]any{"instruction": strings.Repeat("y", 100*(i+1))})
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Result()
		if err != nil {
			t.Fatal(err)
		}
		want := price.Cost(ops.Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens})
		if res.Usage.OutputTokens != 5 || math.Abs(res.Usage.CostUSD-want) > 1e-12 || want == 0 {
			t.Fatalf("request %d: usage %+v, want cost %v", i, res.Usage, want)
		}
		requestsCost += res.Usage.CostUSD
	}
	var serverCost float64
	for _, a := range api.Admitted() {
		serverCost += price.Cost(ops.Usage{InputTokens: a.PromptTokens, OutputTokens: a.CompletionTokens})
	}
	r, err := cl.Do(ctx, "branch.get", "b0", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Result()
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Messages []struct {
			Metadata map[string]any `json:"metadata"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(res.Value, &b); err != nil {
		t.Fatal(err)
	}
	var branchCost float64
	for _, m := range b.Messages {
		if u, ok := m.Metadata["usage"].(map[string]any); ok {
			c, _ := u["cost_usd"].(float64)
			branchCost += c
		}
	}
	t.Logf("3 requests cost $%.8f; the branch's messages $%.8f; the server's usage by the price table $%.8f", requestsCost, branchCost, serverCost)
	if math.Abs(requestsCost-serverCost) > 1e-12 || math.Abs(branchCost-serverCost) > 1e-12 {
		t.Errorf("costs disagree: requests %v, branch %v, server usage %v", requestsCost, branchCost, serverCost)
	}

	// A batch of 30 items of different sizes: its record's usage is the
	// server's usage of its calls by the price table.
	before := len(api.Admitted())
	var in strings.Builder
	for i := range 30 {
		fmt.Fprintf(&in, `{"custom_id": "c%d", "method": "POST", "url": "/v1/chat/completions", "body": {"model": %q, "messages": [{"role": "user", "content": %q}]}}`+"\n", i, model, strings.Repeat("z", 10+37*i))
	}
	if _, err := cl.SubmitBatch(ctx, client.BatchSpec{ID: "priced", Concurrency: 8}, strings.NewReader(in.String())); err != nil {
		t.Fatal(err)
	}
	var end *wire.Batch
	if err := cl.WatchBatch(ctx, "priced", func(b *wire.Batch) error { end = b; return nil }); err != nil || end.Counts.Succeeded != 30 {
		t.Fatalf("batch: %v, %+v", err, end)
	}
	var batchServer float64
	admitted := api.Admitted()
	for _, a := range admitted[before:] {
		batchServer += price.Cost(ops.Usage{InputTokens: a.PromptTokens, OutputTokens: a.CompletionTokens})
	}
	t.Logf("a batch of 30 items cost $%.8f; the server's usage of its %d calls by the price table $%.8f", end.Usage.CostUSD, len(admitted)-before, batchServer)
	if len(admitted)-before != 30 || batchServer == 0 || math.Abs(end.Usage.CostUSD-batchServer) > 1e-9*batchServer {
		t.Errorf("batch cost %v (%d calls), server usage %v", end.Usage.CostUSD, len(admitted)-before, batchServer)
	}

	// The metrics say the same: the model's cost, and one member.
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var metricCost float64
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(line, `lionbus_model_cost_usd_total{model="openai:priced"} `); ok {
			fmt.Sscan(v, &metricCost)
		}
	}
	if !strings.Contains(string(body), "lionbus_budget_members 1\n") || math.Abs(metricCost-(serverCost+batchServer)) > 1e-9 {
		t.Errorf("metrics: cost %v (want %v) or no budget_members 1 in\n%s", metricCost, serverCost+batchServer, body)
	}
}
