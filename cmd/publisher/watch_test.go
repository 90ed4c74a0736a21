package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
)

func TestPublisher_watch_and_branch_list(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	url := b.Srv.ClientURL()
	code, stdout, stderr := call(t, "", "branch", "list", "--nats", url)
	step{name: "empty list", wantOut: []string{"no branches"}}.check(t, code, stdout, stderr)
	b.Do(t, "branch.create", "", map[string]any{"branch_id": "wb", "chat_model": "scripted:echo"})
	b.Do(t, "communicate", "wb", map[string]any{"instruction": "first"})

	// watch --all: the earlier run's events, then the next one's live.
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &bustest.SyncBuffer{}, &bustest.SyncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"watch", "wb", "--all", "--nats", url}, strings.NewReader(""), out, errOut)
	}()
	bustest.WaitFor(t, 10*time.Second, "the earlier events", func() bool { return strings.Count(out.String(), "run.end") == 1 })
	b.Do(t, "communicate", "wb", map[string]any{"instruction": "second"})
	bustest.WaitFor(t, 10*time.Second, "the live events", func() bool { return strings.Count(out.String(), "run.end") == 2 })
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("watch exit %d: %s", code, errOut)
	}
	got := out.String()
	for _, want := range []string{"run.start", "message.added", "instruction", "assistant_response", "second"} {
		if !strings.Contains(got, want) {
			t.Errorf("watch output lacks %q:\n%s", want, got)
		}
	}

	steps := []step{
		{name: "list", args: []string{"branch", "list", "--nats", url}, wantOutRE: `wb\s+3 events`},
		{name: "list json", args: []string{"branch", "list", "--json", "--nats", url}, wantOut: []string{`"branch_id": "wb"`, `"events": 3`}},
		{name: "watch bad branch", args: []string{"watch", "a.b", "--nats", url}, wantCode: exitUsage, wantErr: []string{"branch id"}},
		{name: "watch two starts", args: []string{"watch", "wb", "--all", "--since", "1m", "--nats", url}, wantCode: exitUsage, wantErr: []string{"exclude each other"}},
		{name: "list with args", args: []string{"branch", "list", "x", "--nats", url}, wantCode: exitUsage},
	}
	for _, s := range steps {
		code, stdout, stderr := call(t, "", s.args...)
		s.check(t, code, stdout, stderr)
	}
}
