package main

// Model budgets end to end: real worker processes joined to one NATS
// server, the real openai provider, and a local OpenAI-compatible server
// that enforces its own limits with 429s (openaitest). Windows are one
// second instead of a minute, so that each test takes seconds.

import (
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/lionbus/lionbus/pkg/ops/budget"
	"github.com/lionbus/lionbus/pkg/ops/provider/openai/openaitest"
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
			"--budgets", budgets, "--log-level", "info"}, extra...)
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

// Four workers, 2,000 requests, a server that refuses above 50 requests
// a second and above 16 at once: the fleet's budget (49 a second, 16 in
// flight, split four ways) keeps the 429s under 1 %, every request is
// answered, and the rate achieved is at least 90 % of the server's limit.
func TestBudget_four_workers_keep_the_providers_limit(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 requests through four worker processes")
	}
	const (
		limit, concurrent = 50, 16
		requests          = 2000
		model             = "gpt-limited"
	)
	api := openaitest.New(openaitest.Config{Limits: openaitest.Limits{Requests: limit, Concurrent: concurrent}, Latency: 20 * time.Millisecond})
	defer api.Close()
	srv := bustest.NewServer(t)
	budgets := budgetFile(t, budget.File{Limits: map[string]budget.Limits{
		"openai:" + model: {Requests: limit * 98 / 100, InFlight: concurrent, WindowMS: 1000},
	}})
	budgetFleet(t, srv.ClientURL(), "bud", 4, api, budgets, "--concurrency", "8")
	cl := budgetClient(t, srv.ClientURL(), "bud", 8, map[string]any{"provider": "openai", "model": model})
	instr := make([]string, requests)
	for i := range instr {
		instr[i] = fmt.Sprintf("request %d", i)
	}
	failed, first := chatAll(t, cl, 8, 256, instr)
	if failed > 0 {
		t.Fatalf("%d of %d requests failed; first: %v", failed, requests, first)
	}
	adm := api.Admitted()
	refused := api.Refused()
	if len(adm) != requests {
		t.Fatalf("the server answered %d requests 200, want %d", len(adm), requests)
	}
	span := adm[len(adm)-1].At.Sub(adm[0].At).Seconds()
	rate := float64(len(adm)-1) / span
	worst, _ := openaitest.Worst(adm, model, time.Second)
	t.Logf("2,000 requests, 4 workers: %d 429s (%.2f %%), %.1f requests/s achieved = %.1f %% of the server's %d/s, worst 1s window %d requests, at most %d at once",
		refused, 100*float64(refused)/float64(requests+refused), rate, 100*rate/limit, limit, worst, api.MaxInFlight(model))
	perSec := map[int]int{}
	for _, a := range adm {
		perSec[int(a.At.Sub(adm[0].At).Seconds())]++
	}
	t.Logf("per second: %v", perSec)
	if float64(refused) >= 0.01*float64(requests) {
		t.Errorf("%d 429s, want under 1 %% of %d", refused, requests)
	}
	if rate < 0.9*limit {
		t.Errorf("achieved %.1f requests/s, want at least 90 %% of %d", rate, limit)
	}
}
