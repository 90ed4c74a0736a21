package bustest

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// NewCoreServer starts a nats-server without JetStream on a random
// loopback port, with logging off, shut down when the test ends: for what
// happens before JetStream answers (enable it later with
// server.EnableJetStream). It fails the test if the server cannot start.
func NewCoreServer(t testing.TB) *server.Server {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatalf("bustest: core server: %v", err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("bustest: core server not ready")
	}
	return ns
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers and readers: a
// log or a process's output that a test reads while it is written.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
