package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
)

// blockingWorkerEnv, when set, makes the test binary run as a worker
// process instead of the tests (see TestMain and blockingWorkerMain): the
// worker configured by these JSON-encoded arguments, as the worker command
// would be, with one more model provider, "block" (see blockingModel).
const blockingWorkerEnv = "WORKER_TEST_BLOCKING_ARGS"

// Prefixes of the request ids the blocking model tells apart: a "quick-"
// request is answered at once, a "slow-" one never.
const (
	quickPrefix = "quick-"
	slowPrefix  = "slow-"
)

// blockingModel answers a call for a quick- request like scripted:echo and
// blocks a call for any other request until its context ends. It writes
// "call <request id>" to out when a call starts, so that the parent process
// knows which requests are in flight.
type blockingModel struct {
	mu  sync.Mutex
	out io.Writer
}

func (m *blockingModel) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	m.mu.Lock()
	fmt.Fprintf(m.out, "call %s\n", call.RequestID)
	m.mu.Unlock()
	if strings.HasPrefix(call.RequestID, quickPrefix) {
		return echoAs(ctx, call)
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// echoAs answers call like scripted:echo, whatever provider it was made to.
func echoAs(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	call.Model = history.ModelRef{Provider: scripted.Name, Model: "echo"}
	return scripted.New().Complete(ctx, call)
}

// blockingWorkerMain runs a worker configured by the JSON-encoded worker
// arguments raw, with blockingModel registered as "block" next to the
// scripted provider, and serves until the process is killed. It prints
// "serving" once the worker runs. It returns the exit code for a worker
// that could not start or stopped by itself.
func blockingWorkerMain(raw string) int {
	_, _, bc, code := childWorkerConfig("blocking worker", raw)
	if code != exitOK {
		return code
	}
	bc.Providers = ops.NewProviders(map[string]ops.Provider{"block": &blockingModel{out: os.Stdout}})
	if err := scripted.Register(bc.Providers); err != nil {
		fmt.Fprintf(os.Stderr, "blocking worker: %v\n", err)
		return exitFailure
	}
	svc, err := bus.Start(context.Background(), bc)
	if err != nil {
		fmt.Fprintf(os.Stderr, "blocking worker: %v\n", err)
		return exitFailure
	}
	fmt.Println("serving")
	<-svc.Worker().Stopped()
	fmt.Fprintln(os.Stderr, "blocking worker: worker stopped by itself")
	return exitFailure
}

// childWorkerConfig reads the JSON-encoded worker arguments raw of a test
// binary running as a worker process (what is named name in its errors):
// the worker's configuration, logger and bus configuration, as the worker
// command makes them. A code other than exitOK says it could not.
func childWorkerConfig(name, raw string) (config, zerolog.Logger, bus.Config, int) {
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		fmt.Fprintf(os.Stderr, "%s: arguments: %v\n", name, err)
		return config{}, zerolog.Logger{}, bus.Config{}, exitUsage
	}
	cfg, err := parseConfig(args, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return config{}, zerolog.Logger{}, bus.Config{}, exitUsage
	}
	log, err := newLogger(os.Stderr, cfg.LogFormat, cfg.LogLevel)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return config{}, zerolog.Logger{}, bus.Config{}, exitUsage
	}
	bc, err := busConfig(cfg, log)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return config{}, zerolog.Logger{}, bus.Config{}, exitUsage
	}
	return cfg, log, bc, exitOK
}

// workerProcess is this test binary running as a worker process (see
// blockingWorkerMain).
type workerProcess struct {
	cmd    *exec.Cmd
	child  *childCalls         // what it prints on stdout
	stderr *bustest.SyncBuffer // its logs
	exited chan struct{}       // closed when it has exited
}

