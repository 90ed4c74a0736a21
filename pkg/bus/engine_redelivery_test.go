package bus_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/ops"
)

// A branch.create or branch.clone delivered again after it committed (its
// worker died before the answer was stored) answers the branch it created,
// and creates no second one, whether or not the request names the new id.
func TestEngine_redelivered_create_and_clone_answer_the_same_branch(t *testing.T) {
	t.Parallel()
	b := setupBus(t, bus.Config{})
	_, js, res := b.conn(t)
	eng := newEngine(t, js, res, nil)
	mustCreate := func(req ops.Request) string {
		t.Helper()
		r, err := eng.Do(bg(t), req)
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
		r, err := eng.Do(bg(t), again)
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
	b := setupBus(t, bus.Config{MaxDeliver: 3})
	_, js, res := b.conn(t)
	h := countRuns(newEngine(t, js, res, nil))
	b.startWorker(t, nil, h, nil, bus.WorkerConfig{Backoff: bus.Backoff{10 * time.Millisecond}})
	b.createBranch(t, "broken")
	if _, err := b.js.Publish(bg(t), b.res.Subjects.History("broken"), []byte("\xc1garbage")); err != nil {
		t.Fatal(err)
	}
	if err := b.res.Branches.Delete(bg(t), "broken"); err != nil {
		t.Fatal(err)
	}
	id, err := b.client.Submit(bg(t), "communicate", "broken", map[string]any{"instruction": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if code := remoteCode(t, b.await(t, id)); code != string(ops.CodeInternal) {
		t.Fatalf("code %s, want %s", code, ops.CodeInternal)
	}
	if n := h.ran(id); n != 1 {
		t.Fatalf("request ran %d times, want 1", n)
	}
}
