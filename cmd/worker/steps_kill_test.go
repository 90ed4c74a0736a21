package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/tools"
)

// steppedWorkerEnv, when set, makes the test binary run as a worker process
// whose model provider "stepped" asks its parent before every call (see
// steppedWorkerMain), so that the parent can kill it at a chosen step.
const steppedWorkerEnv = "WORKER_TEST_STEPPED_ARGS"

// steppedAnswers are the model's answers by stage: for a react, two
// analysis rounds that each call add, an analysis that needs nothing
// more, then the answer; for an LNDL operate, two rounds that each call
// add and a third that answers from both.
var steppedAnswers = []struct{ branch, stage, answer string }{
	{"", "/react/0/", `{"analysis":"First 1 + 2.","extension_needed":true,"action_required":true,"action_requests":[{"function":"add","arguments":{"x":1,"y":2}}]}`},
	{"", "/react/1/", `{"analysis":"Then 3 + 4.","extension_needed":true,"action_required":true,"action_requests":[{"function":"add","arguments":{"x":3,"y":4}}]}`},
	{"", "/react/2/", `{"analysis":"3 and 7: enough.","extension_needed":false}`},
	{"", "/react/answer", `three and seven`},
	{"", "/middle/round1", "First the one sum.\n```lndl\n<lact s>add(x=1, y=2)</lact>\n```\n"},
	{"", "/middle/round2", "Then the other.\n```lndl\n<lact t>add(x=3, y=4)</lact>\n```\n"},
	{"", "/middle/round3", "Both are known.\n```lndl\nOUT{first: [s], second: [t]}\n```\n"},
	// On branch "raw": one round that calls a tool remembering nothing
	// twice, in turn; then the answer.
	{"raw", "/react/0/", `{"analysis":"Both sums.","extension_needed":false,"action_required":true,"action_requests":[` +
		`{"function":"add2","arguments":{"x":1,"y":2}},{"function":"add2","arguments":{"x":3,"y":4}}]}`},
	{"raw", "/react/answer", `three and seven, twice`},
}

// steppedModel answers each model call of a react from steppedAnswers,
// keyed by the call's stage ("<id>/react/<round>/...", "<id>/react/answer").
// Before a call it writes "step <stage>" on its stdout and waits for a
// line on its stdin; after it, "done <stage>".
type steppedModel struct {
	mu  sync.Mutex
	in  *bufio.Reader
	out io.Writer
}

