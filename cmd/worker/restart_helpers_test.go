package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
)

// mainProcess is the worker's real main running in a child process (this
// test binary with mainArgsEnv set), its JSON logs collected line by line
// with the time each arrived.
type mainProcess struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	stdout *bustest.SyncBuffer
	logs   *logLines
	exited chan struct{}
}

// logLines are the lines a process wrote to stderr, each with when it came.
type logLines struct {
	mu    sync.Mutex
	lines []logLine
}

type logLine struct {
	at   time.Time
	text string
}

func (l *logLines) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		l.mu.Lock()
		l.lines = append(l.lines, logLine{time.Now(), sc.Text()})
		l.mu.Unlock()
	}
}

// String returns every line, joined.
func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, ln := range l.lines {
		b.WriteString(ln.text)
		b.WriteByte('\n')
	}
	return b.String()
}

// between returns the lines that came in [from, to).
func (l *logLines) between(from, to time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, ln := range l.lines {
		if !ln.at.Before(from) && ln.at.Before(to) {
			out = append(out, ln.text)
		}
	}
	return out
}

// field returns the string field key of the first line with message msg.
func (l *logLines) field(msg, key string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ln := range l.lines {
		var rec map[string]any
		if json.Unmarshal([]byte(ln.text), &rec) == nil && rec["message"] == msg {
			s, _ := rec[key].(string)
			return s
		}
	}
	return ""
}

// startMainProcess runs the worker's main with args in a child process
// and waits until it serves. It is stopped (SIGKILL) when the test ends.
func startMainProcess(t *testing.T, name string, args ...string) *mainProcess {
	t.Helper()
	args = append([]string{"--name", name, "--log-format", "json"}, args...)
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	p := &mainProcess{t: t, name: name, cmd: exec.Command(os.Args[0], "-test.run=^$"),
		stdout: &bustest.SyncBuffer{}, logs: &logLines{}, exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), mainArgsEnv+"="+string(raw))
	p.cmd.Stdout = p.stdout
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.exited)
		p.logs.read(stderr)
		_ = p.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	})
	waitFor(t, 60*time.Second, "worker "+name+" to serve", func() bool {
		select {
		case <-p.exited:
			return true
		default:
		}
		return strings.Contains(p.stdout.String(), "serving prefix")
	})
	if !strings.Contains(p.stdout.String(), "serving prefix") {
		t.Fatalf("worker %s did not start:\n%s", name, p.logs)
	}
	return p
}

// readyz returns the status of the worker's /readyz (its --metrics-addr
// must be set), 0 when it does not answer.
func (p *mainProcess) readyz() int {
	addr := p.logs.field("metrics and health on /metrics, /healthz, /readyz", "addr")
	if addr == "" {
		p.t.Fatalf("worker %s serves no metrics:\n%s", p.name, p.logs)
	}
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// reconnectingClient connects a client to url that reconnects (every
// 100ms) through server restarts, for the test's side.
func reconnectingClient(t *testing.T, url string) (*nats.Conn, *client.Client) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond), nats.Name(t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	cl, err := client.New(nc, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return nc, cl
}

// doUntil sends a request and waits for its answer, submitting it again
// (same id, so stored once) while the server does not take it, until
// deadline.
func doUntil(t *testing.T, cl *client.Client, deadline time.Time, verb, branch string, data any, id string) (*client.Reply, error) {
	t.Helper()
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := cl.Submit(sctx, verb, branch, data, client.WithID(id))
		scancel()
		if err != nil {
			cancel()
			lastErr = err
			time.Sleep(100 * time.Millisecond)
			continue
		}
		r, err := cl.Await(ctx, id)
		cancel()
		return r, err
	}
	return nil, fmt.Errorf("%s %s not accepted before the deadline: %w", verb, id, lastErr)
}
