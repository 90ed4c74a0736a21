package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
)

// freePorts returns n ports free at the time of the call.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// clusterNode starts node i of a three-node JetStream cluster whose route
// ports are routes, and stops it when the test ends.
func clusterNode(t *testing.T, i int, routes []int) *server.Server {
	t.Helper()
	var urls []*url.URL
	for j, p := range routes {
		if j != i {
			urls = append(urls, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
		}
	}
	ns, err := server.NewServer(&server.Options{
		ServerName: fmt.Sprintf("n%d", i),
		Host:       "127.0.0.1",
		Port:       -1,
		NoLog:      true,
		NoSigs:     true,
		JetStream:  true,
		StoreDir:   t.TempDir(),
		Cluster:    server.ClusterOpts{Name: "lion", Host: "127.0.0.1", Port: routes[i]},
		Routes:     urls,
	})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatalf("node %d not ready", i)
	}
	return ns
}

// A worker process started with --replicas 3 on the first node of a
// cluster whose other two nodes join 3 s later waits (JetStream has no
// quorum yet), provisions its replicated streams once they have joined,
// serves, and drains on SIGTERM.
func TestCluster_worker_started_before_the_other_nodes_serves_once_they_join(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	routes := freePorts(t, 3)
	first := clusterNode(t, 0, routes)
	args, _ := json.Marshal([]string{"--nats", first.ClientURL(), "--replicas", "3", "--startup-timeout", "2m",
		"--log-format", "json", "--log-level", "info", "--name", "early"})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), mainArgsEnv+"="+string(args))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &bustest.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	serving := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "serving prefix") {
				close(serving)
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	time.Sleep(3 * time.Second)
	select {
	case <-serving:
		t.Fatal("the worker served before the cluster had a quorum")
	case err := <-exited:
		t.Fatalf("the worker exited before the other nodes joined: %v\n%s", err, stderr)
	default:
	}
	clusterNode(t, 1, routes)
	clusterNode(t, 2, routes)
	select {
	case <-serving:
	case err := <-exited:
		t.Fatalf("the worker exited: %v\n%s", err, stderr)
	case <-time.After(2*time.Minute + 10*time.Second):
		t.Fatalf("the worker did not serve once the nodes joined\n%s", stderr)
	}

	nc, err := client.Connect(context.Background(), client.ConnectConfig{URL: first.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	subj, _ := protocol.NewSubjects("")
	// The requests, and the tool results bucket the tool services use.
	for _, stream := range []string{subj.OpsStream(), "KV_" + subj.ToolResultsBucket()} {
		info, err := js.StreamInfo(stream)
		if err != nil || info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
			t.Fatalf("stream %s: %v %+v", stream, err, info)
		}
	}
	cl, err := client.New(nc, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, req := range []struct {
		verb, branch string
		data         map[string]any
	}{
		{"branch.create", "", map[string]any{"branch_id": "c1", "chat_model": "scripted:echo"}},
		{"communicate", "c1", map[string]any{"instruction": "hello cluster"}},
	} {
		r, err := cl.Do(ctx, req.verb, req.branch, req.data)
		if err != nil || r.Err() != nil {
			t.Fatalf("%s: %v %v\n%s", req.verb, err, r.Err(), stderr)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("no exit after SIGTERM\n%s", stderr)
	}
}