func (m *steppedModel) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	answer := ""
	for _, a := range steppedAnswers {
		if (a.branch == "" || a.branch == call.BranchID) && strings.Contains(call.RequestID, a.stage) {
			answer = a.answer
		}
	}
	stage := call.RequestID
	switch {
	case answer != "":
	case strings.HasPrefix(call.Instruction, "reformat"): // a communicate's reformat round
		answer, stage = `{"n": 3}`, stage+" reformat"
	case call.RequestID == "q": // a communicate's own call: text, not the JSON asked for
		answer = "The answer is three."
	default:
		return nil, fmt.Errorf("stepped model: no answer for stage %s", call.RequestID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintf(m.out, "step %s\n", stage)
	if _, err := m.in.ReadString('\n'); err != nil {
		return nil, fmt.Errorf("stepped model: parent gone: %w", err)
	}
	fmt.Fprintf(m.out, "done %s\n", stage)
	return &ops.Completion{Text: answer}, nil
}

// steppedWorkerMain runs a worker configured by the JSON-encoded arguments
// raw with the stepped model, until the process is killed.
func steppedWorkerMain(raw string) int {
	cfg, log, bc, code := childWorkerConfig("stepped worker", raw)
	if code != exitOK {
		return code
	}
	bc.Providers = ops.NewProviders(map[string]ops.Provider{"stepped": &steppedModel{in: bufio.NewReader(os.Stdin), out: os.Stdout}})
	// The stepped model's calls are journaled as the worker command
	// journals its paid providers'.
	wj := &workerJournal{log: log}
	if err := wj.wrap(bc.Providers, "stepped"); err != nil {
		fmt.Fprintf(os.Stderr, "stepped worker: %v\n", err)
		return exitFailure
	}
	wt := newWorkerTools(cfg) // the registry's tools, over NATS, as the worker command's
	bc.Tools = wj.tools(wt)
	return serveJournaledChild("stepped worker", bc, wj, wt, log)
}

// steps is what the parent sees of an operation's steps (a model call's
// stage, or "tool add x+y"): each in the order it started, and how many
// times each completed.
type steps struct {
	mu      sync.Mutex
	started []string
	done    map[string]int
	kill    int // the step (from 1) before which the worker is killed; 0: none
	killed  bool
	victim  func() // kills the first worker
}

// begin records a step about to run and, when it is the chosen one, kills
// the worker instead; it reports whether the step may run.
func (s *steps) begin(step string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = append(s.started, step)
	if !s.killed && len(s.started) == s.kill {
		s.killed = true
		s.victim()
		return false
	}
	return true
}

func (s *steps) finish(step string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done[step]++
}

// startSteppedWorker starts a stepped worker process (see
// steppedWorkerMain) joining b's server, its steps told to s.
func startSteppedWorker(t *testing.T, b *bustest.Bus, s *steps) *childWorker {
	t.Helper()
	args := []string{"--nats", b.Srv.ClientURL(), "--name", "stepped", "--log-format", "json", "--log-level", "warn"}
	return startChildWorker(t, "stepped worker", steppedWorkerEnv, args, func(line string, stdin io.Writer) {
		switch {
		case strings.HasPrefix(line, "step "):
			if s.begin(strings.TrimPrefix(line, "step ")) {
				_, _ = io.WriteString(stdin, "go\n")
			}
		case strings.HasPrefix(line, "done "):
			s.finish(strings.TrimPrefix(line, "done "))
		}
	})
}

// steppedOp is the operation a stepped run sends, on branch "r" with the
// tool add (a Go SDK service, which remembers its results), or on branch
// "raw" with the tool add2 (a service speaking the protocol on core NATS,
// remembering nothing).
type steppedOp struct {
	verb string
	data map[string]any
	raw  bool
}

// runStepped runs op once on a fresh server with a stepped worker
// process, SIGKILLed before step kill (0: never) and then replaced by a
// second one, and returns the answer (its value as JSON) and the steps
// seen.
func runStepped(t *testing.T, op steppedOp, kill int) (string, *steps) {
	t.Helper()
	const ackWait = 2 * time.Second
	b := bustest.New(t, provision.Config{AckWait: ackWait, LeaseTTL: ackWait})
	s := &steps{done: map[string]int{}, kill: kill}
	svc, err := tools.Serve(bustest.Ctx(t), b.NC, tools.ServiceConfig{Name: "adder", Version: "1.0.0",
		Tools: []tools.Tool{{Name: "add", Description: "Adds x and y.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]}`),
			Handler: func(ctx context.Context, args map[string]any) (any, error) {
				x, _ := args["x"].(float64)
				y, _ := args["y"].(float64)
				step := fmt.Sprintf("tool add %v+%v", x, y)
				// When the worker is killed as this call starts, the tool
				// still runs to its end, as a remote service would: its
				// answer reaches no one, and the redelivery's call of the
				// same key gets it from the results the SDK remembers.
				s.begin(step)
				s.finish(step)
				return x + y, nil
			}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	if op.raw {
		serveRawAdd(t, b, s)
	}
	first := startSteppedWorker(t, b, s)
	s.victim = func() { _ = first.cmd.Process.Signal(syscall.SIGKILL) }
	var wg sync.WaitGroup
	wg.Go(func() {
		<-first.exited
		s.mu.Lock()
		killed := s.killed
		s.mu.Unlock()
		if killed {
			startSteppedWorker(t, b, s)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	branch, tool := "r", "add"
	if op.raw {
		branch, tool = "raw", "add2"
	}
	if _, err := b.Client.Do(ctx, "branch.create", "", map[string]any{"branch_id": branch, "tools": []string{tool}, "chat_model": "stepped:m"}); err != nil {
		t.Fatal(err)
	}
	reply, err := b.Client.Do(ctx, op.verb, branch, op.data, client.WithID("q"))
	if err != nil {
		t.Fatalf("%s: %v", op.verb, err)
	}
	res, err := reply.Result()
	if err != nil {
		t.Fatalf("%s: %v\nfirst worker:\n%s", op.verb, err, first.stderr)
	}
	answer := string(res.Value)
	if kill == 0 {
		_ = first.cmd.Process.Kill() // lets the goroutine above end
	}
	wg.Wait()
	return answer, s
}

// killAtEveryStep runs op once without a kill, then once per step with
// the worker process SIGKILLed just before that step; a second worker
// process finishes it after the ack wait. Whatever the step, no model
// call or tool call that completed is made again, and the answer is that
// of the run without a kill.
func killAtEveryStep(t *testing.T, op steppedOp, wantAnswer string, wantSteps int) {
	want, plain := runStepped(t, op, 0)
	if want != wantAnswer || len(plain.started) != wantSteps {
		t.Fatalf("uninterrupted: answer %s after steps %v; want %s after %d steps", want, plain.started, wantAnswer, wantSteps)
	}
	for kill := 1; kill <= len(plain.started); kill++ {
		t.Run(fmt.Sprintf("before step %d", kill), func(t *testing.T) {
			got, s := runStepped(t, op, kill)
			s.mu.Lock()
			defer s.mu.Unlock()
			if got != want {
				t.Errorf("answer %s, want %s", got, want)
			}
			for step, n := range s.done {
				// A tool remembering nothing, that ran while the worker
				// died, runs again: no one recorded its outcome. Every
				// call whose outcome reached the worker runs once.
				if op.raw && n == 2 && step == plain.started[kill-1] && strings.HasPrefix(step, "tool ") {
					continue
				}
				if n != 1 {
					t.Errorf("step %s completed %d times; steps started: %v", step, n, s.started)
				}
			}
			if !s.killed || len(s.done) != len(plain.done) {
				t.Errorf("killed %v; completed %v, want %v; started %v", s.killed, s.done, plain.done, s.started)
			}
			t.Logf("killed before %s; steps started %v", plain.started[kill-1], s.started)
		})
	}
}

// Issue 26, "every completed step counted once", for a react of three
// analysis rounds, two of which call a tool, then its answer: six steps
// (four model calls, two tool calls).
func TestKill_react_at_every_step_counts_each_completed_step_once(t *testing.T) {
	killAtEveryStep(t, steppedOp{verb: "react", data: map[string]any{"instruction": "What are 1 + 2 and 3 + 4?", "max_extensions": 3}},
		`"three and seven"`, 6)
}

// The same for an operate with the LNDL middle of three rounds, the first
// two calling a tool: five steps (three model calls, two tool calls).
func TestKill_lndl_operate_at_every_step_counts_each_completed_step_once(t *testing.T) {
	format := map[string]any{"title": "Sums", "type": "object", "required": []string{"first", "second"},
		"properties": map[string]any{"first": map[string]any{"type": "number"}, "second": map[string]any{"type": "number"}}}
	killAtEveryStep(t, steppedOp{verb: "operate", data: map[string]any{"instruction": "What are 1 + 2 and 3 + 4?", "middle": "lndl",
		"response_format": format, "round_budget": 3}},
		`{"first":3,"second":7}`, 5)
}

// The same for a communicate whose answer is not the JSON asked for, so
// that a reformat round follows: two model calls.
func TestKill_communicate_with_a_reformat_round_counts_each_completed_step_once(t *testing.T) {
	format := map[string]any{"type": "object", "required": []string{"n"}, "properties": map[string]any{"n": map[string]any{"type": "number"}}}
	killAtEveryStep(t, steppedOp{verb: "communicate", data: map[string]any{"instruction": "What is 1 + 2?", "response_format": format, "num_parse_retries": 1}},
		`{"n":3}`, 2)
}

// serveRawAdd serves the tool add2 ({x, y} -> x+y) as a service in any
// language could: its registry entry written into the tools bucket, and a
// responder on core NATS that remembers nothing, so that a second
// invocation of a call runs it again. Each run is a step of s.
func serveRawAdd(t *testing.T, b *bustest.Bus, s *steps) {
	t.Helper()
	kv, err := b.JS.KeyValue(bustest.Ctx(t), "lion_tools")
	if err != nil {
		t.Fatal(err)
	}
	entry := `{"name":"add2","description":"Adds x and y.","subject":"lion.tool.add2","version":"0.1.0",` +
		`"parameters":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]}}`
	if _, err := kv.Put(bustest.Ctx(t), "add2", []byte(entry)); err != nil {
		t.Fatal(err)
	}
	sub, err := b.NC.QueueSubscribe("lion.tool.add2", "add2", func(m *nats.Msg) {
		var in struct {
			Data struct {
				Arguments map[string]float64 `json:"arguments"`
			} `json:"data"`
		}
		_ = json.Unmarshal(m.Data, &in)
		x, y := in.Data.Arguments["x"], in.Data.Arguments["y"]
		step := fmt.Sprintf("tool add2 %v+%v", x, y)
		// As add's: when the worker is killed as this call starts, the
		// tool still runs; its answer reaches no one.
		s.begin(step)
		s.finish(step)
		out, _ := json.Marshal(map[string]any{"specversion": "1.0", "id": fmt.Sprintf("raw-%d", time.Now().UnixNano()), "source": "/test/raw",
			"type": "lionbus.tool.result", "datacontenttype": "application/json", "data": map[string]any{"output": x + y}})
		_ = m.Respond(out)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
}

// Issue 26, "tools not built on the Go SDK get the same guarantee for
// everything the worker has recorded": a react round that calls a tool
// remembering nothing twice, in turn, with the worker SIGKILLed before
// each step — also between the two calls, when the first has answered
// and nothing is committed yet: the worker's journal of tool outcomes
// answers the first again. The call the worker died in runs again (its
// outcome reached no one); every other runs once.
func TestKill_react_with_a_tool_that_remembers_nothing_runs_each_call_once(t *testing.T) {
	killAtEveryStep(t, steppedOp{verb: "react", raw: true, data: map[string]any{"instruction": "What are 1 + 2 and 3 + 4?", "action_strategy": "sequential"}},
		`"three and seven, twice"`, 4)
}
