package provision_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
)

// Each resource deleted in turn is reported missing (a deleted requests
// stream takes its consumer with it) and created again by Repair with the
// configured settings; nothing else is touched, and afterwards nothing is
// missing.
func TestRepair_creates_each_deleted_resource_again(t *testing.T) {
	t.Parallel()
	_, js := bustest.Connect(t, bustest.NewServer(t))
	cfg := provision.Config{Prefix: "rp", AckWait: 3 * time.Second, ResultsMaxAge: time.Hour, MaxDeliver: 4}
	r := bustest.Provision(t, js, cfg)
	required := r.Required()
	if len(required) != 18 {
		t.Fatalf("%d required resources, want 10 streams, the consumer, 6 buckets and the object store: %v", len(required), required)
	}
	for _, res := range required {
		t.Run(res.String(), func(t *testing.T) {
			bustest.DeleteResource(t, js, res)
			missing, err := r.Missing(bustest.Ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			want := []provision.Resource{res}
			if res.Name == r.Subjects.OpsStream() {
				want = append(want, provision.Resource{Kind: provision.KindConsumer, Name: "workers", Stream: res.Name})
			}
			if !slices.Equal(missing, want) {
				t.Fatalf("missing %v, want %v", missing, want)
			}
			created, err := r.Repair(bustest.Ctx(t), missing, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(created, want) {
				t.Errorf("created %v, want %v", created, want)
			}
			if missing, err := r.Missing(bustest.Ctx(t)); err != nil || len(missing) != 0 {
				t.Fatalf("after Repair: missing %v, %v", missing, err)
			}
			// As configured: Ensure finds no drift.
			again, err := provision.Ensure(bustest.Ctx(t), js, cfg)
			if err != nil || len(again.Drift) != 0 {
				t.Fatalf("Ensure after Repair: %v, drift %q", err, again.Drift)
			}
		})
	}
}

// Several workers repairing the same loss at once create it once between
// them and all succeed.
func TestRepair_concurrent(t *testing.T) {
	t.Parallel()
	srv := bustest.NewServer(t)
	const n = 4
	workers := make([]*provision.Resources, n)
	for i := range workers {
		_, js := bustest.Connect(t, srv)
		workers[i] = bustest.Provision(t, js, provision.Config{})
	}
	_, js := bustest.Connect(t, srv)
	r := workers[0]
	bustest.DeleteResource(t, js, provision.Resource{Kind: provision.KindStream, Name: r.Subjects.OpsStream()})
	bustest.DeleteResource(t, js, provision.Resource{Kind: provision.KindBucket, Name: r.Subjects.BranchesBucket()})
	var mu sync.Mutex
	created := map[provision.Resource]int{}
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() {
			missing, err := w.Missing(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			got, err := w.Repair(context.Background(), missing, time.Time{})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			for _, res := range got {
				created[res]++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(created) != 3 {
		t.Errorf("created %v, want the requests stream, its consumer and the branches bucket", created)
	}
	for res, k := range created {
		if k != 1 {
			t.Errorf("%s created %d times", res, k)
		}
	}
	if missing, err := r.Missing(bustest.Ctx(t)); err != nil || len(missing) != 0 {
		t.Fatalf("after the repairs: missing %v, %v", missing, err)
	}
}

// Missing fails, rather than reporting anything missing, when JetStream
// does not answer.
func TestMissing_when_JetStream_does_not_answer(t *testing.T) {
	t.Parallel()
	srv := bustest.NewServer(t)
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	r := bustest.Provision(t, js, provision.Config{})
	srv.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	missing, err := r.Missing(ctx)
	if err == nil || len(missing) != 0 {
		t.Fatalf("Missing with the server down = %v, %v; want an error and nothing missing", missing, err)
	}
}

// The leases stream is created on file by default, in memory when asked;
// an existing one of the other storage is kept, as drift. Its sequences
// start at a base that says when its grace ends: no grace on a fresh
// server, LeaseGrace after since when Repair creates it again, so that
// every sequence of it is above those of the stream it replaced.
func TestLeases_storage_and_grace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, js := bustest.Connect(t, bustest.NewServer(t))
	r := bustest.Provision(t, js, provision.Config{LeaseTTL: 5 * time.Second})
	info := r.Leases.CachedInfo()
	if info.Config.Storage != jetstream.FileStorage {
		t.Errorf("leases stream storage %v, want file", info.Config.Storage)
	}
	old, err := js.Publish(ctx, r.Subjects.Lease("b"), []byte("w"))
	if err != nil {
		t.Fatal(err)
	}
	if end := provision.LeaseGraceEnd(old.Sequence); end.After(time.Now()) || time.Since(end) > time.Minute {
		t.Errorf("a fresh leases stream's grace ends %v, want at its creation (now)", end)
	}

	res := provision.Resource{Kind: provision.KindStream, Name: r.Subjects.LeasesStream()}
	bustest.DeleteResource(t, js, res)
	since := time.Now().Add(-time.Second)
	if _, err := r.Repair(ctx, []provision.Resource{res}, since); err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(ctx, r.Subjects.Lease("b"), []byte("w"))
	if err != nil {
		t.Fatal(err)
	}
	want := since.Add(provision.LeaseGrace(5 * time.Second)).Truncate(time.Millisecond)
	if end := provision.LeaseGraceEnd(ack.Sequence); !end.Equal(want) {
		t.Errorf("grace of the leases stream created again ends %v, want %v", end, want)
	}
	if ack.Sequence <= old.Sequence {
		t.Errorf("sequence %d of the stream created again is not above %d of the one it replaced", ack.Sequence, old.Sequence)
	}
	if provision.LeaseGrace(5*time.Second) != 4*time.Second {
		t.Errorf("LeaseGrace(5s) = %v", provision.LeaseGrace(5*time.Second))
	}

	// In memory when asked; an existing stream keeps its storage.
	_, js2 := bustest.Connect(t, bustest.NewServer(t))
	mem := bustest.Provision(t, js2, provision.Config{LeaseStorage: provision.LeasesInMemory})
	if s := mem.Leases.CachedInfo().Config.Storage; s != jetstream.MemoryStorage {
		t.Errorf("leases stream storage %v, want memory", s)
	}
	again, err := provision.Ensure(ctx, js2, provision.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Drift) != 1 || !strings.Contains(again.Drift[0], "storage is Memory, configured File") {
		t.Errorf("drift %q, want the leases stream's storage", again.Drift)
	}
	if _, err := (provision.Config{LeaseStorage: "disk"}).WithDefaults(); !errors.Is(err, provision.ErrInvalidConfig) {
		t.Errorf("LeaseStorage disk: %v, want ErrInvalidConfig", err)
	}
}

// Ensure creating the leases stream while the requests stream already held
// requests (workers ran them, and may hold leases of a stream that was
// lost) gives it a grace; on a fresh server it has none.
func TestEnsure_leases_stream_lost_under_served_requests_gets_a_grace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, js := bustest.Connect(t, bustest.NewServer(t))
	r := bustest.Provision(t, js, provision.Config{})
	if _, err := js.Publish(ctx, r.Subjects.Op("op.x"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	bustest.DeleteResource(t, js, provision.Resource{Kind: provision.KindStream, Name: r.Subjects.LeasesStream()})
	start := time.Now()
	if _, err := provision.Ensure(ctx, js, provision.Config{}); err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(ctx, r.Subjects.Lease("b"), nil)
	if err != nil {
		t.Fatal(err)
	}
	end := provision.LeaseGraceEnd(ack.Sequence)
	if end.Before(start.Add(provision.LeaseGrace(provision.DefaultLeaseTTL)).Truncate(time.Millisecond)) || end.After(time.Now().Add(provision.LeaseGrace(provision.DefaultLeaseTTL))) {
		t.Errorf("grace ends %v, want LeaseGrace after the Ensure that created the stream (%v)", end, start)
	}
}
