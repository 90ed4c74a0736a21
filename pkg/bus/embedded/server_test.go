package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/nats-io/nats.go"
)

func TestStartServer_temp_store_removed_on_shutdown(t *testing.T) {
	t.Parallel()
	s, err := embedded.Start(context.Background(), embedded.Config{Port: embedded.RandomPort})
	if err != nil {
		t.Fatal(err)
	}
	dir := s.NATSServer().JetStreamConfig().StoreDir
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("store dir %q: %v", dir, err)
	}
	if !strings.HasPrefix(s.ClientURL(), "nats://127.0.0.1:") || strings.HasSuffix(s.ClientURL(), ":4222") {
		t.Errorf("ClientURL = %q, want a random loopback port", s.ClientURL())
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	s.Shutdown()
	s.Shutdown() // idempotent
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary store dir still there after Shutdown: %v", err)
	}
}

func TestStartServer_given_store_is_kept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := embedded.Start(context.Background(), embedded.Config{Port: embedded.RandomPort, StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s.Shutdown()
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("store dir removed: %v", err)
	}
}

// Beyond localhost the embedded server needs authentication; with it,
// clients without the credentials are refused.
func TestStartServer_refuses_to_listen_beyond_localhost_without_auth(t *testing.T) {
	t.Parallel()
	for _, host := range []string{"0.0.0.0", "::", "192.0.2.1"} {
		if s, err := embedded.Start(context.Background(), embedded.Config{Host: host, Port: embedded.RandomPort}); !errors.Is(err, embedded.ErrInsecureListen) {
			if s != nil {
				s.Shutdown()
			}
			t.Errorf("host %s without auth: %v, want ErrInsecureListen", host, err)
		}
	}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		s, err := embedded.Start(context.Background(), embedded.Config{Host: host, Port: embedded.RandomPort})
		if err != nil {
			t.Errorf("loopback host %s: %v", host, err)
			continue
		}
		s.Shutdown()
	}
	s, err := embedded.Start(context.Background(), embedded.Config{Host: "0.0.0.0", Port: embedded.RandomPort, Token: "tok-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	port := s.NATSServer().Addr().(*net.TCPAddr).Port
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	if nc, err := nats.Connect(url); err == nil {
		nc.Close()
		t.Fatal("connected without the token")
	}
	nc, err := nats.Connect(url, nats.Token("tok-1"))
	if err != nil {
		t.Fatalf("with the token: %v", err)
	}
	nc.Close()
}

func TestStartServer_rejects_bad_config(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  embedded.Config
	}{
		{"port", embedded.Config{Port: 70000}},
		{"max payload", embedded.Config{Port: embedded.RandomPort, MaxPayload: -1}},
		{"user without password", embedded.Config{Port: embedded.RandomPort, User: "a"}},
		{"user and token", embedded.Config{Port: embedded.RandomPort, User: "a", Password: "b", Token: "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, err := embedded.Start(context.Background(), tt.cfg); err == nil {
				s.Shutdown()
				t.Errorf("StartServer(%+v) succeeded", tt.cfg)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := embedded.Start(ctx, embedded.Config{Port: embedded.RandomPort}); !errors.Is(err, context.Canceled) {
		t.Errorf("StartServer with cancelled ctx = %v", err)
	}
}
