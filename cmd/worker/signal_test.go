package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mainArgsEnv, when set, makes the test binary run the worker's main with
// these (JSON-encoded) arguments instead of the tests, so that a test can
// run the real main in a subprocess and signal it.
const mainArgsEnv = "WORKER_TEST_MAIN_ARGS"

func TestMain(m *testing.M) {
	if raw := os.Getenv(blockingWorkerEnv); raw != "" {
		os.Exit(blockingWorkerMain(raw))
	}
	if raw := os.Getenv(steppedWorkerEnv); raw != "" {
		os.Exit(steppedWorkerMain(raw))
	}
	if raw := os.Getenv(approvalWorkerEnv); raw != "" {
		os.Exit(approvalWorkerMain(raw))
	}
	if raw := os.Getenv(mainArgsEnv); raw != "" {
		var args []string
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			panic(err)
		}
		os.Args = append([]string{"worker"}, args...)
		main()
		return
	}
	os.Exit(m.Run())
}

func TestMain_signal_drains_and_exits_zero(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			args, _ := json.Marshal([]string{"--port", "-1", "--store-dir", t.TempDir(), "--log-format", "json"})
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), mainArgsEnv+"="+string(args))
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			serving := make(chan string, 1)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					if strings.Contains(sc.Text(), "serving prefix") {
						serving <- sc.Text()
					}
				}
			}()
			select {
			case <-serving:
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("worker did not start:\n%s", stderr.String())
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("worker exited with %v after %s:\n%s", err, sig, stderr.String())
				}
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("worker did not exit after %s:\n%s", sig, stderr.String())
			}
			if !strings.Contains(stderr.String(), `"message":"worker drained"`) {
				t.Errorf("no drain log after %s:\n%s", sig, stderr.String())
			}
		})
	}
}
