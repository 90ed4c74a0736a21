package bus_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
)

// jsClientDir is the JavaScript example client.
var jsClientDir = filepath.Join("..", "..", "examples", "js-client")

// The JavaScript example client (examples/js-client, on the TypeScript SDK
// of clients/js) creates a branch, gets its communicate answered and
// follows the branch's events to the run's end.
func TestExamples_js_client(t *testing.T) {
	t.Parallel()
	node := bustest.Node(t)
	bustest.JSClientDir(t) // the SDK the example is written on
	bustest.NPMInstall(t, jsClientDir)
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	cmd := exec.Command(node, "client.js", "jsb", "Hello from the JS test")
	cmd.Dir = jsClientDir
	cmd.Env = append(os.Environ(), "NATS_URL="+b.Srv.ClientURL())
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node client.js: %v\n%s\n%s", err, out, stderr)
	}
	var answers, events []map[string]any
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
	if len(answers) != 2 || answers[0]["type"] != "lionbus.branch.create.result" || answers[1]["type"] != "lionbus.communicate.result" {
		t.Fatalf("answers %v", answers)
	}
	if v := answers[1]["data"].(map[string]any)["value"]; v != "Hello from the JS test" {
		t.Fatalf("communicate value %v", v)
	}
	var types []string
	for _, e := range events {
		types = append(types, e["event"].(string))
	}
	if len(types) == 0 || types[len(types)-1] != "lionbus.run.end" || !strings.Contains(strings.Join(types, " "), "lionbus.message.added") {
		t.Fatalf("events %v", types)
	}
}