// startWorkerProcess starts a worker process named "doomed" with
// concurrency slots, joining b's server, and waits until it serves. It is
// killed when the test ends.
func startWorkerProcess(t *testing.T, b *bustest.Bus, concurrency int) *workerProcess {
	t.Helper()
	args, err := json.Marshal([]string{"--nats", b.Srv.ClientURL(), "--concurrency", fmt.Sprint(concurrency),
		"--name", "doomed", "--log-format", "json", "--log-level", "warn"})
	if err != nil {
		t.Fatal(err)
	}
	p := &workerProcess{
		cmd:    exec.Command(os.Args[0], "-test.run=^$"),
		child:  &childCalls{started: map[string]int{}},
		stderr: &bustest.SyncBuffer{},
		exited: make(chan struct{}),
	}
	p.cmd.Env = append(os.Environ(), blockingWorkerEnv+"="+string(args))
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.exited)
		p.child.read(stdout)
		_ = p.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	waitFor(t, 60*time.Second, "the worker process to serve", func() bool {
		return p.child.isServing() || strings.Contains(p.stderr.String(), "blocking worker:")
	})
	if !p.child.isServing() {
		t.Fatalf("worker process did not start:\n%s", p.stderr)
	}
	return p
}

// modelCalls is a model provider answering like scripted:echo that counts
// its calls by request id.
type modelCalls struct {
	mu   sync.Mutex
	byID map[string]int
}

func (m *modelCalls) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	m.mu.Lock()
	m.byID[call.RequestID]++
	m.mu.Unlock()
	return echoAs(ctx, call)
}

// calls returns a copy of the call counts by request id.
func (m *modelCalls) calls() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.byID))
	for id, n := range m.byID {
		out[id] = n
	}
	return out
}

// childCalls collects the "call <id>" lines a blocking worker process
// writes to its stdout.
type childCalls struct {
	mu      sync.Mutex
	serving bool
	started map[string]int
}

// read consumes r line by line until it ends.
func (c *childCalls) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		c.mu.Lock()
		if line == "serving" {
			c.serving = true
		} else if id, ok := strings.CutPrefix(line, "call "); ok {
			c.started[id]++
		}
		c.mu.Unlock()
	}
}

// isServing reports whether the process said it serves.
func (c *childCalls) isServing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.serving
}

// slow returns how many slow requests the process called the model for.
func (c *childCalls) slow() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for id := range c.started {
		if strings.HasPrefix(id, slowPrefix) {
			n++
		}
	}
	return n
}

