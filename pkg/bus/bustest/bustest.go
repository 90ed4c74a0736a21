// Package bustest provides helpers for tests that need a real NATS server
// with JetStream: an embedded server on a random port with its store in the
// test's temporary directory, a connection to it, the provisioned lionbus
// resources, and workers started through [bus.Start], the same wiring the
// worker command uses. Everything is shut down by t.Cleanup.
package bustest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/lionbus/lionbus/pkg/bus/provision"
)

// NewServer starts an embedded NATS server with JetStream on a random
// loopback port, storing into t.TempDir(), with logging off. The server is
// shut down when the test ends. It fails the test if the server cannot start.
func NewServer(t testing.TB) *embedded.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := embedded.Start(ctx, embedded.Config{
		Port:     embedded.RandomPort,
		StoreDir: t.TempDir(),
	})
	if err != nil {
		t.Fatalf("bustest: start server: %v", err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// Connect connects to s and returns the connection and a JetStream handle.
// The connection is closed when the test ends.
func Connect(t testing.TB, s *embedded.Server) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL(), nats.Name(t.Name()))
	if err != nil {
		t.Fatalf("bustest: connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("bustest: jetstream: %v", err)
	}
	return nc, js
}

// Provision provisions the lionbus streams, consumer and buckets with cfg
// through js, failing the test on error.
func Provision(t testing.TB, js jetstream.JetStream, cfg provision.Config) *provision.Resources {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := provision.Ensure(ctx, js, cfg)
	if err != nil {
		t.Fatalf("bustest: provision: %v", err)
	}
	return r
}

// DeleteResource deletes the stream, consumer or bucket r, as an operator
// would, failing the test on error.
func DeleteResource(t testing.TB, js jetstream.JetStream, r provision.Resource) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	switch r.Kind {
	case provision.KindStream:
		err = js.DeleteStream(ctx, r.Name)
	case provision.KindConsumer:
		err = js.DeleteConsumer(ctx, r.Stream, r.Name)
	case provision.KindBucket:
		err = js.DeleteKeyValue(ctx, r.Name)
	case provision.KindObjectStore:
		err = js.DeleteObjectStore(ctx, r.Name)
	}
	if err != nil {
		t.Fatalf("bustest: delete %s: %v", r, err)
	}
}
