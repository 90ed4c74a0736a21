package bus_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
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
	opts := &server.Options{
		ServerName: fmt.Sprintf("n%d", i),
		Host:       "127.0.0.1",
		Port:       -1,
		NoLog:      true,
		NoSigs:     true,
		JetStream:  true,
		StoreDir:   t.TempDir(),
		Cluster:    server.ClusterOpts{Name: "lion", Host: "127.0.0.1", Port: routes[i]},
		Routes:     urls,
	}
	ns, err := server.NewServer(opts)
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

// A worker started with --replicas 3 on the first node of a cluster whose
// other nodes join 3 s later provisions its replicated streams once they
// have joined, and serves.
func TestCluster_worker_started_before_the_other_nodes_serves_once_they_join(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	t.Parallel()
	routes := freePorts(t, 3)
	first := clusterNode(t, 0, routes)
	logs := &syncBuffer{}
	type started struct {
		svc *bus.Service
		err error
	}
	done := make(chan started, 1)
	go func() {
		svc, err := bus.Start(context.Background(), bus.Config{
			Connect:        client.ConnectConfig{URL: first.ClientURL(), Name: t.Name()},
			Provision:      provision.Config{Replicas: 3},
			StartupTimeout: 2 * time.Minute,
			Worker:         worker.Config{FetchWait: 200 * time.Millisecond},
			Logger:         zerolog.New(logs).Level(zerolog.InfoLevel),
		})
		done <- started{svc, err}
	}()
	time.Sleep(3 * time.Second)
	select {
	case s := <-done:
		t.Fatalf("Start returned before the cluster had a quorum: %v", s.err)
	default:
	}
	clusterNode(t, 1, routes)
	clusterNode(t, 2, routes)
	var s started
	select {
	case s = <-done:
	case <-time.After(2*time.Minute + 10*time.Second):
		t.Fatalf("Start did not return\n%s", logs)
	}
	if s.err != nil {
		t.Fatalf("Start: %v\n%s", s.err, logs)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.svc.Stop(ctx)
		s.svc.Close()
	})
	info, err := s.svc.Resources().Ops.Info(context.Background())
	if err != nil || info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("ops stream: %v %+v", err, info)
	}
	nc, err := client.Connect(context.Background(), client.ConnectConfig{URL: first.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
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
			t.Fatalf("%s: %v %v\n%s", req.verb, err, r.Err(), logs)
		}
	}
}