// A worker process killed with SIGKILL while it runs requests loses
// nothing: a second worker gets every request it left unacknowledged
// once the ack wait passes, calls the model exactly for the requests that
// did not commit before the kill, and every request ends with one answer
// and one commit.
func TestKill_worker_process_killed_mid_request(t *testing.T) {
	const (
		ackWait     = 2 * time.Second
		concurrency = 4
		branches    = 4
		requests    = 20
	)
	b := bustest.New(t, provision.Config{AckWait: ackWait, LeaseTTL: ackWait})
	clientsBefore := b.Srv.NATSServer().NumClients()

	// The worker process: this test binary, run as blockingWorkerMain.
	p := startWorkerProcess(t, b, concurrency)
	cmd, child, stderr, exited := p.cmd, p.child, p.stderr, p.exited

	for i := range branches {
		b.CreateBranch(t, fmt.Sprintf("kill-%d", i))
	}
	watch := b.WatchAnswers(t)
	ids := make([]string, requests)
	branchOf := map[string]string{}
	for i := range ids {
		prefix := quickPrefix
		if i%2 == 1 {
			prefix = slowPrefix
		}
		ids[i] = fmt.Sprintf("%s%d", prefix, i)
		// A quick and a slow request per branch in turn, so that the
		// slow ones (one per branch at a time: a branch runs its
		// requests in order) can fill every slot.
		branchOf[ids[i]] = fmt.Sprintf("kill-%d", (i/2)%branches)
		if _, err := b.Client.Submit(bustest.Ctx(t), "communicate", branchOf[ids[i]], map[string]any{
			"instruction": "say " + ids[i], "chat_model": "block:x",
		}, client.WithID(ids[i])); err != nil {
			t.Fatal(err)
		}
	}
	// Every slot of the worker process holds a slow request, blocked in its
	// model call: the process is surely mid-request.
	waitFor(t, 30*time.Second, "the worker process to block on slow requests", func() bool {
		return child.slow() == concurrency || strings.Contains(stderr.String(), "blocking worker:")
	})
	if child.slow() != concurrency {
		t.Fatalf("worker process failed:\n%s", stderr)
	}
	info, err := b.Res.Workers.Info(bustest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	answeredBefore, _ := watch.Total()

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the killed worker process did not exit")
	}
	// Once the server dropped the process's connection, nothing more it
	// sent can land: what is committed now is what it committed.
	waitFor(t, 30*time.Second, "the server to drop the killed process", func() bool {
		return b.Srv.NATSServer().NumClients() <= clientsBefore
	})
	committedAtKill := map[string]bool{}
	for i := range branches {
		for id, n := range bustest.Commits(b.History(t, fmt.Sprintf("kill-%d", i))) {
			if n > 0 {
				committedAtKill[id] = true
			}
		}
	}
	t.Logf("at the kill: %d requests in model calls (one per slot), %d delivered and unacknowledged, %d answered, %d committed",
		child.slow(), info.NumAckPending, answeredBefore, len(committedAtKill))
	for id := range committedAtKill {
		if strings.HasPrefix(id, slowPrefix) {
			t.Errorf("slow request %s committed, though its model call never returned", id)
		}
	}

	// The second worker, in this process, answers every model.
	model := &modelCalls{byID: map[string]int{}}
	b.StartWorker(t, nil, nil, map[string]ops.Provider{"block": model}, worker.Config{})
	for _, id := range ids {
		r := b.Await(t, id)
		var v string
		bustest.MustResult(t, r, &v)
		if v != "say "+id {
			t.Errorf("%s answered %q, want the echo of its instruction", id, v)
		}
	}
	recovery := time.Since(killed)
	bustest.WaitFor(t, 30*time.Second, "every request acknowledged", func() bool {
		info, err := b.Res.Workers.Info(bustest.Ctx(t))
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})

	// One answer per request: the one stored is the one every client saw.
	for _, id := range ids {
		stored, err := b.Client.Result(bustest.Ctx(t), id)
		if err != nil {
			t.Fatalf("Result(%s): %v", id, err)
		}
		msgs := watch.Msgs(id)
		if len(msgs) == 0 {
			t.Errorf("%s: no answer seen", id)
		}
		for _, m := range msgs {
			ev, err := b.Codec.Decode(m)
			if err != nil {
				t.Fatalf("%s: answer is not a CloudEvent: %v", id, err)
			}
			if ev.ID() != stored.Event.ID() {
				t.Errorf("%s answered twice: event %s, and %s stored", id, ev.ID(), stored.Event.ID())
			}
		}
	}
	// One commit per request, on its branch.
	for i := range branches {
		branch := fmt.Sprintf("kill-%d", i)
		commits := bustest.Commits(b.History(t, branch))
		for _, id := range ids {
			want := 0
			if branchOf[id] == branch {
				want = 1
			}
			if commits[id] != want {
				t.Errorf("branch %s holds %d commits of %s, want %d", branch, commits[id], id, want)
			}
		}
	}
	// The second worker called the model exactly for the requests that had
	// not committed, once each.
	calls := model.calls()
	recalled := 0
	for _, id := range ids {
		want := 1
		if committedAtKill[id] {
			want = 0
		}
		if calls[id] != want {
			t.Errorf("second worker called the model %d times for %s, want %d (committed at the kill: %v)", calls[id], id, want, committedAtKill[id])
		}
		recalled += calls[id]
	}
	t.Logf("recovered in %s (ack wait %s): the second worker made %d model calls, for %d requests not committed at the kill",
		recovery.Round(time.Millisecond), ackWait, recalled, requests-len(committedAtKill))
}
