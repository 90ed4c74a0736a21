package worker

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/lionbus/lionbus/pkg/bus/provision"
)

// BenchmarkLease measures one worker's branch leases on an embedded
// server, with the leases stream on file and in memory: taking a free
// lease and letting it go (what a branch whose requests move between
// workers, or a request without a branch, costs), and renewing one (what
// a long request costs, every fifth of the lease TTL).
func BenchmarkLease(b *testing.B) {
	for _, storage := range []string{provision.LeasesOnFile, provision.LeasesInMemory} {
		b.Run(storage, func(b *testing.B) {
			ctx := context.Background()
			srv, err := embedded.Start(ctx, embedded.Config{Port: embedded.RandomPort, StoreDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Shutdown()
			nc, err := nats.Connect(srv.ClientURL())
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				b.Fatal(err)
			}
			res, err := provision.Ensure(ctx, js, provision.Config{LeaseStorage: storage})
			if err != nil {
				b.Fatal(err)
			}
			l := lanesFor(InOrder, js, res, Config{Name: "bench"}, newHealth(nc, res, DefaultHealthInterval, zerolog.Nop())).leaser
			b.Run("take_and_let_go", func(b *testing.B) {
				for i := range b.N {
					branch := fmt.Sprint("b", i%64)
					seq, _, err := l.acquire(ctx, branch)
					if err != nil {
						b.Fatal(err)
					}
					if !l.release(branch, seq) {
						b.Fatal("release failed")
					}
				}
			})
			b.Run("renew", func(b *testing.B) {
				seq, _, err := l.acquire(ctx, "r")
				if err != nil {
					b.Fatal(err)
				}
				for range b.N {
					if seq, err = l.renew(ctx, "r", seq); err != nil {
						b.Fatal(err)
					}
				}
				l.release("r", seq)
			})
		})
	}
}
