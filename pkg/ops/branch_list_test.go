package ops_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/wire"
)

// TestEngine_branch_list pages the store's branches by id, leaves out a
// deleted one and refuses a request naming a branch or a bad page.
func TestEngine_branch_list(t *testing.T) {
	b := setup(t)
	for _, id := range []string{"c", "a", "d", "b"} {
		b.mustDo(t, "branch.create", "", fmt.Sprintf(`{"branch_id":%q,"chat_model":"scripted:echo"}`, id))
	}
	b.mustDo(t, "communicate", "a", `{"instruction":"hello"}`)
	b.mustDo(t, "branch.delete", "c", ``)

	page := func(data string) wire.BranchPage {
		t.Helper()
		res := b.mustDo(t, "branch.list", "", data)
		if res.BranchID != "" {
			t.Fatalf("branch.list answered branch id %q", res.BranchID)
		}
		var p wire.BranchPage
		if err := json.Unmarshal(res.Value, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ids := func(p wire.BranchPage) string {
		s := ""
		for _, br := range p.Branches {
			s += fmt.Sprintf("%s:%d ", br.ID, br.Events)
		}
		return s
	}

	all := page(`{}`)
	if got := ids(all); got != "a:2 b:1 d:1 " || all.More || all.Next != "d" {
		t.Fatalf("all: %s more=%v next=%q", got, all.More, all.Next)
	}
	for _, br := range all.Branches {
		if br.Updated.IsZero() {
			t.Fatalf("branch %s without its update time", br.ID)
		}
	}
	first := page(`{"limit":2}`)
	if got := ids(first); got != "a:2 b:1 " || !first.More || first.Next != "b" {
		t.Fatalf("first page: %s more=%v next=%q", got, first.More, first.Next)
	}
	second := page(fmt.Sprintf(`{"limit":2,"after":%q}`, first.Next))
	if got := ids(second); got != "d:1 " || second.More || second.Next != "d" {
		t.Fatalf("second page: %s more=%v next=%q", got, second.More, second.Next)
	}
	if got := ids(page(`{"after":""}`)); got != "a:2 b:1 d:1 " {
		t.Fatalf("an empty after: %s, want every branch", got)
	}
	empty := page(`{"after":"d"}`)
	if empty.Branches == nil || len(empty.Branches) != 0 || empty.More || empty.Next != "d" {
		t.Fatalf("past the end: %+v", empty)
	}

	for _, tc := range []struct{ name, branch, data string }{
		{"a branch named", "a", `{}`},
		{"a negative limit", "", `{"limit":-1}`},
		{"an after outside the id rule", "", `{"after":"a.b"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := b.eng.Do(t.Context(), ops.Request{ID: "bad-" + tc.name, Verb: "branch.list", BranchID: tc.branch, Data: json.RawMessage(tc.data)}); code(err) != ops.CodeInvalidRequest {
				t.Fatalf("err %v, want %s", err, ops.CodeInvalidRequest)
			}
		})
	}
}
