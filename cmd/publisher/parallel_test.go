package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestPublisher_parallel_sends_branchorder: --parallel sends the request
// with the branchorder attribute "parallel" (it is answered as usual);
// without it, the attribute is absent.
func TestPublisher_parallel_sends_branchorder(t *testing.T) {
	url := startWorker(t, "lion")
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sent, err := nc.SubscribeSync("lion.ops.communicate")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	n := []string{"--nats", url}
	if code, _, errOut := call(t, "", append(n, "branch", "create", "--id", "p1", "--chat-model", "scripted:echo")...); code != exitOK {
		t.Fatalf("create: %d %s", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{append(n, "communicate", "p1", "--instruction", "side by side", "--parallel"), true},
		{append(n, "communicate", "p1", "--instruction", "in turn"), false},
	} {
		code, out, errOut := call(t, "", tc.args...)
		if code != exitOK || !strings.Contains(out, tc.args[len(n)+3]) {
			t.Fatalf("%v: exit %d, out %q, err %q", tc.args, code, out, errOut)
		}
		m, err := sent.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(m.Data), `"branchorder":"parallel"`); got != tc.want {
			t.Errorf("%v: request %s; branchorder parallel sent: %v, want %v", tc.args, m.Data, got, tc.want)
		}
	}
}
