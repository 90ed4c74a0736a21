package provision_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
)

func TestEnsureWorkers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// before changes the consumer after Ensure ran.
		before      func(t *testing.T, r *provision.Resources)
		wantCreated bool
		wantErr     error
	}{
		{name: "existing consumer is returned", before: func(*testing.T, *provision.Resources) {}},
		{name: "deleted consumer is created again", wantCreated: true, before: func(t *testing.T, r *provision.Resources) {
			if err := r.Ops.DeleteConsumer(bustest.Ctx(t), r.Subjects.WorkersConsumer()); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "conflicting consumer is reported and kept", wantErr: provision.ErrConfigConflict, before: func(t *testing.T, r *provision.Resources) {
			if err := r.Ops.DeleteConsumer(bustest.Ctx(t), r.Subjects.WorkersConsumer()); err != nil {
				t.Fatal(err)
			}
			cfg := r.WorkersConfig()
			cfg.FilterSubject = r.Subjects.Op("only")
			if _, err := r.Ops.CreateConsumer(bustest.Ctx(t), cfg); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, js := bustest.Connect(t, bustest.NewServer(t))
			r := bustest.Provision(t, js, provision.Config{AckWait: 7 * time.Second, MaxDeliver: 3})
			tt.before(t, r)
			c, created, err := r.EnsureWorkers(bustest.Ctx(t))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("EnsureWorkers error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				// Left as it was.
				c, err := r.Ops.Consumer(bustest.Ctx(t), r.Subjects.WorkersConsumer())
				if err != nil || c.CachedInfo().Config.FilterSubject != r.Subjects.Op("only") {
					t.Errorf("the conflicting consumer was changed: %v", err)
				}
				return
			}
			if created != tt.wantCreated {
				t.Errorf("created = %v, want %v", created, tt.wantCreated)
			}
			info, err := c.Info(bustest.Ctx(t))
			if err != nil {
				t.Fatalf("the consumer returned does not exist: %v", err)
			}
			want := r.WorkersConfig()
			got := info.Config
			if got.Durable != want.Durable || got.AckPolicy != want.AckPolicy || got.AckWait != 7*time.Second ||
				got.MaxDeliver != 3 || got.MaxAckPending != want.MaxAckPending || got.FilterSubject != want.FilterSubject {
				t.Errorf("consumer config %+v, want the one provisioning uses, %+v", got, want)
			}
		})
	}
}

// A JetStream API request that is never answered (a subscriber on
// $JS.API.> of a server without JetStream swallows them) fails after
// RequestTimeout, although the caller's context allows far longer.
func TestEnsure_request_timeout_bounds_an_unanswered_request(t *testing.T) {
	t.Parallel()
	ns := bustest.NewCoreServer(t)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	blackHole, err := nc.Subscribe("$JS.API.>", func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*provision.RequestTimeout)
	defer cancel()
	start := time.Now()
	_, err = provision.Ensure(ctx, js, provision.Config{})
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ensure error = %v, want a deadline exceeded", err)
	}
	if took < provision.RequestTimeout || took > provision.RequestTimeout+2*time.Second {
		t.Errorf("Ensure gave up after %s, want about RequestTimeout (%s)", took, provision.RequestTimeout)
	}
	if ctx.Err() != nil {
		t.Error("the caller's context ended: the request was not bounded on its own")
	}
	_ = blackHole.Unsubscribe()
	t.Logf("Ensure gave up after %s on an unanswered request (RequestTimeout %s): %v", took.Round(time.Millisecond), provision.RequestTimeout, err)
}
