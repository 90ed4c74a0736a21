package tools_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/tools/toolschema"
)

// statsOf returns the endpoint stats of tool in the answers of service
// name, one per running instance.
func statsOf(all []micro.Stats, name, tool string) []*micro.EndpointStats {
	var out []*micro.EndpointStats
	for _, s := range all {
		if s.Name != name {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Name == tool {
				out = append(out, e)
			}
		}
	}
	return out
}

// GatherStats finds every instance of a service; a lionbus service's
// endpoint data counts the error answers micro does not, with the latest
// error, and the latency of the recent calls.
func TestGatherStats_counts_errors_and_recent_latency(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := tools.ServiceConfig{Compile: toolschema.Compile, Name: "orders", Tools: []tools.Tool{
		{Name: "lookup", Handler: func(_ context.Context, a map[string]any) (any, error) {
			if a["id"] == "missing" {
				return nil, tools.Errorf("not_found", "no order %v", a["id"])
			}
			time.Sleep(2 * time.Millisecond)
			return map[string]any{"ok": true}, nil
		}},
	}}
	b.serve(t, cfg)
	b.serve(t, cfg) // a replica
	inv := b.invoker(t, nil)
	const calls = 8
	for i := range calls {
		id := fmt.Sprint(i)
		if i == calls-1 {
			id = "missing"
		}
		if _, err := inv.Invoke(bustest.Ctx(t), call("lookup", map[string]any{"id": id}, "k/"+fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	// micro and the service count a call once its handler has returned,
	// after the answer went out: the last call can be answered before its
	// instance counts it. Gather until both have counted every call.
	var all []micro.Stats
	bustest.WaitFor(t, 5*time.Second, "the instances to count every call", func() bool {
		var err error
		if all, err = tools.GatherStats(bustest.Ctx(t), b.nc, 0); err != nil {
			t.Fatal(err)
		}
		n, recent := 0, 0
		for _, e := range statsOf(all, "orders", "lookup") {
			n += e.NumRequests
			if d, ok := tools.DecodeEndpointData(e); ok {
				recent += d.Recent
			}
		}
		return n == calls && recent == calls
	})
	eps := statsOf(all, "orders", "lookup")
	if len(eps) != 2 {
		t.Fatalf("%d instances of orders answered STATS, want 2: %+v", len(eps), all)
	}
	var requests, errs, recent int
	var last string
	for _, e := range eps {
		d, ok := tools.DecodeEndpointData(e)
		if !ok {
			t.Fatalf("endpoint %s has no lionbus data: %s", e.Name, e.Data)
		}
		if d.Recent != e.NumRequests || (d.Recent > 0 && (d.P50 <= 0 || d.P95 < d.P50)) {
			t.Fatalf("recent latency %+v over %d requests", d, e.NumRequests)
		}
		requests += e.NumRequests
		errs += d.Errors
		recent += d.Recent
		if d.LastError != "" {
			last = d.LastError
		}
	}
	if requests != calls || recent != calls || errs != 1 || !strings.Contains(last, "not_found: no order missing") {
		t.Fatalf("requests %d, recent %d, errors %d, last %q; want %d, %d, 1 and the not_found", requests, recent, errs, last, calls, calls)
	}
}

// ReadRegistry reads the entries once, sorted, skipping invalid ones, and
// creates no bucket.
func TestReadRegistry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	entries, invalid, err := tools.ReadRegistry(bustest.Ctx(t), b.js, "", 0)
	if err != nil || entries != nil || invalid != 0 {
		t.Fatalf("without a bucket: %v, %d, %v", entries, invalid, err)
	}
	if _, err := b.js.KeyValue(bustest.Ctx(t), "lion_tools"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("ReadRegistry made the bucket: %v", err)
	}
	b.serve(t, tools.ServiceConfig{Name: "svc", Tools: []tools.Tool{
		{Name: "zeta", Handler: func(context.Context, map[string]any) (any, error) { return 1, nil }},
		{Name: "alpha", Handler: func(context.Context, map[string]any) (any, error) { return 1, nil }},
	}})
	kv, err := b.js.KeyValue(bustest.Ctx(t), "lion_tools")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(bustest.Ctx(t), "broken", []byte(`{"name": "other"}`)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		limit   int
		names   string
		invalid int
	}{{0, "alpha,zeta", 1}, {2, "alpha", 1}, {1, "alpha", 0}} {
		entries, invalid, err := tools.ReadRegistry(bustest.Ctx(t), b.js, "", c.limit)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name)
		}
		if strings.Join(names, ",") != c.names || invalid != c.invalid {
			t.Fatalf("limit %d: %v and %d invalid, want %s and %d", c.limit, names, invalid, c.names, c.invalid)
		}
	}
}
