package pending_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/internal/pending"
)

// TestAcks_waits_share_the_acknowledgements: a JetStream future hands its
// outcome to one reader only, so waits made at the same time take turns;
// each returns once every publish recorded before it is resolved, and a
// failure is returned by one of them only.
func TestAcks_waits_share_the_acknowledgements(t *testing.T) {
	t.Parallel()
	srv := bustest.NewServer(t)
	_, js := bustest.Connect(t, srv)
	ctx := bustest.Ctx(t)
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	if err != nil {
		t.Fatal(err)
	}
	var stored uint64
	tests := []struct {
		name    string
		good    int // publishes to the stream
		bad     int // publishes expecting a stream that does not exist
		waiters int
	}{
		{name: "one wait", good: 20, bad: 1, waiters: 1},
		{name: "waits at the same time", good: 50, bad: 2, waiters: 4},
		{name: "nothing recorded", waiters: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a pending.Acks
			for i := range tt.good + tt.bad {
				var opts []jetstream.PublishOpt
				if i >= tt.good {
					opts = append(opts, jetstream.WithExpectStream("NOT_S"))
				}
				f, err := js.PublishAsync("s."+strings.ReplaceAll(tt.name, " ", "_"), []byte("x"), opts...)
				if err != nil {
					t.Fatal(err)
				}
				a.Add(f, "publish")
			}
			stored += uint64(tt.good)
			errs := make([]error, tt.waiters)
			seen := make([]uint64, tt.waiters) // messages in the stream when each wait returned
			var wg sync.WaitGroup
			for i := range tt.waiters {
				wg.Go(func() {
					errs[i] = a.Wait(ctx)
					if info, err := stream.Info(ctx); err == nil {
						seen[i] = info.State.Msgs
					}
				})
			}
			wg.Wait()
			for i, n := range seen {
				if n != stored {
					t.Errorf("wait %d returned with %d messages stored, want %d", i, n, stored)
				}
			}
			failures := 0
			for _, err := range errs {
				if err != nil {
					failures += len(err.(interface{ Unwrap() []error }).Unwrap())
				}
			}
			if failures != tt.bad {
				t.Fatalf("the waits returned %d failures (%v), want %d", failures, errs, tt.bad)
			}
			if err := a.Wait(ctx); err != nil {
				t.Fatalf("a wait after the others = %v, want nil", err)
			}
		})
	}

}
