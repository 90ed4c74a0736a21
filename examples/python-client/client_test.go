// Package pythonclient_test runs the Python example client (client.py,
// standard library only) against a real embedded NATS server and worker.
package pythonclient_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
)

// lines runs client.py with args and env and returns its stdout's JSON
// lines, split into answers and events.
func run(t *testing.T, env []string, args ...string) (answers, events []map[string]any) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the Python example client cannot run")
	}
	cmd := exec.Command(python, append([]string{"client.py"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("python3 client.py: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("output line is not JSON: %q", line)
		}
		if m["event"] != nil {
			events = append(events, m)
		} else {
			answers = append(answers, m)
		}
	}
	return answers, events
}

// The client creates a branch, gets its communicate answered and follows
// the branch's events to the run's end, speaking NATS over a bare socket.
func TestPythonClient(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	answers, events := run(t, []string{"NATS_URL=" + b.Srv.ClientURL()}, "pyb", "Hello from the Python test")
	if len(answers) != 2 || answers[0]["type"] != "lionbus.branch.create.result" || answers[1]["type"] != "lionbus.communicate.result" {
		t.Fatalf("answers %v", answers)
	}
	if v := answers[1]["data"].(map[string]any)["value"]; v != "Hello from the Python test" {
		t.Fatalf("communicate value %v", v)
	}
	var types []string
	for _, e := range events {
		types = append(types, e["event"].(string))
		if !strings.HasPrefix(e["subject"].(string), "lion.events.pyb.") {
			t.Errorf("event on %v", e["subject"])
		}
	}
	if len(types) == 0 || types[len(types)-1] != "lionbus.run.end" || !strings.Contains(strings.Join(types, " "), "lionbus.message.added") {
		t.Fatalf("events %v", types)
	}
}
