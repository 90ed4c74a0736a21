package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The Python example client works as the user client of nats/nats.conf
// with its inbox prefix, and is refused without it (it may not read the
// default _INBOX): the server's permissions apply to a bare-socket client
// as to the Go ones, and the client reports the refusal.
func TestPythonClient_as_the_client_user(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the Python example client cannot run")
	}
	vars := []string{"LIONBUS_WORKER_PASSWORD", "LIONBUS_CLIENT_PASSWORD", "LIONBUS_TOOLS_PASSWORD", "NATS_SYS_PASSWORD"}
	s := startConfServer(t, "nats/nats.conf", vars)
	startSingleAccountWorker(t, s, nil)
	url := strings.Replace(s.ClientURL(), "nats://", "nats://client:"+password("LIONBUS_CLIENT_PASSWORD")+"@", 1)
	pyClient := func(inbox string) (string, string, error) {
		cmd := exec.Command(python, filepath.Join("..", "examples", "python-client", "client.py"), "pyperm", "Hello as client")
		cmd.Env = append(os.Environ(), "NATS_URL="+url, "LION_TIMEOUT=10")
		if inbox != "" {
			cmd.Env = append(cmd.Env, "LIONBUS_INBOX_PREFIX="+inbox)
		}
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}

	out, stderr, err := pyClient("")
	if err == nil || !strings.Contains(stderr, "Permissions Violation") {
		t.Errorf("without its inbox prefix: err %v, stderr %q, stdout %q; want a permissions violation", err, stderr, out)
	}

	out, stderr, err = pyClient("_INBOX.client")
	if err != nil {
		t.Fatalf("with its inbox prefix: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	for _, want := range []string{`"type": "lionbus.branch.create.result"`, `"type": "lionbus.communicate.result"`, `"value": "Hello as client"`, `"event": "lionbus.run.end"`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
}
