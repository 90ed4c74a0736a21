package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
)

// consoleAddr finds the address publisher console prints on start.
var consoleAddr = regexp.MustCompile(`console: (http://127\.0\.0\.1:[0-9]+)/`)

func TestPublisher_console_serves_with_the_connection_flags(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	url := b.Srv.ClientURL()
	b.Do(t, "branch.create", "", map[string]any{"branch_id": "cb", "chat_model": "scripted:echo"})
	b.Do(t, "communicate", "cb", map[string]any{"instruction": "echo this line"})

	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &bustest.SyncBuffer{}, &bustest.SyncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--nats", url, "console", "--listen", "127.0.0.1:0", "--as", "carol"}, strings.NewReader(""), out, errOut)
	}()
	bustest.WaitFor(t, 10*time.Second, "the console's address", func() bool { return consoleAddr.MatchString(out.String()) })
	base := consoleAddr.FindStringSubmatch(out.String())[1]

	for _, tt := range []struct{ path, want string }{
		{"/branches", `href="/branches/cb"`},
		{"/branches/cb", "echo this line"},
		{"/static/console.js", "EventSource"},
		{"/approvals", "given as <strong>carol</strong>"},
	} {
		res, err := http.Get(base + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), tt.want) {
			t.Errorf("%s: %d, want %q in:\n%s", tt.path, res.StatusCode, tt.want, body)
		}
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("console exit %d: %s", code, errOut)
	}

	steps := []step{
		{name: "an argument", args: []string{"console", "x", "--nats", url}, wantCode: exitUsage, wantErr: []string{"console takes no arguments"}},
		{name: "bad approver", args: []string{"console", "--as", "a.b", "--nats", url}, wantCode: exitUsage, wantErr: []string{"--as", "not a subject token"}},
		{name: "bad listen", args: []string{"console", "--listen", "nowhere", "--nats", url}, wantCode: exitUsage, wantErr: []string{"--listen"}},
		{name: "no NATS", args: []string{"console", "--nats", "nats://127.0.0.1:1", "--timeout", "1s"}, wantCode: exitNoAnswer, wantErr: []string{"cannot connect"}},
	}
	for _, s := range steps {
		code, stdout, stderr := call(t, "", s.args...)
		s.check(t, code, stdout, stderr)
	}
}
