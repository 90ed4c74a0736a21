package console_test

import (
	"fmt"
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/console"
)

func TestPages_branch_list_newest_first_search_and_count(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, id := range []string{"alpha-1", "beta-2", "alpha-3"} {
		f.create(t, id, []string{"ok"})
	}
	// alpha-1 gets the newest event.
	f.communicated(t, "gamma-4", "hi", "hello")
	touch(t, f, "alpha-1")

	tests := []struct {
		name, path string
		want       []string // in this order
		absent     []string
	}{
		{"all, newest first", "/branches", []string{"4 branches", `href="/branches/alpha-1"`, `href="/branches/gamma-4"`, `href="/branches/alpha-3"`, `href="/branches/beta-2"`}, nil},
		{"search by id", "/branches?q=alpha", []string{"2 of 4 branches match", "alpha-1", "alpha-3"}, []string{"beta-2", "gamma-4"}},
		{"no match", "/branches?q=zeta", []string{"0 of 4 branches match", "No branches."}, []string{"alpha-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := f.get(t, tt.path)
			if code != http.StatusOK {
				t.Fatalf("status %d: %s", code, body)
			}
			body = html.UnescapeString(body)
			if miss, ok := ordered(body, tt.want...); !ok {
				t.Errorf("missing %q (in order) in:\n%s", miss, body)
			}
			for _, a := range tt.absent {
				if strings.Contains(body, a) {
					t.Errorf("%q shown", a)
				}
			}
		})
	}
}

// touch adds an event to branch (a communicate), after checking its
// page opens.
func touch(t *testing.T, f *fixture, branch string) {
	t.Helper()
	code, _ := f.get(t, "/branches/"+branch)
	if code != http.StatusOK {
		t.Fatalf("branch %s: %d", branch, code)
	}
	f.b.Do(t, "communicate", branch, map[string]any{"instruction": "again"})
}

func TestPages_branch_list_pages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := console.PageSize + 2
	for i := range n {
		f.create(t, fmt.Sprintf("p%03d", i), []string{"ok"})
	}
	_, first := f.get(t, "/branches")
	if got := strings.Count(first, `class="branch-row"`); got != console.PageSize {
		t.Fatalf("first page: %d rows, want %d", got, console.PageSize)
	}
	if !strings.Contains(first, `rel="next"`) || strings.Contains(first, `rel="prev"`) {
		t.Fatalf("first page links wrong")
	}
	_, second := f.get(t, "/branches?page=2")
	if got := strings.Count(second, `class="branch-row"`); got != 2 {
		t.Fatalf("second page: %d rows, want 2", got)
	}
	// The oldest two are on the second page.
	for _, id := range []string{"p000", "p001"} {
		if !strings.Contains(second, id) || strings.Contains(first, ">"+id+"<") {
			t.Errorf("%s not on the second page only", id)
		}
	}
}

func TestPages_branch_timeline(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.communicated(t, "talk", "Say hi to Lyon", "Bonjour Lyon")
	f.operated(t, "work")
	fork(t, f, "talk", "talk-fork")

	tests := []struct {
		name, path string
		status     int
		want       []string
	}{
		{"communicate", "/branches/talk", http.StatusOK, []string{
			"Branch <code>talk</code>", "<dt>Chat model</dt><dd>scripted</dd>", "Not a fork.", "talk-fork",
			"branch.created", "You are terse.", "branch.messages", "instruction", "Say hi to Lyon", "assistant_response", "Bonjour Lyon"}},
		{"operate's tool calls", "/branches/work", http.StatusOK, []string{
			"<code>add</code>", "<code>explode</code>",
			"instruction", "add 20 and 22, then explode",
			"result value", `&#34;answer&#34;: &#34;done&#34;`,
			"action_request", `class="function">add</code>`, `&#34;x&#34;: 20`,
			"action_response", `class="function">add</code>`, `&#34;sum&#34;: 42`}},
		{"fork's parent", "/branches/talk-fork", http.StatusOK, []string{"Fork of:", `class="parent" href="/branches/talk"`}},
		{"unknown branch", "/branches/ghost", http.StatusNotFound, []string{"branch_not_found"}},
		{"bad id", "/branches/a.b", http.StatusBadRequest, []string{"not a branch id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := f.get(t, tt.path)
			if code != tt.status {
				t.Fatalf("status %d, want %d: %s", code, tt.status, body)
			}
			if miss, ok := ordered(body, tt.want...); !ok {
				t.Errorf("missing %q (in order) in:\n%s", miss, body)
			}
		})
	}
	// The failing tool call shows its error.
	_, body := f.get(t, "/branches/work")
	if !strings.Contains(body, "the fuse blew") || !strings.Contains(body, `class="tool-error"`) {
		t.Errorf("the failed call's error is not shown:\n%s", body)
	}
}

// fork forks branch into id.
func fork(t *testing.T, f *fixture, branch, id string) {
	t.Helper()
	f.b.Do(t, "branch.fork", branch, map[string]any{"branch_id": id})
}
