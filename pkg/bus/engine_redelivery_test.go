package bus_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

// A branch.create or branch.clone delivered again after it committed (its
// worker died before the answer was stored) answers the branch it created,
// and creates no second one, whether or not the request names the new id.
func TestEngine_redelivered_create_and_clone_answer_the_same_branch(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	_, js, res := b.Conn(t)
	eng := bustest.NewEngine(t, js, res, nil)
	mustCreate := func(req ops.Request) string {
		t.Helper()
		r, err := eng.Do(bustest.Ctx(t), req)
		if err != nil {
			t.Fatalf("%s %s: %v", req.Verb, req.ID, err)
		}
		return r.BranchID
	}
	tests := []struct {
		name string
		req  ops.Request
	}{
		{"create with branch_id", ops.Request{ID: "c-named", Verb: "branch.create",
			Data: json.RawMessage(`{"branch_id":"named","system":"s","chat_model":"scripted:echo"}`)}},
		{"create without branch_id", ops.Request{ID: "c-anon", Verb: "branch.create",
			Data: json.RawMessage(`{"system":"s","chat_model":"scripted:echo"}`)}},
		{"clone without branch_id", ops.Request{ID: "k-anon", Verb: "branch.clone", BranchID: "src",
			Data: json.RawMessage(`{}`)}},
		{"clone with branch_id", ops.Request{ID: "k-named", Verb: "branch.clone", BranchID: "src",
			Data: json.RawMessage(`{"branch_id":"copy"}`)}},
	}
	mustCreate(ops.Request{ID: "c-src", Verb: "branch.create", Data: json.RawMessage(`{"branch_id":"src"}`)})
	for _, tt := range tests {
		first := mustCreate(tt.req)
		again := tt.req
		again.Attempt = 2
		r, err := eng.Do(bustest.Ctx(t), again)
		if err != nil {
			t.Fatalf("%s: redelivery: %v", tt.name, err)
		}
		if r.BranchID != first || !r.Replayed {
			t.Fatalf("%s: redelivery answered branch %q (replayed %v), want %q replayed", tt.name, r.BranchID, r.Replayed, first)
		}
	}
}

// A branch whose history cannot be decoded stays so: a request on it is
// answered at once with an internal error instead of being retried through
// the whole backoff schedule as if the store were unavailable.
func TestEngine_corrupt_history_is_not_retried(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{MaxDeliver: 3})
	_, js, res := b.Conn(t)
	h := countRuns(bustest.NewEngine(t, js, res, nil))
	b.StartWorker(t, nil, h, nil, worker.Config{Backoff: worker.Backoff{10 * time.Millisecond}})
	b.CreateBranch(t, "broken")
	if _, err := b.JS.Publish(bustest.Ctx(t), b.Res.Subjects.History("broken"), []byte("\xc1garbage")); err != nil {
		t.Fatal(err)
	}
	if err := b.Res.Branches.Delete(bustest.Ctx(t), "broken"); err != nil {
		t.Fatal(err)
	}
	id, err := b.Client.Submit(bustest.Ctx(t), "communicate", "broken", map[string]any{"instruction": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if code := bustest.RemoteCode(t, b.Await(t, id)); code != ops.CodeInternal {
		t.Fatalf("code %s, want %s", code, ops.CodeInternal)
	}
	if n := h.ran(id); n != 1 {
		t.Fatalf("request ran %d times, want 1", n)
	}
}
