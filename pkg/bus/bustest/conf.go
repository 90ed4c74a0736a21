package bustest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// NewConfServer starts a nats-server from the configuration file conf
// (deploy/nats/*.conf) with env set in the environment first (the
// variables the file reads: passwords, NATS_SERVER_NAME), on a random
// loopback port, without monitoring or cluster, with JetStream in a temp
// dir, shut down when the test ends. It sets the environment with
// t.Setenv, so the test may not be parallel.
func NewConfServer(t *testing.T, conf string, env map[string]string) *server.Server {
	t.Helper()
	t.Setenv("NATS_SERVER_NAME", "test")
	t.Setenv("NATS_STORE_DIR", "unused") // replaced below
	for k, v := range env {
		t.Setenv(k, v)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("bustest: %s: %v", conf, err)
	}
	opts.Host, opts.Port = "127.0.0.1", -1
	opts.HTTPHost, opts.HTTPPort = "", 0
	opts.Cluster = server.ClusterOpts{}
	opts.Routes = nil
	opts.StoreDir = t.TempDir()
	opts.NoLog, opts.NoSigs = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("bustest: %s: %v", conf, err)
	}
	s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatalf("bustest: nats-server of %s not ready", conf)
	}
	return s
}
