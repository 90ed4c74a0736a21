package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
)

// The nats-server (file storage) is SIGKILLed under a running worker and
// started again on the same port and store 3s later: the worker serves
// again, requests on a branch and requests without one, without being
// restarted itself.
func TestRestart_server_killed_under_a_running_worker_serves_again(t *testing.T) {
	srv := bustest.StartServerProcess(t, bustest.ServerOptions{})
	w := startMainProcess(t, "w1", "--nats", srv.ClientURL(), "--log-level", "info")
	_, cl := reconnectingClient(t, srv.ClientURL())

	deadline := time.Now().Add(30 * time.Second)
	r, err := doUntil(t, cl, deadline, "branch.create", "", map[string]any{"branch_id": "b1", "chat_model": "scripted:echo"}, "create-b1")
	if err != nil || r.Err() != nil {
		t.Fatalf("branch.create: %v %v", err, r.Err())
	}
	if r, err := doUntil(t, cl, deadline, "communicate", "b1", map[string]any{"instruction": "before"}, "before"); err != nil || r.Err() != nil {
		t.Fatalf("communicate before the restart: %v %v", err, r.Err())
	}

	srv.Kill()
	time.Sleep(3 * time.Second)
	srv.Start()
	restarted := time.Now()
	srv.WaitJetStream(30 * time.Second)

	deadline = restarted.Add(20 * time.Second)
	for i, req := range []struct {
		verb, branch string
		data         map[string]any
	}{
		{"communicate", "b1", map[string]any{"instruction": "after"}},
		{"branch.create", "", map[string]any{"branch_id": "b2", "chat_model": "scripted:echo"}},
		{"communicate", "b2", map[string]any{"instruction": "on a new branch"}},
	} {
		r, err := doUntil(t, cl, deadline, req.verb, req.branch, req.data, fmt.Sprint("after-", i))
		if err != nil {
			t.Fatalf("%s %s after the restart: %v\nworker log:\n%s", req.verb, req.branch, err, w.logs)
		}
		if err := r.Err(); err != nil {
			t.Fatalf("%s %s after the restart answered %v\nworker log:\n%s", req.verb, req.branch, err, w.logs)
		}
	}
	t.Logf("served again %s after the restart", time.Since(restarted).Round(time.Millisecond))
}
