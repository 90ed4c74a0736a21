package bustest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsServerPackage is the main package of the nats-server the module
// requires: the binary an operator runs.
const natsServerPackage = "github.com/nats-io/nats-server/v2"

var (
	natsServerOnce sync.Once
	natsServerPath string
	natsServerErr  error
)

// NATSServerBinary returns the path of a nats-server binary built from the
// version of the module's go.mod, building it the first time (into the
// user cache directory, shared by every test binary and run: later calls
// only check it is there). It skips the test when the go command is not
// available.
func NATSServerBinary(t testing.TB) string {
	t.Helper()
	natsServerOnce.Do(func() { natsServerPath, natsServerErr = buildNATSServer() })
	if errors.Is(natsServerErr, exec.ErrNotFound) {
		t.Skipf("bustest: no go command to build nats-server: %v", natsServerErr)
	}
	if natsServerErr != nil {
		t.Fatalf("bustest: build nats-server: %v", natsServerErr)
	}
	return natsServerPath
}

// buildNATSServer builds the nats-server binary unless a build of the same
// version is there already.
func buildNATSServer() (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	out, err := exec.Command(gobin, "list", "-m", "-f", "{{.Version}}", natsServerPackage).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", natsServerPackage, err)
	}
	version := strings.TrimSpace(string(out))
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "lionbus-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("nats-server-%s-%s-%s", version, runtime.GOOS, runtime.GOARCH))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	// Built beside its final name and renamed, so that test binaries
	// building it at the same time never run a half-written file.
	tmp, err := os.CreateTemp(dir, "nats-server-build-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	build := exec.Command(gobin, "build", "-o", tmp.Name(), natsServerPackage)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", natsServerPackage, err, out)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}

// ServerProcess is a nats-server with JetStream running as a child process,
// which a test can SIGKILL and start again on the same port and store, as
// an operator's restart would. Build one with [StartServerProcess] or
// [StartClusterProcesses].
type ServerProcess struct {
	t      testing.TB
	bin    string
	args   []string
	port   int
	mu     sync.Mutex // guards cmd and exited
	cmd    *exec.Cmd
	exited chan struct{}
	log    *SyncBuffer // the server's own log, across its runs
}

// ServerOptions configure a [ServerProcess].
type ServerOptions struct {
	// Name is the server name (required in a cluster).
	Name string
	// Port is the client port; 0 picks a free one.
	Port int
	// StoreDir is the JetStream store; "" means a directory of the test.
	StoreDir string
	// Cluster, ClusterPort and Routes make the server a node of a
	// cluster: its name, the node's route port, and the route URLs of
	// the other nodes.
	Cluster     string
	ClusterPort int
	Routes      []string
}

// StartServerProcess starts a nats-server child process with JetStream on
// loopback, waits until it accepts connections, and kills it when the test
// ends.
func StartServerProcess(t testing.TB, o ServerOptions) *ServerProcess {
	t.Helper()
	s := newServerProcess(t, o)
	s.Start()
	s.WaitJetStream(30 * time.Second)
	return s
}

func newServerProcess(t testing.TB, o ServerOptions) *ServerProcess {
	t.Helper()
	if o.Port == 0 {
		o.Port = FreePorts(t, 1)[0]
	}
	if o.StoreDir == "" {
		o.StoreDir = t.TempDir()
	}
	args := []string{"-a", "127.0.0.1", "-p", fmt.Sprint(o.Port), "-js", "-sd", o.StoreDir}
	if o.Name != "" {
		args = append(args, "-n", o.Name)
	}
	if o.Cluster != "" {
		args = append(args, "--cluster_name", o.Cluster, "--cluster", fmt.Sprintf("nats://127.0.0.1:%d", o.ClusterPort),
			"--routes", strings.Join(o.Routes, ","))
	}
	s := &ServerProcess{t: t, bin: NATSServerBinary(t), args: args, port: o.Port, log: &SyncBuffer{}}
	t.Cleanup(func() { s.Kill() })
	return s
}

// StartClusterProcesses starts an n-node JetStream cluster of nats-server
// child processes on loopback and waits until it has a JetStream meta
// leader.
func StartClusterProcesses(t testing.TB, n int) []*ServerProcess {
	t.Helper()
	ports := FreePorts(t, 2*n)
	routes := make([]string, n)
	for i := range n {
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", ports[n+i])
	}
	nodes := make([]*ServerProcess, n)
	for i := range n {
		var others []string
		for j, r := range routes {
			if j != i {
				others = append(others, r)
			}
		}
		nodes[i] = newServerProcess(t, ServerOptions{
			Name: fmt.Sprintf("n%d", i+1), Port: ports[i], Cluster: "lion", ClusterPort: ports[n+i], Routes: others,
		})
		nodes[i].Start()
	}
	for _, s := range nodes {
		s.WaitJetStream(60 * time.Second)
	}
	return nodes
}

// ClusterURL returns the client URLs of nodes, comma-separated.
func ClusterURL(nodes []*ServerProcess) string {
	urls := make([]string, len(nodes))
	for i, s := range nodes {
		urls[i] = s.ClientURL()
	}
	return strings.Join(urls, ",")
}

// ClientURL returns the server's client URL (the same across restarts).
func (s *ServerProcess) ClientURL() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.port) }

// Log returns what the server logged so far, over all its runs.
func (s *ServerProcess) Log() string { return s.log.String() }

// Start starts the server process (again, after Kill) on its port and
// store. It does not wait for it to accept connections.
func (s *ServerProcess) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.t.Fatal("bustest: server process already running")
	}
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("bustest: start nats-server: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
}

// Kill kills the server with SIGKILL, as a crash would, and waits until it
// has exited. Killing a server that is not running does nothing.
func (s *ServerProcess) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
	s.cmd = nil
}

// WaitReady waits until the server accepts client connections, failing the
// test after d.
func (s *ServerProcess) WaitReady(d time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.port), 100*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("bustest: nats-server on port %d not ready after %s\n%s", s.port, d, s.log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitJetStream waits until the server accepts connections and JetStream
// answers there, failing the test after d.
func (s *ServerProcess) WaitJetStream(d time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(d)
	s.WaitReady(d)
	nc, err := nats.Connect(s.ClientURL(), nats.Name("bustest-probe"))
	if err != nil {
		s.t.Fatalf("bustest: connect to nats-server: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		s.t.Fatal(err)
	}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("bustest: JetStream of the nats-server on port %d not ready after %s: %v\n%s", s.port, d, err, s.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// FreePorts returns n loopback TCP ports free at the time of the call.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	lns := make([]net.Listener, 0, n)
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}
