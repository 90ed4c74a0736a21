package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/wire"
)

// TestProjection_resumes_and_equals_one_rebuilt_from_zero: the example
// program, built and run as a process against a real server and worker
// between batches of changes (exchanges, clears, clear_messages, forks,
// deletes with and without purge), resumes each time after the last
// change it folded; its table then equals one rebuilt from zero, and
// says what the branches say: each live branch's messages (a fork's own)
// and last activity, no row for a deleted one.
func TestProjection_resumes_and_equals_one_rebuilt_from_zero(t *testing.T) {
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	dir := t.TempDir()
	bin := filepath.Join(dir, "projection")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	url := b.Srv.ClientURL()
	project := func(state string) (from uint64, n int) {
		t.Helper()
		out, err := exec.Command(bin, "--nats", url, "--state", state).CombinedOutput()
		if err != nil {
			t.Fatalf("projection: %v\n%s", err, out)
		}
		if _, err := fmt.Sscanf(string(out), "folded %d changes after seq %d", &n, &from); err != nil {
			t.Fatalf("projection said %q: %v", out, err)
		}
		return from, n
	}
	do := func(verb, branch string, data map[string]any) {
		t.Helper()
		bustest.MustResult(t, b.Do(t, verb, branch, data), nil)
	}
	say := func(branch string, n int, extra map[string]any) {
		for i := range n {
			d := map[string]any{"instruction": fmt.Sprintf("%s %d", branch, i)}
			for k, v := range extra {
				d[k] = v
			}
			do("communicate", branch, d)
		}
	}
	live := filepath.Join(dir, "live.json")
	batches := []func(){
		func() {
			b.CreateBranch(t, "alpha")
			b.CreateBranch(t, "beta")
			say("alpha", 3, nil)
			say("beta", 2, nil)
		},
		func() {
			do("branch.clear", "beta", nil)
			say("beta", 1, nil)
			say("alpha", 1, map[string]any{"clear_messages": true})
			do("branch.fork", "alpha", map[string]any{"branch_id": "alpha-fork"})
			say("alpha-fork", 2, nil)
			b.CreateBranch(t, "gamma")
			say("gamma", 1, nil)
		},
		func() {
			do("branch.delete", "gamma", map[string]any{"by": "test"})
			b.CreateBranch(t, "delta")
			do("branch.delete", "delta", map[string]any{"purge": true})
			say("beta", 2, nil)
		},
	}
	var after uint64
	for i, batch := range batches {
		batch()
		from, n := project(live)
		if from != after || n == 0 {
			t.Fatalf("run %d folded %d changes after seq %d, want it to resume after %d", i, n, from, after)
		}
		table, err := load(live)
		if err != nil {
			t.Fatal(err)
		}
		after = table.After
	}
	if _, n := project(live); n != 0 {
		t.Fatalf("a run with nothing new folded %d changes", n)
	}

	rebuilt := filepath.Join(dir, "rebuilt.json")
	project(rebuilt)
	a, err := load(live)
	if err != nil {
		t.Fatal(err)
	}
	z, err := load(rebuilt)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, z) {
		t.Fatalf("the table built run by run differs from the one rebuilt from zero:\n%+v\n%+v", a, z)
	}

	ctx := bustest.Ctx(t)
	var ids []string
	for id := range a.Branches {
		ids = append(ids, id)
	}
	for _, id := range []string{"gamma", "delta"} {
		if a.Branches[id] != nil {
			t.Fatalf("deleted branch %s has a row", id)
		}
	}
	if a.Deleted != 2 || len(ids) != 3 {
		t.Fatalf("table of %v with %d tombstones", strings.Join(ids, ","), a.Deleted)
	}
	for id, row := range a.Branches {
		got, err := b.Client.BranchGet(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := len(got.Value.Messages)
		if f := got.Value.Fork; f != nil {
			if row.ForkOf != f.BranchID || row.ForkSeq != f.Seq {
				t.Fatalf("%s: fork of %s at %d, the table says %s at %d", id, f.BranchID, f.Seq, row.ForkOf, row.ForkSeq)
			}
			parent, err := b.Client.BranchGetAt(ctx, f.BranchID, wire.BranchGetRequest{AtSeq: f.Seq})
			if err != nil {
				t.Fatal(err)
			}
			want -= len(parent.Value.Messages)
		}
		if row.Messages != want || row.LastSeq != got.Value.Seq || !row.LastActivity.Equal(got.Value.UpdatedAt) {
			t.Fatalf("%s: table %+v; the branch holds %d messages (its own), seq %d, updated %s", id, row, want, got.Value.Seq, got.Value.UpdatedAt)
		}
	}
	if a.Branches["alpha"].Forks != 1 {
		t.Fatalf("alpha's forks: %d", a.Branches["alpha"].Forks)
	}
	_ = os.Remove(bin)
}
