package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
)

// childWorker is this test binary running as a worker process of one of
// the kinds TestMain dispatches on (an environment variable holding the
// worker's JSON-encoded arguments).
type childWorker struct {
	cmd    *exec.Cmd
	stderr *bustest.SyncBuffer
	exited chan struct{}
}

// kill SIGKILLs the process and waits until it exited.
func (p *childWorker) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// startChildWorker starts the test binary with env set to args and waits
// until it prints "serving" (what names it in failures). Every other line
// of its stdout goes to onLine, with its stdin to answer on. It is killed
// when the test ends.
func startChildWorker(t *testing.T, what, env string, args []string, onLine func(line string, stdin io.Writer)) *childWorker {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	p := &childWorker{cmd: exec.Command(os.Args[0], "-test.run=^$"), stderr: &bustest.SyncBuffer{}, exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env+"="+string(raw))
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(p.exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if line := sc.Text(); line == "serving" {
				close(served)
			} else if onLine != nil {
				onLine(line, stdin)
			}
		}
		_ = p.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	select {
	case <-served:
	case <-p.exited:
		t.Fatalf("%s did not start:\n%s", what, p.stderr)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not start in time:\n%s", what, p.stderr)
	}
	return p
}

// serveJournaledChild starts the bus of a child worker process whose
// providers wj journals and whose tools are wt's, as the worker command
// does, prints "serving" and serves until the process is killed. It
// returns the exit code for a worker that could not start or stopped by
// itself.
func serveJournaledChild(name string, bc bus.Config, wj *workerJournal, wt *workerTools, log zerolog.Logger) int {
	ctx := context.Background()
	svc, err := bus.Start(ctx, bc)
	if err == nil {
		wj.attach(svc)
		err = wt.attach(ctx, svc, log)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return exitFailure
	}
	fmt.Println("serving")
	<-svc.Worker().Stopped()
	return exitFailure
}
