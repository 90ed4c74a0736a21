package bus_test

import (
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/wire"
)

// TestBranchDelete_tombstone_names_the_requests_source: a tombstone
// records the delete request's CloudEvents source, set by the sender's
// client, beside the by and reason of its data (which a sender may leave
// out or set to anything).
func TestBranchDelete_tombstone_names_the_requests_source(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	cases := []struct {
		branch, source, by string
		purge              bool
	}{
		{branch: "d1", source: "/team/audit/alice", by: "bob"},
		{branch: "d2", source: "/ci/cleanup", purge: true},
		{branch: "d3", source: "", by: "carol"}, // the client's default source
	}
	for _, c := range cases {
		cl, err := client.New(b.NC, client.Config{Prefix: b.Cfg.Prefix, Source: c.source})
		if err != nil {
			t.Fatal(err)
		}
		b.CreateBranch(t, c.branch)
		r, err := cl.Do(bustest.Ctx(t), "branch.delete", c.branch, map[string]any{"by": c.by, "purge": c.purge})
		if err != nil {
			t.Fatal(err)
		}
		bustest.MustResult(t, r, nil)
		m, err := b.Res.History.GetLastMsgForSubject(bustest.Ctx(t), b.Res.Subjects.History(c.branch))
		if err != nil {
			t.Fatal(err)
		}
		ch, err := client.DecodeChange(b.Res.Subjects, m.Subject, m.Sequence, m.Data)
		if err != nil {
			t.Fatal(err)
		}
		last := ch.Data
		want := c.source
		if want == "" {
			want = client.DefaultSource
		}
		if last.Type != wire.EventDeleted || last.Tombstone == nil || last.Tombstone.Source != want || last.Tombstone.By != c.by {
			t.Fatalf("%s: last event %s with tombstone %+v, want source %q and by %q", c.branch, last.Type, last.Tombstone, want, c.by)
		}
	}
}
