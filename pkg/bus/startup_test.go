package bus_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
)

// A worker service started against a server whose JetStream is not there
// yet (a cluster still forming) becomes ready and serves once JetStream is
// enabled, well within its startup timeout, even when a JetStream API
// request it sent is never answered: the request gives up after
// provision.RequestTimeout and Start retries provisioning.
func TestStart_waits_for_JetStream_and_retries_an_unanswered_request(t *testing.T) {
	t.Parallel()
	const startupTimeout = 30 * time.Second
	tests := []struct {
		name string
		// blackHole subscribes to $JS.API.> and never answers, so that
		// the API requests sent before JetStream is enabled go unanswered
		// instead of failing at once with no responders.
		blackHole   bool
		enableAfter time.Duration
		// readyWithin bounds how long after its start the service must be
		// ready.
		readyWithin time.Duration
	}{
		{name: "JetStream enabled late", enableAfter: 2 * time.Second, readyWithin: 2*time.Second + 5*time.Second},
		{name: "first API request never answered", blackHole: true, enableAfter: time.Second,
			readyWithin: provision.RequestTimeout + 5*time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := bustest.NewCoreServer(t)
			if tt.blackHole {
				nc, err := nats.Connect(ns.ClientURL())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(nc.Close)
				if _, err := nc.Subscribe("$JS.API.>", func(*nats.Msg) {}); err != nil {
					t.Fatal(err)
				}
				if err := nc.Flush(); err != nil {
					t.Fatal(err)
				}
			}

			logs := &bustest.SyncBuffer{}
			type started struct {
				svc *bus.Service
				err error
			}
			done := make(chan started, 1)
			begin := time.Now()
			go func() {
				svc, err := bus.Start(context.Background(), bus.Config{
					Connect:        client.ConnectConfig{URL: ns.ClientURL(), Name: t.Name()},
					StartupTimeout: startupTimeout,
					Logger:         zerolog.New(logs).Level(zerolog.WarnLevel),
				})
				done <- started{svc, err}
			}()
			time.Sleep(tt.enableAfter)
			if err := ns.EnableJetStream(&server.JetStreamConfig{StoreDir: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			var s started
			select {
			case s = <-done:
			case <-time.After(startupTimeout + 10*time.Second):
				t.Fatal("Start did not return within its startup timeout")
			}
			took := time.Since(begin)
			if s.err != nil {
				t.Fatalf("Start after %s: %v\n%s", took, s.err, logs)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = s.svc.Stop(ctx)
				s.svc.Close()
			})
			retries := strings.Count(logs.String(), "JetStream not ready; retrying")
			t.Logf("ready after %s (JetStream enabled after %s, startup timeout %s), %d provisioning retries",
				took.Round(time.Millisecond), tt.enableAfter, startupTimeout, retries)
			if took > tt.readyWithin {
				t.Errorf("ready after %s, want within %s", took, tt.readyWithin)
			}
			if retries == 0 {
				t.Errorf("no provisioning retry logged:\n%s", logs)
			}
			if tt.blackHole && !strings.Contains(logs.String(), "context deadline exceeded") {
				t.Errorf("the unanswered request is not what was retried:\n%s", logs)
			}

			cl, err := client.New(s.svc.Conn(), client.Config{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r, err := cl.Do(ctx, "branch.create", "", map[string]any{"branch_id": "late", "chat_model": "scripted:echo"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Result(); err != nil {
				t.Fatalf("branch.create answered %v", err)
			}
		})
	}
}
