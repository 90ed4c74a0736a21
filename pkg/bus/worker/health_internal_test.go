package worker

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// A request failure while the connection is down is explained (counted,
// not logged), even when the last health check, a moment before the
// loss, found everything well: a wait cut short by the loss can end
// before the check learns of it (TestRestart_burst_cluster once logged
// "events of the request not stored" so).
func TestHealth_explains_a_failure_while_the_connection_is_down(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(srv.Shutdown)
	down := make(chan struct{})
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(time.Hour),
		nats.DisconnectErrHandler(func(*nats.Conn, error) { close(down) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	h := newHealth(nc, nil, time.Hour, zerolog.Nop())
	h.mu.Lock()
	h.clean = time.Now() // a check found everything well just now
	h.mu.Unlock()
	if h.explain() {
		t.Fatal("a failure with the connection up and a clean check just now was explained")
	}
	srv.Shutdown()
	<-down
	if !h.explain() {
		t.Fatal("a failure with the connection down was not explained")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.quieted != 1 {
		t.Fatalf("%d failures counted, want 1", h.quieted)
	}
}
