package tools_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/tools"
)

// jsToolDir is the JavaScript example tool service.
var jsToolDir = filepath.Join("..", "..", "examples", "js-tool")

// The JavaScript example tool service (examples/js-tool, on the TypeScript
// SDK of clients/js) is discovered in the registry and called through
// operate, refuses arguments its schema does not allow, and removes its
// entry when it stops.
func TestAcceptance_js_tool_is_called_through_operate(t *testing.T) {
	t.Parallel()
	node := bustest.Node(t)
	bustest.JSClientDir(t) // the SDK the example is written on
	bustest.NPMInstall(t, jsToolDir)
	b := bustest.New(t, provision.Config{})
	cmd := exec.Command(node, "tool.js")
	cmd.Dir = jsToolDir
	cmd.Env = append(os.Environ(), "NATS_URL="+b.Srv.ClientURL(), "LION_PREFIX=lion")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready:") {
				ready <- sc.Text()
			}
		}
	}()
	select {
	case <-ready:
	case err := <-exited:
		t.Fatalf("the js tool exited: %v\n%s", err, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the js tool did not get ready\n%s", stderr.String())
	}

	startWorker(t, b, tools.InvokerConfig{}, nil)
	reply := `{"answer": "counting", "action_required": true, "action_requests": [` +
		`{"function": "word_count", "arguments": {"text": "tools in any language"}}, {"function": "word_count", "arguments": {"text": 3}}]}`
	createBranch(t, b, "js", []string{"word_count"}, reply)
	format := map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}, "required": []string{"answer"}}
	r := b.Do(t, "operate", "js", map[string]any{"instruction": "count", "response_format": format, "actions": true})
	bustest.CheckSchema(t, r)
	var got struct {
		ActionResponses []ops.ActionResponse `json:"action_responses"`
	}
	bustest.MustResult(t, r, &got)
	if len(got.ActionResponses) != 2 {
		t.Fatalf("action responses %+v", got.ActionResponses)
	}
	if out, _ := json.Marshal(got.ActionResponses[0].Output); string(out) != `{"words":4}` {
		t.Errorf("word_count answered %s", out)
	}
	if e := got.ActionResponses[1].Error; e == nil || e.Code != "invalid_arguments" {
		t.Errorf("word_count with a number answered %+v, want invalid_arguments", e)
	}

	// A clean shutdown removes the registry entry.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the js tool did not stop on SIGTERM")
	}
	if _, err := b.Res.Tools.Get(bustest.Ctx(t), "word_count"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("registry entry after the js tool stopped: %v", err)
	}
}
