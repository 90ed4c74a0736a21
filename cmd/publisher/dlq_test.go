package main

import (
	"context"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

func TestPublisher_dlq_list_show_retry_delete(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{MaxDeliver: 2})
	var failing atomic.Bool
	failing.Store(true)
	b.StartWorker(t, nil, worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		if failing.Load() {
			return nil, &ops.Error{Code: ops.CodeUnavailable, Message: "backend down", Temporary: true}
		}
		return &ops.Result{Value: req.Data}, nil
	}), nil, worker.Config{Backoff: worker.Backoff{10 * time.Millisecond}})
	url := b.Srv.ClientURL()
	var ids []string
	for range 2 {
		id, err := b.Client.Submit(bustest.Ctx(t), "op.later", "", map[string]any{"x": 7})
		if err != nil {
			t.Fatal(err)
		}
		b.Await(t, id)
		ids = append(ids, id)
		bustest.WaitFor(t, 10*time.Second, "dead letter", func() bool {
			_, err := b.Client.DeadLetter(bustest.Ctx(t), id)
			return err == nil
		})
	}

	steps := []step{
		{name: "list", args: []string{"dlq", "list", "--nats", url}, wantOut: []string{ids[0], ids[1], "op.later", "unavailable", "2 deliveries", "backend down"}},
		{name: "list json", args: []string{"dlq", "list", "--json", "--nats", url}, wantOut: []string{`"key": "` + ids[0], `"attempts": 2`, `"answered": true`}},
		{name: "show", args: []string{"dlq", "show", ids[0], "--nats", url}, wantOut: []string{"reason:    unavailable", "attempts:  2", `"x":7`, "subject:   lion.ops.op.later"}},
		{name: "show unknown", args: []string{"dlq", "show", "nope", "--nats", url}, wantCode: exitFailed, wantErr: []string{"no such dead letter"}},
		{name: "bad key", args: []string{"dlq", "show", "a.b", "--nats", url}, wantCode: exitUsage, wantErr: []string{"dead-letter key"}},
		{name: "bad subcommand", args: []string{"dlq", "purge", "--nats", url}, wantCode: exitUsage, wantErr: []string{"unknown subcommand"}},
		{name: "delete", args: []string{"dlq", "delete", ids[1], "--nats", url}, wantOut: []string{"deleted"}},
		{name: "show deleted", args: []string{"dlq", "show", ids[1], "--nats", url}, wantCode: exitFailed},
	}
	for _, s := range steps {
		code, out, errOut := call(t, "", s.args...)
		s.check(t, code, out, errOut)
	}

	failing.Store(false)
	code, out, errOut := call(t, "", "dlq", "retry", ids[0], "--nats", url)
	if code != exitOK {
		t.Fatalf("retry: %d %s %s", code, out, errOut)
	}
	newID := regexp.MustCompile(`retried as request (\S+)`).FindStringSubmatch(out)
	if newID == nil {
		t.Fatalf("retry printed %q", out)
	}
	code, out, errOut = call(t, "", "result", "--wait", newID[1], "--nats", url)
	step{name: "result of the retry", wantOut: []string{`"x": 7`}}.check(t, code, out, errOut)
	code, out, errOut = call(t, "", "dlq", "list", "--nats", url)
	step{name: "empty", wantOut: []string{"no dead letters"}}.check(t, code, out, errOut)
}
